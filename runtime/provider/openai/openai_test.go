package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/personagen/personagen/internal/golden"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/fixture"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
)

// clearEnv empties the SDK's environment: openai-go has no public option to skip it, and an
// option passed explicitly (base URL, key) wins over the variable anyway.
func clearEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_BASE_URL", "OPENAI_API_KEY", "OPENAI_ADMIN_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID", "OPENAI_WEBHOOK_SECRET", "OPENAI_CUSTOM_HEADERS"} {
		t.Setenv(k, "")
	}
}

func testOptions(srv *strict.Server) []option.RequestOption {
	return []option.RequestOption{option.WithBaseURL(srv.URL + "/v1"), option.WithAPIKey("test-key"), option.WithMaxRetries(0)}
}

func newChat(t *testing.T) (*Chat, *strict.Server) {
	t.Helper()
	clearEnv(t)
	srv := strict.New(t, strict.Chat)
	return NewChat(testOptions(srv)...), srv
}

func newResponses(t *testing.T) (*Responses, *strict.Server) {
	t.Helper()
	clearEnv(t)
	srv := strict.New(t, strict.Responses)
	return NewResponses(testOptions(srv)...), srv
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

const reasoningOut = `{"type":"reasoning","id":"rs_1","status":"completed","summary":[{"type":"summary_text","text":"Look up A-17; check the refund policy."}],"encrypted_content":"gAAAAB-encrypted"}`

// TestReplayedThreadAcceptedFirstTry runs the fixture thread through both OpenAI APIs against
// their strict servers: the first request, then the second after the model's parallel calls
// (with a reasoning item on the Responses API). Every request is accepted on the first try;
// the exact bodies are golden files.
func TestReplayedThreadAcceptedFirstTry(t *testing.T) {
	ctx := context.Background()
	t.Run("chat", func(t *testing.T) {
		m, srv := newChat(t)
		req, err := fixture.Request(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req.Model.Provider = provider.OpenAI
		srv.Queue(strict.Reply{Body: strict.ChatCompletion("chatcmpl-1", "tool_calls", `{"role":"assistant","content":null,"refusal":null,"tool_calls":[`+
			`{"id":"call_a","type":"function","function":{"name":"lookup_order","arguments":"{\"order\":\"A-17\"}"}},`+
			`{"id":"call_b","type":"function","function":{"name":"search_help_center","arguments":"{\"query\":\"damaged delivery refund\"}"}}]}`,
			map[string]any{"prompt_tokens": 900, "completion_tokens": 40, "prompt_tokens_details": map[string]any{"cached_tokens": 300}})})
		r1, err := m.Generate(ctx, req)
		if err != nil {
			t.Fatalf("first call: %v (rejections %q)", err, srv.Rejections())
		}
		if r1.StopReason != chat.StopToolUse || len(r1.Message.ToolCalls) != 2 || r1.ResponseID != "chatcmpl-1" || r1.RequestID != "req_1" ||
			r1.Usage != (chat.Usage{InputTokens: 900, OutputTokens: 40, CacheReadTokens: 300}) {
			t.Fatalf("first response = %+v", r1)
		}
		if !r1.Message.ToolCalls[0].Equal(fixture.Calls[0]) || !r1.Message.ToolCalls[1].Equal(fixture.Calls[1]) {
			t.Errorf("calls = %+v", r1.Message.ToolCalls)
		}
		req.Messages = append(append(req.Messages, r1.Message), fixture.Results()...)
		if _, err := m.Generate(ctx, req); err != nil {
			t.Fatalf("second call: %v (rejections %q)", err, srv.Rejections())
		}
		checkBodies(t, srv, "chat")
	})
	t.Run("responses", func(t *testing.T) {
		m, srv := newResponses(t)
		req, err := fixture.Request(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req.Model.Provider = provider.OpenAIResponses
		req.Model.Extra = map[string]any{"reasoning": map[string]any{"effort": "medium"}}
		srv.Queue(strict.Reply{Body: strict.ResponsesOutput("resp_1", "completed", nil,
			map[string]any{"input_tokens": 900, "output_tokens": 40, "input_tokens_details": map[string]any{"cached_tokens": 300, "cache_write_tokens": 12}},
			reasoningOut,
			`{"type":"function_call","id":"fc_1","call_id":"call_a","name":"lookup_order","arguments":"{\"order\":\"A-17\"}","status":"completed"}`,
			`{"type":"function_call","id":"fc_2","call_id":"call_b","name":"search_help_center","arguments":"{\"query\":\"damaged delivery refund\"}","status":"completed"}`,
		)})
		r1, err := m.Generate(ctx, req)
		if err != nil {
			t.Fatalf("first call: %v (rejections %q)", err, srv.Rejections())
		}
		if r1.StopReason != chat.StopToolUse || len(r1.Message.ToolCalls) != 2 || len(r1.Message.State) != 1 || r1.ResponseID != "resp_1" ||
			r1.Usage != (chat.Usage{InputTokens: 900, OutputTokens: 40, CacheReadTokens: 300, CacheWriteTokens: 12}) {
			t.Fatalf("first response = %+v", r1)
		}
		if got := string(r1.Message.State[0].Data); got != `{"type":"reasoning","summary":[{"type":"summary_text","text":"Look up A-17; check the refund policy."}],"encrypted_content":"gAAAAB-encrypted"}` {
			t.Errorf("state = %s", got)
		}
		req.Messages = append(append(req.Messages, r1.Message), fixture.Results()...)
		if _, err := m.Generate(ctx, req); err != nil {
			t.Fatalf("second call: %v (rejections %q)", err, srv.Rejections())
		}
		checkBodies(t, srv, "responses")
	})
}

func checkBodies(t *testing.T, srv *strict.Server, api string) {
	t.Helper()
	if rej := srv.Rejections(); len(rej) != 0 {
		t.Fatalf("the server refused %d requests: %q", len(rej), rej)
	}
	bodies := srv.Bodies()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	for i, name := range []string{"thread_request_1.json", "thread_request_2.json"} {
		golden.Check(t, filepath.Join("testdata", api, name), indent(t, bodies[i]))
	}
}

func call(id, name, input string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}
}

type ruleCase struct {
	name  string
	msgs  []chat.Message
	tools []chat.ToolDefinition
	model chat.ModelSettings
	check func(t *testing.T, body map[string]any)
	naive string // the body a one-to-one mapping sends
	rule  string
}

var round = []chat.Message{
	chat.UserMessage("Where are A-17 and B-2?"),
	chat.AssistantMessage("", call("t1", "lookup_order", `{"order":"A-17"}`), call("t2", "lookup_order", `{"order":"B-2"}`)),
	chat.ToolMessage("t1", "shipped"),
	chat.ToolErrorMessage("t2", "timeout"),
}

func messagesOf(body map[string]any, key string) []map[string]any {
	var out []map[string]any
	for _, m := range body[key].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// TestChatRulesPositiveAndNegative: each rule's tempting list is accepted from the adapter, and
// the one-to-one body, sent through the same SDK client, is refused with the rule's message.
func TestChatRulesPositiveAndNegative(t *testing.T) {
	tests := []ruleCase{
		{
			name: "tool messages keyed by tool_call_id right after the tool_calls",
			msgs: round,
			check: func(t *testing.T, body map[string]any) {
				msgs := messagesOf(body, "messages")
				if len(msgs) != 4 || msgs[1]["content"] != nil || msgs[2]["tool_call_id"] != "t1" || msgs[3]["tool_call_id"] != "t2" {
					t.Fatalf("messages = %v", msgs)
				}
				if msgs[3]["content"] != "[tool error] timeout" {
					t.Errorf("failed result content = %v", msgs[3]["content"])
				}
			},
			naive: `{"model":"m","messages":[{"role":"user","content":"Where?"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"lookup_order","arguments":"{}"}}]},{"role":"user","content":"next"}]}`,
			rule:  strict.OaMissingToolMsg,
		},
		{
			name:  "no tool message without its call",
			msgs:  round,
			naive: `{"model":"m","messages":[{"role":"user","content":"Where?"},{"role":"tool","tool_call_id":"t1","content":"x"}]}`,
			rule:  strict.OaToolAfterCalls,
		},
		{
			name:  "replayed tool-call turn sends no empty content",
			msgs:  round,
			naive: `{"model":"m","messages":[{"role":"user","content":"Where?"},{"role":"assistant","content":"","tool_calls":[{"id":"t1","type":"function","function":{"name":"lookup_order","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":"x"}]}`,
			rule:  strict.OaBlankText,
		},
		{
			name: "whitespace-only result gets a placeholder",
			msgs: []chat.Message{round[0], round[1], chat.ToolMessage("t1", " \t"), chat.ToolMessage("t2", "")},
			check: func(t *testing.T, body map[string]any) {
				if c := messagesOf(body, "messages")[2]["content"]; c != turns.EmptyResultText {
					t.Errorf("content = %v", c)
				}
			},
			naive: `{"model":"m","messages":[{"role":"user","content":"Where?"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"lookup_order","arguments":"{}"}}]},{"role":"tool","tool_call_id":"t1","content":" \t"}]}`,
			rule:  strict.OaBlankText,
		},
		{
			name:  "an assistant message with neither text nor calls is dropped",
			msgs:  []chat.Message{chat.UserMessage("hi"), chat.AssistantMessage(" "), chat.UserMessage("again")},
			naive: `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant"},{"role":"user","content":"again"}]}`,
			rule:  strict.OaAssistantEmpty,
		},
		{
			name: "consecutive same-role turns merged",
			msgs: []chat.Message{chat.UserMessage("first"), chat.UserMessage("second")},
			check: func(t *testing.T, body map[string]any) {
				if msgs := messagesOf(body, "messages"); len(msgs) != 1 || msgs[0]["content"] != "first\n\nsecond" {
					t.Errorf("messages = %v", msgs)
				}
			},
			naive: `{"model":"m","messages":[{"role":"user","content":"first"},{"role":"user","content":"second"}]}`,
			rule:  strict.OaSameRole,
		},
		{
			name:  "first turn a user turn",
			msgs:  []chat.Message{chat.SystemMessage("Be brief."), chat.AssistantMessage("Earlier reply."), chat.UserMessage("Thanks!")},
			naive: `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"assistant","content":"Earlier reply."},{"role":"user","content":"Thanks!"}]}`,
			rule:  strict.OaFirstUser,
		},
		{
			name: "system message after history keeps its place",
			msgs: []chat.Message{chat.SystemMessage("You are support."), chat.UserMessage("old"), chat.AssistantMessage("reply"), chat.SystemMessage("Today is Tuesday."), chat.UserMessage("new")},
			check: func(t *testing.T, body map[string]any) {
				msgs := messagesOf(body, "messages")
				if len(msgs) != 5 || msgs[3]["role"] != "system" || msgs[3]["content"] != "Today is Tuesday." {
					t.Errorf("messages = %v", msgs)
				}
			},
			naive: `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"user","content":"new"}]}`,
			rule:  strict.OaPartRole,
		},
		{
			name: "images and PDFs sent, other media noted",
			msgs: []chat.Message{partsMessage(chat.RoleUser, chat.TextPart("see"), chat.ImagePart("image/png", fixture.PNG),
				chat.ImagePart("image/svg+xml", []byte("<svg/>")), chat.DocumentPart("inv.pdf", "application/pdf", []byte("%PDF")),
				chat.DocumentPart("n.txt", "text/plain", []byte("x")))},
			check: func(t *testing.T, body map[string]any) {
				parts := messagesOf(body, "messages")[0]["content"].([]any)
				var types []string
				for _, p := range parts {
					types = append(types, p.(map[string]any)["type"].(string))
				}
				if strings.Join(types, ",") != "text,image_url,text,file,text" {
					t.Errorf("part types = %v", types)
				}
				if n := parts[4].(map[string]any)["text"]; n != "[document n.txt (text/plain, 1 bytes) not sent: OpenAI takes PDF documents with data]" {
					t.Errorf("note = %v", n)
				}
			},
			naive: `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/svg+xml;base64,PHN2Zy8+"}}]}]}`,
			rule:  strict.OaImageURL,
		},
		{
			name:  "PDFs carry a filename",
			msgs:  []chat.Message{partsMessage(chat.RoleUser, chat.DocumentPart("", "application/pdf", []byte("%PDF")))},
			naive: `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERg=="}}]}]}`,
			rule:  strict.OaFileData,
		},
		{
			name:  "max_tokens sent as max_completion_tokens",
			msgs:  []chat.Message{chat.UserMessage("hi")},
			model: chat.ModelSettings{MaxTokens: 300},
			check: func(t *testing.T, body map[string]any) {
				if body["max_completion_tokens"] != float64(300) || body["max_tokens"] != nil {
					t.Errorf("body = %v", body)
				}
			},
			naive: `{"model":"m","max_tokens":300,"messages":[{"role":"user","content":"hi"}]}`,
			rule:  strict.OaDeprecated,
		},
		{
			name:  "tools with their schemas",
			msgs:  []chat.Message{chat.UserMessage("hi")},
			tools: fixture.Definitions,
			naive: `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"lookup order","parameters":{"type":"object"}}}]}`,
			rule:  strict.OaToolName,
		},
		{
			name: "invalid arguments go back as produced",
			msgs: []chat.Message{chat.UserMessage("hi"), chat.AssistantMessage("", chat.ToolCallFromArguments("t1", "lookup_order", `{"order": "A-`)), chat.ToolErrorMessage("t1", "invalid arguments")},
			check: func(t *testing.T, body map[string]any) {
				tc := messagesOf(body, "messages")[1]["tool_calls"].([]any)[0].(map[string]any)["function"].(map[string]any)
				if tc["arguments"] != `{"order": "A-` {
					t.Errorf("arguments = %v", tc["arguments"])
				}
			},
			naive: `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"lookup_order","arguments":{"order":"A-17"}}}]},{"role":"tool","tool_call_id":"t1","content":"x"}]}`,
			rule:  "arguments",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, srv := newChat(t)
			runRule(t, tt, srv, m, func(raw string) error {
				var p sdk.ChatCompletionNewParams
				param.SetJSON([]byte(raw), &p)
				_, err := m.client.Chat.Completions.New(context.Background(), p)
				return err
			})
		})
	}
}

func runRule(t *testing.T, tt ruleCase, srv *strict.Server, m chat.Model, naive func(string) error) {
	t.Helper()
	model := tt.model
	model.Name = "gpt-test"
	if _, err := m.Generate(context.Background(), &chat.Request{Model: model, Messages: tt.msgs, Tools: tt.tools}); err != nil {
		t.Fatalf("adapter request refused: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(srv.Bodies()[0], &body); err != nil {
		t.Fatal(err)
	}
	if tt.check != nil {
		tt.check(t, body)
	}
	err := naive(tt.naive)
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, tt.rule) {
		t.Fatalf("naive request: err = %v (%v), want a 400 naming %q", err, apiMessage(err), tt.rule)
	}
}

func apiMessage(err error) string {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		return apiErr.Message
	}
	return ""
}

// TestResponsesRulesPositiveAndNegative is the same for the Responses API.
func TestResponsesRulesPositiveAndNegative(t *testing.T) {
	const head = `"model":"m","store":false,"include":["reasoning.encrypted_content"]`
	tests := []ruleCase{
		{
			name: "function_call and function_call_output items",
			msgs: round,
			check: func(t *testing.T, body map[string]any) {
				items := messagesOf(body, "input")
				var types []string
				for _, it := range items {
					types = append(types, it["type"].(string))
				}
				if strings.Join(types, ",") != "message,function_call,function_call,function_call_output,function_call_output" {
					t.Errorf("item types = %v", types)
				}
				if items[4]["output"] != "[tool error] timeout" || items[1]["id"] != nil {
					t.Errorf("items = %v", items)
				}
			},
			naive: `{` + head + `,"input":[{"role":"user","content":"Where?"},{"type":"function_call","call_id":"t1","name":"lookup_order","arguments":"{}"},{"role":"user","content":"next"}]}`,
			rule:  strict.OaNoOutput,
		},
		{
			name:  "no output without its call",
			msgs:  round,
			naive: `{` + head + `,"input":[{"role":"user","content":"Where?"},{"type":"function_call_output","call_id":"t9","output":"x"}]}`,
			rule:  strict.OaOrphanOutput,
		},
		{
			name: "store false by default",
			msgs: []chat.Message{chat.UserMessage("hi")},
			check: func(t *testing.T, body map[string]any) {
				if body["store"] != false {
					t.Errorf("store = %v", body["store"])
				}
			},
			naive: `{"model":"m","input":[{"role":"user","content":"hi"}]}`,
			rule:  strict.OaStoreFalse,
		},
		{
			name:  "reasoning travels as encrypted content",
			msgs:  []chat.Message{chat.UserMessage("hi")},
			naive: `{"model":"m","store":false,"input":[{"role":"user","content":"hi"}]}`,
			rule:  strict.OaInclude,
		},
		{
			name: "reasoning state goes back without its id, before its items",
			msgs: []chat.Message{chat.UserMessage("hi"),
				{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call("t1", "lookup_order", `{}`)}, State: []chat.ProviderState{
					{Provider: provider.OpenAIResponses, Data: json.RawMessage(`{"type":"reasoning","summary":[],"encrypted_content":"enc"}`)},
					{Provider: provider.Anthropic, Data: json.RawMessage(`{"type":"thinking","thinking":"x","signature":"s"}`)}}},
				chat.ToolMessage("t1", "ok")},
			check: func(t *testing.T, body map[string]any) {
				items := messagesOf(body, "input")
				if len(items) != 4 || items[1]["type"] != "reasoning" || items[1]["id"] != nil || items[2]["type"] != "function_call" {
					t.Errorf("items = %v", items)
				}
			},
			naive: `{` + head + `,"input":[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"enc"},{"type":"function_call","call_id":"t1","name":"lookup_order","arguments":"{}"},{"type":"function_call_output","call_id":"t1","output":"ok"}]}`,
			rule:  strict.OaReasoningID,
		},
		{
			name:  "reasoning state alone is not sent",
			msgs:  []chat.Message{chat.UserMessage("hi"), {Role: chat.RoleAssistant, State: []chat.ProviderState{{Provider: provider.OpenAIResponses, Data: json.RawMessage(`{"type":"reasoning","summary":[],"encrypted_content":"enc"}`)}}}, chat.UserMessage("again")},
			naive: `{` + head + `,"input":[{"role":"user","content":"hi"},{"type":"reasoning","summary":[],"encrypted_content":"enc"},{"role":"user","content":"again"}]}`,
			rule:  strict.OaReasoningNext,
		},
		{
			name: "whitespace-only result gets a placeholder",
			msgs: []chat.Message{round[0], round[1], chat.ToolMessage("t1", "\n"), chat.ToolMessage("t2", "")},
			check: func(t *testing.T, body map[string]any) {
				if o := messagesOf(body, "input")[3]["output"]; o != turns.EmptyResultText {
					t.Errorf("output = %v", o)
				}
			},
			naive: `{` + head + `,"input":[{"role":"user","content":"Where?"},{"type":"function_call","call_id":"t1","name":"lookup_order","arguments":"{}"},{"type":"function_call_output","call_id":"t1","output":"\n"}]}`,
			rule:  strict.OaBlankText,
		},
		{
			name:  "consecutive same-role turns merged",
			msgs:  []chat.Message{chat.UserMessage("first"), chat.UserMessage("second")},
			naive: `{` + head + `,"input":[{"role":"user","content":"first"},{"role":"user","content":"second"}]}`,
			rule:  strict.OaSameRole,
		},
		{
			name:  "first turn a user turn",
			msgs:  []chat.Message{chat.AssistantMessage("Earlier reply."), chat.UserMessage("Thanks!")},
			naive: `{` + head + `,"input":[{"role":"assistant","content":"Earlier reply."},{"role":"user","content":"Thanks!"}]}`,
			rule:  strict.OaFirstUser,
		},
		{
			name: "system message after history keeps its place",
			msgs: []chat.Message{chat.UserMessage("old"), chat.AssistantMessage("reply"), chat.SystemMessage("Today is Tuesday."), chat.UserMessage("new")},
			check: func(t *testing.T, body map[string]any) {
				if items := messagesOf(body, "input"); len(items) != 4 || items[2]["role"] != "system" {
					t.Errorf("items = %v", items)
				}
			},
			naive: `{` + head + `,"input":[{"role":"system","content":[{"type":"input_image","image_url":"data:image/png;base64,AA==","detail":"auto"}]},{"role":"user","content":"new"}]}`,
			rule:  strict.OaPartRole,
		},
		{
			name: "images and PDFs sent, also in results; other media noted",
			msgs: []chat.Message{partsMessage(chat.RoleUser, chat.ImagePart("image/webp", fixture.PNG), chat.DocumentPart("a.pdf", "application/pdf", []byte("%PDF")), chat.ImagePart("image/tiff", []byte{1})),
				chat.AssistantMessage("", call("t1", "lookup_order", `{}`)),
				{Role: chat.RoleTool, ToolCallID: "t1", IsError: true, Parts: []chat.Part{chat.TextPart("photo"), chat.ImagePart("image/png", fixture.PNG)}}},
			check: func(t *testing.T, body map[string]any) {
				items := messagesOf(body, "input")
				if n := len(items[0]["content"].([]any)); n != 3 {
					t.Errorf("user parts = %d", n)
				}
				out := items[2]["output"].([]any)
				if len(out) != 3 || out[0].(map[string]any)["text"] != "[tool error]" || out[2].(map[string]any)["type"] != "input_image" {
					t.Errorf("output = %v", out)
				}
			},
			naive: `{` + head + `,"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/tiff;base64,AQ==","detail":"auto"}]}]}`,
			rule:  strict.OaImageURL,
		},
		{
			name:  "max_tokens sent as max_output_tokens; no stop sequences",
			msgs:  []chat.Message{chat.UserMessage("hi")},
			model: chat.ModelSettings{MaxTokens: 300},
			check: func(t *testing.T, body map[string]any) {
				if body["max_output_tokens"] != float64(300) {
					t.Errorf("body = %v", body)
				}
			},
			naive: `{` + head + `,"stop":["END"],"input":[{"role":"user","content":"hi"}]}`,
			rule:  "no stop sequences",
		},
		{
			name:  "tools with their schemas",
			msgs:  []chat.Message{chat.UserMessage("hi")},
			tools: fixture.Definitions,
			naive: `{` + head + `,"input":[{"role":"user","content":"hi"}],"tools":[{"type":"function","name":"lookup_order","strict":false,"parameters":{"properties":{}}}]}`,
			rule:  strict.OaToolSchema,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, srv := newResponses(t)
			runRule(t, tt, srv, m, func(raw string) error {
				var p responses.ResponseNewParams
				param.SetJSON([]byte(raw), &p)
				_, err := m.client.Responses.New(context.Background(), p)
				return err
			})
		})
	}
}

func TestSettingsRefusedBeforeAnyRequest(t *testing.T) {
	m, srv := newResponses(t)
	req := &chat.Request{Model: chat.ModelSettings{Name: "gpt-test", Stop: []string{"END"}}, Messages: []chat.Message{chat.UserMessage("hi")}}
	_, err := m.Generate(context.Background(), req)
	if se := provider.SettingErrors(err); len(se) != 1 || se[0].Setting != "stop" || err.Error() != provider.CheckSettings(provider.OpenAIResponses, req.Model).Error() {
		t.Fatalf("err = %v", err)
	}
	c, csrv := newChat(t)
	req.Model.Stop = []string{"a", "b", "c", "d", "e"}
	if _, err := c.Generate(context.Background(), req); len(provider.SettingErrors(err)) != 1 {
		t.Fatalf("chat: err = %v", err)
	}
	req.Model.Stop, req.Model.Provider = nil, provider.Anthropic
	if _, err := c.Generate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "written for provider anthropic") {
		t.Errorf("err = %v", err)
	}
	req.Model.Provider, req.Model.Name = "", ""
	if _, err := c.Generate(context.Background(), req); err == nil || !strings.Contains(err.Error(), "no model name") {
		t.Errorf("err = %v", err)
	}
	req.Model.Name = "gpt-test"
	req.Tools = []chat.ToolDefinition{{Name: "bad", InputSchema: json.RawMessage(`[]`)}}
	if _, err := m.Generate(context.Background(), req); !errors.Is(err, turns.ErrSchema) {
		t.Errorf("err = %v", err)
	}
	if n := len(srv.Bodies()) + len(csrv.Bodies()); n != 0 {
		t.Errorf("%d requests reached a server", n)
	}
}

func TestStandardEnvironmentWorksUnchanged(t *testing.T) {
	clearEnv(t)
	for _, api := range []strict.API{strict.Chat, strict.Responses} {
		srv := strict.New(t, api)
		t.Setenv("OPENAI_BASE_URL", srv.URL+"/v1") // the base URL ends in /v1
		t.Setenv("OPENAI_API_KEY", "env-key")
		var m chat.Model = NewChat(option.WithMaxRetries(0))
		if api == strict.Responses {
			m = NewResponses(option.WithMaxRetries(0))
		}
		r, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "gpt-test"}, Messages: []chat.Message{chat.UserMessage("hi")}})
		if err != nil || r.Message.Text != "OK." {
			t.Fatalf("api %d: got %+v, %v (rejections %q)", api, r, err, srv.Rejections())
		}
	}
}

func TestChatResponseMapping(t *testing.T) {
	tests := []struct {
		name, body string
		check      func(t *testing.T, r *chat.Response)
	}{
		{"length", strict.ChatCompletion("c1", "length", `{"role":"assistant","content":"cut","refusal":null}`, nil), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopMaxTokens || r.Message.Text != "cut" {
				t.Errorf("%+v", r)
			}
		}},
		{"refusal", strict.ChatCompletion("c1", "stop", `{"role":"assistant","content":null,"refusal":"I can't help with that."}`, nil), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopRefusal || r.Refusal != "I can't help with that." {
				t.Errorf("%+v", r)
			}
		}},
		{"content filter", strict.ChatCompletion("c1", "content_filter", `{"role":"assistant","content":null,"refusal":null}`, nil), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopRefusal {
				t.Errorf("%+v", r)
			}
		}},
		{"null finish reason accepted", strings.Replace(strict.ChatCompletion("c1", "", `{"role":"assistant","content":"OK."}`, nil), `"finish_reason":""`, `"finish_reason":null`, 1), func(t *testing.T, r *chat.Response) {
			if r.StopReason != "" || r.Message.Text != "OK." {
				t.Errorf("%+v", r)
			}
		}},
		{"tool calls with finish reason stop", strict.ChatCompletion("c1", "stop", `{"role":"assistant","content":null,"tool_calls":[{"id":"x","type":"function","function":{"name":"lookup_order","arguments":"{}"}}]}`, nil), func(t *testing.T, r *chat.Response) {
			if len(r.Message.ToolCalls) != 1 {
				t.Errorf("%+v", r)
			}
		}},
		{"invalid arguments kept and flagged", strict.ChatCompletion("c1", "tool_calls", `{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"x","type":"function","function":{"name":"lookup_order","arguments":"{\"order\": \"A-"}}]}`, nil), func(t *testing.T, r *chat.Response) {
			if raw, ok := r.Message.ToolCalls[0].InvalidArguments(); !ok || raw != `{"order": "A-` || r.StopReason != chat.StopToolUse {
				t.Errorf("%+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, srv := newChat(t)
			srv.Queue(strict.Reply{Body: tt.body})
			r, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "g"}, Messages: []chat.Message{chat.UserMessage("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
	m, srv := newChat(t)
	srv.Queue(strict.Reply{Body: `{"id":"c1","object":"chat.completion","created":1,"model":"g","choices":[]}`})
	if _, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "g"}, Messages: []chat.Message{chat.UserMessage("hi")}}); err == nil {
		t.Error("a completion without choices must be an error")
	}
}

func TestResponsesResponseMapping(t *testing.T) {
	msg := func(parts string) string {
		return `{"type":"message","id":"m","role":"assistant","status":"completed","content":[` + parts + `]}`
	}
	tests := []struct {
		name, body string
		check      func(t *testing.T, r *chat.Response)
	}{
		{"text", strict.ResponsesOutput("r1", "completed", nil, nil, msg(`{"type":"output_text","text":"a","annotations":[]},{"type":"output_text","text":"b","annotations":[]}`)), func(t *testing.T, r *chat.Response) {
			if r.Message.Text != "ab" || r.StopReason != chat.StopEndTurn {
				t.Errorf("%+v", r)
			}
		}},
		{"max output tokens", strict.ResponsesOutput("r1", "incomplete", map[string]string{"reason": "max_output_tokens"}, nil, msg(`{"type":"output_text","text":"cut","annotations":[]}`)), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopMaxTokens {
				t.Errorf("%+v", r)
			}
		}},
		{"content filter", strict.ResponsesOutput("r1", "incomplete", map[string]string{"reason": "content_filter"}, nil), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopRefusal {
				t.Errorf("%+v", r)
			}
		}},
		{"refusal", strict.ResponsesOutput("r1", "completed", nil, nil, msg(`{"type":"refusal","refusal":"No."}`)), func(t *testing.T, r *chat.Response) {
			if r.StopReason != chat.StopRefusal || r.Refusal != "No." {
				t.Errorf("%+v", r)
			}
		}},
		{"server tool items left out, reasoning kept", strict.ResponsesOutput("r1", "completed", nil, nil,
			`{"type":"reasoning","id":"rs","summary":[],"encrypted_content":"ZW5j"}`,
			`{"type":"web_search_call","id":"ws","status":"completed","action":{"type":"search","query":"x"}}`,
			msg(`{"type":"output_text","text":"Found nothing.","annotations":[]}`)), func(t *testing.T, r *chat.Response) {
			if r.Message.Text != "Found nothing." || len(r.Message.State) != 1 || len(r.Message.ToolCalls) != 0 || r.StopReason != chat.StopEndTurn {
				t.Errorf("%+v", r)
			}
		}},
		{"an item of a type newer than the SDK left out beside a message", strict.ResponsesOutput("r1", "completed", nil, nil,
			`{"type":"brand_new","id":"x"}`, msg(`{"type":"output_text","text":"Here.","annotations":[]}`)), func(t *testing.T, r *chat.Response) {
			if r.Message.Text != "Here." || len(r.Message.State) != 0 || len(r.Message.ToolCalls) != 0 || r.StopReason != chat.StopEndTurn {
				t.Errorf("%+v", r)
			}
		}},
		{"invalid arguments kept and flagged", strict.ResponsesOutput("r1", "completed", nil, nil, `{"type":"function_call","id":"fc","call_id":"c9","name":"lookup_order","arguments":"[1]","status":"completed"}`), func(t *testing.T, r *chat.Response) {
			if raw, ok := r.Message.ToolCalls[0].InvalidArguments(); !ok || raw != "[1]" || r.Message.ToolCalls[0].ID != "c9" {
				t.Errorf("%+v", r)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, srv := newResponses(t)
			srv.Queue(strict.Reply{Body: tt.body})
			r, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "g"}, Messages: []chat.Message{chat.UserMessage("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
}

func TestContextWindowRefusalIsRecognisable(t *testing.T) {
	req := &chat.Request{Model: chat.ModelSettings{Name: "g"}, Messages: []chat.Message{chat.UserMessage("hi")}}
	tooLong := strict.Reply{Status: 400, Body: string(strict.ErrorBody(strict.Chat, "invalid_request_error", "context_length_exceeded",
		"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens."))}
	other := strict.Reply{Status: 400, Body: string(strict.ErrorBody(strict.Chat, "invalid_request_error", "invalid_value", "bad"))}
	c, csrv := newChat(t)
	r, rsrv := newResponses(t)
	for _, tc := range []struct {
		m   chat.Model
		srv *strict.Server
	}{{c, csrv}, {r, rsrv}} {
		tc.srv.Queue(tooLong, other)
		_, err := tc.m.Generate(context.Background(), req)
		var apiErr *sdk.Error
		if !errors.Is(err, chat.ErrContextWindow) || !errors.As(err, &apiErr) || !strings.Contains(err.Error(), "maximum context length") {
			t.Errorf("err = %v, want ErrContextWindow with the SDK error and the API's message", err)
		}
		if _, err := tc.m.Generate(context.Background(), req); err == nil || errors.Is(err, chat.ErrContextWindow) || !strings.Contains(err.Error(), "invalid_value: bad") {
			t.Errorf("another 400: err = %v", err)
		}
	}
	rsrv.Queue(strict.Reply{Body: `{"id":"r9","object":"response","created_at":1,"status":"failed","model":"g","output":[],"error":{"code":"context_length_exceeded","message":"too long"}}`})
	if _, err := r.Generate(context.Background(), req); !errors.Is(err, chat.ErrContextWindow) {
		t.Errorf("failed response: err = %v", err)
	}
}

// TestFailedResponseSaysWhatItKnows holds that a failed response is a CallError of status 200
// whose text shows the response's id, code and message when present ("no error detail" when the
// API sent none), transient for the codes that say nothing about the request.
func TestFailedResponseSaysWhatItKnows(t *testing.T) {
	for _, tc := range []struct {
		body, want string
		transient  bool
	}{
		{`{"object":"response","status":"failed","output":[]}`, "openai-responses: status 200 (permanent): response failed (no error detail)", false},
		{`{"id":"r1","object":"response","status":"failed","output":[],"error":null}`, "openai-responses: status 200 (permanent): response r1 failed (no error detail)", false},
		{`{"id":"r1","object":"response","status":"failed","output":[],"error":{"code":"server_error","message":""}}`, "openai-responses: status 200 (transient): response r1 failed (server_error)", true},
		{`{"id":"r1","object":"response","status":"failed","output":[],"error":{"message":"boom"}}`, "openai-responses: status 200 (permanent): response r1 failed (boom)", false},
		{`{"id":"r1","object":"response","status":"failed","output":[],"error":{"code":"rate_limit_exceeded","message":"slow down"}}`, "openai-responses: status 200 (transient): response r1 failed (rate_limit_exceeded: slow down)", true},
		{`{"id":"r1","object":"response","status":"failed","output":[],"error":{"code":"invalid_image","message":"bad"}}`, "openai-responses: status 200 (permanent): response r1 failed (invalid_image: bad)", false},
	} {
		m, srv := newResponses(t)
		srv.Queue(strict.Reply{Body: tc.body})
		_, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "g"}, Messages: []chat.Message{chat.UserMessage("hi")}})
		var ce *chat.CallError
		if !errors.As(err, &ce) || err.Error() != tc.want || errors.Is(err, provider.ErrMalformedResponse) ||
			ce.StatusCode != 200 || ce.Transient != tc.transient || ce.Provider != provider.OpenAIResponses {
			t.Errorf("%s: err = %v, want %q", tc.body, err, tc.want)
		}
	}
	// The exported mapping names the API in its prefix.
	var r responses.Response
	if err := json.Unmarshal([]byte(`{"id":"r1","object":"response","status":"failed","output":[],"error":{"code":"server_error","message":"boom"}}`), &r); err != nil {
		t.Fatal(err)
	}
	if _, err := ResponsesResponse(&r); err == nil || err.Error() != "openai responses: response r1 failed (server_error: boom)" {
		t.Errorf("ResponsesResponse: err = %v", err)
	}
}

// FuzzChatParams and FuzzResponsesParams hold the conversions' promise: any message list that
// passes chat.Validate converts to a request the strict server accepts.
func FuzzChatParams(f *testing.F) {
	fixture.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fixture.CheckConversion(t, data, "gpt-test", "ChatParams", func(r *chat.Request) (any, error) { return ChatParams(r) }, strict.CheckChat)
	})
}

func FuzzResponsesParams(f *testing.F) {
	fixture.AddSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		fixture.CheckConversion(t, data, "gpt-test", "ResponsesParams", func(r *chat.Request) (any, error) { return ResponsesParams(r) }, strict.CheckResponses)
	})
}

func partsMessage(role chat.Role, parts ...chat.Part) chat.Message {
	return chat.Message{Role: role, Parts: parts}
}
