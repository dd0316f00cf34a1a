package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/personagen/personagen/internal/golden"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/fixture"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
)

var _ = flag.Bool // golden's -update flag is registered by internal/golden

// testOptions are the client options every test uses: no environment, the strict server, no
// retries.
func testOptions(srv *strict.Server) []option.RequestOption {
	return []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(srv.URL),
		option.WithAPIKey("test-key"),
		option.WithMaxRetries(0),
	}
}

func newModel(t *testing.T) (*Model, *strict.Server) {
	t.Helper()
	srv := strict.New(t, strict.Anthropic)
	return New(testOptions(srv)...), srv
}

// thinking is the state block the model returns with its calls in the wire test.
const thinkingBlock = `{"type":"thinking","thinking":"Look up A-17 and the refund policy.","signature":"c2lnbmF0dXJlLTE="}`

// TestReplayedThreadAcceptedFirstTry runs the fixture thread through the SDK against the
// strict server: the first request (compaction summary, replayed rounds with a whitespace-only
// and a failed result, a system message after the history, an image attachment) and, after
// the model's parallel calls with a thinking block, the second (the thinking block back, the
// results batched, a whitespace-only one among them). Both are accepted on the first try, and
// their exact bodies are the golden files.
func TestReplayedThreadAcceptedFirstTry(t *testing.T) {
	m, srv := newModel(t)
	ctx := context.Background()
	req, err := fixture.Request(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req.Model.Provider = provider.Anthropic
	req.Model.Extra = map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 512}}
	srv.Queue(strict.Reply{Body: strict.AnthropicMessage("msg_1", "tool_use",
		map[string]int64{"input_tokens": 900, "output_tokens": 60, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20},
		thinkingBlock,
		`{"type":"text","text":"Let me check."}`,
		`{"type":"tool_use","id":"call_a","name":"lookup_order","input":{"order":"A-17"}}`,
		`{"type":"tool_use","id":"call_b","name":"search_help_center","input":{"query":"damaged delivery refund"}}`,
	)})
	r1, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatalf("first call: %v (rejections %q)", err, srv.Rejections())
	}
	if r1.StopReason != chat.StopToolUse || len(r1.Message.ToolCalls) != 2 || r1.Message.Text != "Let me check." ||
		len(r1.Message.State) != 1 || r1.ResponseID != "msg_1" || r1.RequestID != "req_1" {
		t.Fatalf("first response = %+v", r1)
	}
	if want := (chat.Usage{InputTokens: 1020, OutputTokens: 60, CacheReadTokens: 100, CacheWriteTokens: 20}); r1.Usage != want {
		t.Errorf("usage = %+v, want %+v", r1.Usage, want)
	}
	if !r1.Message.ToolCalls[0].Equal(fixture.Calls[0]) || !r1.Message.ToolCalls[1].Equal(fixture.Calls[1]) {
		t.Errorf("calls = %+v", r1.Message.ToolCalls)
	}
	req.Messages = append(req.Messages, r1.Message)
	req.Messages = append(req.Messages, fixture.Results()...)
	r2, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatalf("second call: %v (rejections %q)", err, srv.Rejections())
	}
	if r2.Message.Text != "OK." || r2.StopReason != chat.StopEndTurn {
		t.Errorf("second response = %+v", r2)
	}
	if rej := srv.Rejections(); len(rej) != 0 {
		t.Fatalf("the server refused %d requests: %q", len(rej), rej)
	}
	bodies := srv.Bodies()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	for i, name := range []string{"thread_request_1.json", "thread_request_2.json"} {
		golden.Check(t, filepath.Join("testdata", name), indent(t, bodies[i]))
	}
}

func indent(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func call(id, name, input string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}
}

// TestRulesPositiveAndNegative pins each wire rule twice: the adapter's request for a message
// list that tempts the rule is accepted by the strict server, and the request a one-to-one
// mapping would send for it — sent through the same SDK client — is refused with the rule's
// message, which proves the server enforces it.
func TestRulesPositiveAndNegative(t *testing.T) {
	round := []chat.Message{
		chat.UserMessage("Where are A-17 and B-2?"),
		chat.AssistantMessage("", call("t1", "lookup_order", `{"order":"A-17"}`), call("t2", "lookup_order", `{"order":"B-2"}`)),
		chat.ToolMessage("t1", "shipped"),
		chat.ToolMessage("t2", "delayed"),
	}
	tests := []struct {
		name  string
		msgs  []chat.Message
		tools []chat.ToolDefinition
		check func(t *testing.T, body map[string]any)
		naive string // the body a one-to-one mapping sends
		rule  string
	}{
		{
			name:  "replayed tool-call turn has no blank text block",
			msgs:  round,
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Where?"},{"role":"assistant","content":[{"type":"text","text":""},{"type":"tool_use","id":"t1","name":"lookup_order","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}]}`,
			rule:  strict.AnBlankText,
		},
		{
			name: "results of a round batched in one user message",
			msgs: round,
			check: func(t *testing.T, body map[string]any) {
				msgs := body["messages"].([]any)
				if n := len(msgs); n != 3 {
					t.Fatalf("%d messages, want 3 (user, assistant, user with both results)", n)
				}
				if blocks := msgs[2].(map[string]any)["content"].([]any); len(blocks) != 2 {
					t.Errorf("results message has %d blocks, want 2", len(blocks))
				}
			},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Where?"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"lookup_order","input":{}},{"type":"tool_use","id":"t2","name":"lookup_order","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"b"}]}]}`,
			rule:  strict.AnMissingResults,
		},
		{
			name: "results first when a user message follows the round",
			msgs: append(append([]chat.Message{}, round...), chat.UserMessage("Also, cancel B-2.")),
			check: func(t *testing.T, body map[string]any) {
				msgs := body["messages"].([]any)
				blocks := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
				if len(blocks) != 3 || blocks[0].(map[string]any)["type"] != "tool_result" || blocks[2].(map[string]any)["type"] != "text" {
					t.Errorf("last message blocks = %v, want two tool_results then the text", blocks)
				}
			},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Where?"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"lookup_order","input":{}}]},{"role":"user","content":[{"type":"text","text":"Also"},{"type":"tool_result","tool_use_id":"t1","content":"a"}]}]}`,
			rule:  strict.AnResultsFirst,
		},
		{
			name:  "whitespace-only tool result gets a placeholder",
			msgs:  []chat.Message{round[0], round[1], chat.ToolMessage("t1", " \n "), chat.ToolMessage("t2", "")},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Where?"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"lookup_order","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":" \n "}]}]}]}`,
			rule:  strict.AnBlankText,
		},
		{
			name:  "consecutive same-role turns merged",
			msgs:  []chat.Message{chat.UserMessage("first"), chat.UserMessage("second"), chat.AssistantMessage("a"), chat.AssistantMessage("b"), chat.UserMessage("third")},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"first"},{"role":"user","content":"second"}]}`,
			rule:  strict.AnSameRole,
		},
		{
			name:  "first turn a user turn",
			msgs:  []chat.Message{chat.SystemMessage("Be brief."), chat.AssistantMessage("Earlier reply."), chat.UserMessage("Thanks!")},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"Earlier reply."},{"role":"user","content":"Thanks!"}]}`,
			rule:  strict.AnFirstUser,
		},
		{
			name:  "a chain of only system prompts still has a user turn",
			msgs:  []chat.Message{chat.SystemMessage("Summarise yesterday's tickets.")},
			naive: `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"Summarise."}],"messages":[]}`,
			rule:  strict.AnNoMessages,
		},
		{
			name:  "blank message dropped, not sent empty",
			msgs:  []chat.Message{chat.UserMessage("hi"), chat.AssistantMessage("  "), partsMessage(chat.RoleUser, chat.TextPart(""), chat.TextPart("\t"))},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[]}]}`,
			rule:  strict.AnEmptyContent,
		},
		{
			name: "system message after history stays in place as a system message",
			msgs: []chat.Message{chat.SystemMessage("You are support."), chat.UserMessage("old"), chat.AssistantMessage("reply"),
				chat.SystemMessage("Today is Tuesday."), partsMessage(chat.RoleSystem, chat.ImagePart("image/png", fixture.PNG)), chat.UserMessage("new")},
			check: func(t *testing.T, body map[string]any) {
				msgs := body["messages"].([]any)
				if len(msgs) != 4 || msgs[2].(map[string]any)["role"] != "system" {
					t.Fatalf("messages = %v, want user, assistant, system, user", msgs)
				}
				blocks := msgs[2].(map[string]any)["content"].([]any)
				if len(blocks) != 2 || !strings.HasPrefix(blocks[1].(map[string]any)["text"].(string), "[image (image/png, 68 bytes) not sent: a system prompt carries text only]") {
					t.Errorf("system blocks = %v", blocks)
				}
				if sys := body["system"].([]any); len(sys) != 1 {
					t.Errorf("top-level system = %v", sys)
				}
			},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"new"},{"role":"system","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]}`,
			rule:  strict.AnSystemText,
		},
		{
			name: "images of accepted types sent, others noted",
			msgs: []chat.Message{partsMessage(chat.RoleUser, chat.TextPart("see"), chat.ImagePart("image/png", fixture.PNG),
				chat.ImagePart("image/svg+xml", []byte("<svg/>")), chat.ImagePart("image/jpeg", nil))},
			check: func(t *testing.T, body map[string]any) {
				blocks := body["messages"].([]any)[0].(map[string]any)["content"].([]any)
				types := []string{}
				for _, b := range blocks {
					types = append(types, b.(map[string]any)["type"].(string))
				}
				if strings.Join(types, ",") != "text,image,text,text" {
					t.Errorf("block types = %v", types)
				}
				if note := blocks[2].(map[string]any)["text"]; note != "[image (image/svg+xml, 6 bytes) not sent: the Anthropic Messages API takes JPEG, PNG, GIF and WebP images with data]" {
					t.Errorf("note = %q", note)
				}
			},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/svg+xml","data":"PHN2Zy8+"}}]}]}`,
			rule:  strict.AnImageType,
		},
		{
			name: "PDF and plain-text documents sent, others noted",
			msgs: []chat.Message{partsMessage(chat.RoleUser, chat.DocumentPart("inv.pdf", "application/pdf", []byte("%PDF-1.7")),
				chat.DocumentPart("notes.txt", "text/plain; charset=utf-8", []byte("a note")), chat.DocumentPart("c.docx", "application/msword", []byte("x")))},
			check: func(t *testing.T, body map[string]any) {
				blocks := body["messages"].([]any)[0].(map[string]any)["content"].([]any)
				if len(blocks) != 3 || blocks[0].(map[string]any)["type"] != "document" || blocks[1].(map[string]any)["type"] != "document" ||
					blocks[2].(map[string]any)["text"] != "[document c.docx (application/msword, 1 bytes) not sent: the Anthropic Messages API takes PDF and plain-text documents with data]" {
					t.Errorf("blocks = %v", blocks)
				}
			},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/msword","data":"eA=="}}]}]}`,
			rule:  strict.AnDocumentType,
		},
		{
			name: "tool result with an image and a failed flag",
			msgs: []chat.Message{round[0], chat.AssistantMessage("", call("t1", "lookup_order", `{}`)),
				{Role: chat.RoleTool, ToolCallID: "t1", IsError: true, Parts: []chat.Part{chat.TextPart("camera offline"), chat.ImagePart("image/png", fixture.PNG)}}},
			check: func(t *testing.T, body map[string]any) {
				msgs := body["messages"].([]any)
				res := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
				if res["is_error"] != true || len(res["content"].([]any)) != 2 {
					t.Errorf("tool_result = %v", res)
				}
			},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Where?"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"lookup_order","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"},{"type":"tool_result","tool_use_id":"t9","content":"b"}]}]}`,
			rule:  strict.AnUnexpectedID,
		},
		{
			name:  "tool input schema sent as an object schema",
			msgs:  []chat.Message{chat.UserMessage("hi")},
			tools: fixture.Definitions,
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"lookup_order","input_schema":{"properties":{}}}]}`,
			rule:  strict.AnToolSchema,
		},
		{
			name: "invalid arguments go back as an object",
			msgs: []chat.Message{chat.UserMessage("hi"), chat.AssistantMessage("", chat.ToolCallFromArguments("t1", "lookup_order", `{"order": "A-`)), chat.ToolErrorMessage("t1", "invalid arguments")},
			check: func(t *testing.T, body map[string]any) {
				in := body["messages"].([]any)[1].(map[string]any)["content"].([]any)[0].(map[string]any)["input"]
				if in.(map[string]any)["_invalid_arguments"] != `{"order": "A-` {
					t.Errorf("input = %v", in)
				}
			},
			naive: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"lookup_order","input":"{\"order\": \"A-"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`,
			rule:  "input must be a JSON object",
		},
		{
			name:  "no sampling parameters on the wire",
			msgs:  []chat.Message{chat.UserMessage("hi")},
			naive: `{"model":"m","max_tokens":10,"temperature":0.2,"messages":[{"role":"user","content":"hi"}]}`,
			rule:  `unknown field "temperature"`,
		},
		{
			name: "max_tokens always sent",
			msgs: []chat.Message{chat.UserMessage("hi")},
			check: func(t *testing.T, body map[string]any) {
				if body["max_tokens"] != float64(DefaultMaxTokens) {
					t.Errorf("max_tokens = %v, want the default %d", body["max_tokens"], DefaultMaxTokens)
				}
			},
			naive: `{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
			rule:  strict.AnNoMaxTokens,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, srv := newModel(t)
			req := &chat.Request{Model: chat.ModelSettings{Name: "claude-test"}, Messages: tt.msgs, Tools: tt.tools}
			if tt.name == "max_tokens always sent" {
				req.Model.MaxTokens = 0
			} else {
				req.Model.MaxTokens = 100
			}
			if _, err := m.Generate(context.Background(), req); err != nil {
				t.Fatalf("adapter request refused: %v", err)
			}
			var body map[string]any
			if err := json.Unmarshal(srv.Bodies()[0], &body); err != nil {
				t.Fatal(err)
			}
			if tt.check != nil {
				tt.check(t, body)
			}
			// The negative: the naive body through the same SDK client.
			var p sdk.MessageNewParams
			param.SetJSON([]byte(tt.naive), &p)
			_, err := m.client.Messages.New(context.Background(), p)
			var apiErr *sdk.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, tt.rule) {
				t.Fatalf("naive request: err = %v, want a 400 naming %q", err, tt.rule)
			}
		})
	}
}

func TestSettingsRefusedBeforeAnyRequest(t *testing.T) {
	m, srv := newModel(t)
	temp := 0.2
	req := &chat.Request{Model: chat.ModelSettings{Name: "claude-test", Temperature: &temp, TopP: &temp}, Messages: []chat.Message{chat.UserMessage("hi")}}
	_, err := m.Generate(context.Background(), req)
	se := provider.SettingErrors(err)
	if len(se) != 2 || se[0].Setting != "temperature" || se[1].Setting != "top_p" {
		t.Fatalf("err = %v, want the temperature and top_p setting errors", err)
	}
	// The same message validate prints at the spec line.
	if want := provider.CheckSettings(provider.Anthropic, req.Model).Error(); err.Error() != want {
		t.Errorf("err = %q\nwant  %q", err, want)
	}
	req.Model.Temperature, req.Model.TopP, req.Model.Provider = nil, nil, provider.OpenAI
	if _, err := m.Generate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "written for provider openai") {
		t.Errorf("settings of another provider: err = %v", err)
	}
	req.Model.Provider, req.Model.Name = "", ""
	if _, err := m.Generate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "no model name") {
		t.Errorf("no model name: err = %v", err)
	}
	req.Model.Name = "claude-test"
	req.Messages = []chat.Message{chat.ToolMessage("x", "orphan")}
	var pe *chat.PairingError
	if _, err := m.Generate(context.Background(), req); !errors.As(err, &pe) {
		t.Errorf("invalid messages: err = %v", err)
	}
	req.Messages = []chat.Message{chat.UserMessage("hi")}
	req.Tools = []chat.ToolDefinition{{Name: "bad", InputSchema: json.RawMessage(`{"properties":{}}`)}}
	if _, err := m.Generate(context.Background(), req); !errors.Is(err, turns.ErrSchema) {
		t.Errorf("bad schema: err = %v", err)
	}
	if n := len(srv.Bodies()); n != 0 {
		t.Errorf("%d requests reached the server; refused settings must stop before any", n)
	}
}

func TestStandardEnvironmentWorksUnchanged(t *testing.T) {
	srv := strict.New(t, strict.Anthropic)
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL) // the SDK appends v1/messages
	t.Setenv("ANTHROPIC_API_KEY", "env-key")
	m := New(option.WithMaxRetries(0))
	r, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "claude-test"}, Messages: []chat.Message{chat.UserMessage("hi")}})
	if err != nil || r.Message.Text != "OK." {
		t.Fatalf("got %+v, %v (rejections %q)", r, err, srv.Rejections())
	}
}

// The SDK's own span of a call is off by default (the runner emits the chat span), and on when
// the host asks for it.
func TestSDKSpansOffUnlessAsked(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	defer otel.SetTracerProvider(prev)
	req := &chat.Request{Model: chat.ModelSettings{Name: "claude-test"}, Messages: []chat.Message{chat.UserMessage("hi")}}
	for _, tc := range []struct {
		opts  []option.RequestOption
		spans int
	}{{nil, 0}, {[]option.RequestOption{option.WithOpenTelemetryTraces(true)}, 1}} {
		srv := strict.New(t, strict.Anthropic)
		before := len(rec.Ended())
		if _, err := New(append(testOptions(srv), tc.opts...)...).Generate(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		if n := len(rec.Ended()) - before; n != tc.spans {
			t.Errorf("options %d: %d SDK spans, want %d", len(tc.opts), n, tc.spans)
		}
	}
}

func TestResponseMapping(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, r *chat.Response)
	}{
		{"max tokens", strict.AnthropicMessage("m1", "max_tokens", nil, `{"type":"text","text":"cut"}`), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopMaxTokens || r.Message.Text != "cut" {
				t.Errorf("%+v", r)
			}
		}},
		{"stop sequence", strict.AnthropicMessage("m1", "stop_sequence", nil, `{"type":"text","text":"a"}`), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopSequence {
				t.Errorf("%+v", r)
			}
		}},
		{"pause turn", strict.AnthropicMessage("m1", "pause_turn", nil), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopPause || r.Message.Text != "" || len(r.Message.ToolCalls) != 0 {
				t.Errorf("%+v", r)
			}
		}},
		{"context window", strict.AnthropicMessage("m1", "model_context_window_exceeded", nil, `{"type":"text","text":"partial"}`), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopContextWindow {
				t.Errorf("%+v", r)
			}
		}},
		{"refusal", `{"id":"m1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":"refusal","stop_details":{"type":"refusal","category":"cyber","explanation":"I can't help with that."},"usage":{"input_tokens":1,"output_tokens":0}}`, func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopRefusal || r.Refusal != "I can't help with that." {
				t.Errorf("%+v", r)
			}
		}},
		{"unknown stop reason passes through", strict.AnthropicMessage("m1", "brand_new", nil), func(t *testing.T, r *chat.Response) {
			if r.StopReason != "brand_new" {
				t.Errorf("%+v", r)
			}
		}},
		{"input that is not an object is kept and flagged", strict.AnthropicMessage("m1", "tool_use", nil, `{"type":"tool_use","id":"t1","name":"lookup_order","input":"A-17"}`), func(t *testing.T, r *chat.Response) {
			raw, ok := r.Message.ToolCalls[0].InvalidArguments()
			if !ok || raw != `"A-17"` {
				t.Errorf("calls = %+v", r.Message.ToolCalls)
			}
		}},
		{"server tool blocks left out", strict.AnthropicMessage("m1", "end_turn", nil,
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}`,
			`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}`,
			`{"type":"text","text":"Found nothing."}`), func(t *testing.T, r *chat.Response) {
			if r.Message.Text != "Found nothing." || len(r.Message.ToolCalls) != 0 || len(r.Message.State) != 0 || r.StopReason != chat.StopEndTurn {
				t.Errorf("%+v", r)
			}
		}},
		{"a block of a type newer than the SDK left out beside text", strict.AnthropicMessage("m1", "end_turn", nil,
			`{"type":"brand_new","data":"x"}`, `{"type":"text","text":"Here."}`), func(t *testing.T, r *chat.Response) {
			if r.Message.Text != "Here." || len(r.Message.ToolCalls) != 0 || len(r.Message.State) != 0 || r.StopReason != chat.StopEndTurn {
				t.Errorf("%+v", r)
			}
		}},
		{"pause turn after a server tool call", strict.AnthropicMessage("m1", "pause_turn", nil,
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}`), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopPause || len(r.Message.ToolCalls) != 0 {
				t.Errorf("%+v", r)
			}
		}},
		{"thinking kept as state beside a tool call", strict.AnthropicMessage("m1", "tool_use", nil,
			`{"type":"thinking","thinking":"look it up","signature":"c2ln"}`,
			`{"type":"tool_use","id":"toolu_1","name":"lookup_order","input":{}}`), func(t *testing.T, r *chat.Response) {
			if len(r.Message.State) != 1 || len(r.Message.ToolCalls) != 1 || r.StopReason != chat.StopToolUse {
				t.Errorf("%+v", r)
			}
		}},
		{"redacted thinking kept as state, text blocks joined", strict.AnthropicMessage("m1", "end_turn", nil, `{"type":"redacted_thinking","data":"ZW5j"}`, `{"type":"text","text":"a"}`, `{"type":"text","text":"b"}`), func(t *testing.T, r *chat.Response) {
			if r.Message.Text != "ab" || len(r.Message.State) != 1 || string(r.Message.State[0].Data) != `{"type":"redacted_thinking","data":"ZW5j"}` || r.Message.State[0].Provider != provider.Anthropic {
				t.Errorf("%+v", r.Message)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, srv := newModel(t)
			srv.Queue(strict.Reply{Body: tt.body})
			r, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "c"}, Messages: []chat.Message{chat.UserMessage("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
}

func TestContextWindowRefusalIsRecognisable(t *testing.T) {
	m, srv := newModel(t)
	srv.Queue(strict.Reply{Status: 400, Body: string(strict.ErrorBody(strict.Anthropic, "invalid_request_error", "", "prompt is too long: 250123 tokens > 200000 maximum"))})
	_, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "c"}, Messages: []chat.Message{chat.UserMessage("hi")}})
	var apiErr *sdk.Error
	if !errors.Is(err, chat.ErrContextWindow) || !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want ErrContextWindow with the SDK error", err)
	}
	srv.Queue(strict.Reply{Status: 400, Body: string(strict.ErrorBody(strict.Anthropic, "invalid_request_error", "", "messages: roles must alternate"))})
	_, err = m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "c"}, Messages: []chat.Message{chat.UserMessage("hi")}})
	if err == nil || errors.Is(err, chat.ErrContextWindow) {
		t.Fatalf("another 400: err = %v, must not be ErrContextWindow", err)
	}
}

// FuzzParams holds the conversion's promise: any message list that passes chat.Validate
// converts to a request the strict server accepts.
func FuzzParams(f *testing.F) {
	fixture.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fixture.CheckConversion(t, data, "claude-test", "Params", func(r *chat.Request) (any, error) { return Params(r) }, strict.CheckAnthropic)
	})
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

func partsMessage(role chat.Role, parts ...chat.Part) chat.Message {
	return chat.Message{Role: role, Parts: parts}
}
