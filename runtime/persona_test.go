package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

type fakeTool struct{ name string }

func (t fakeTool) Name() string                 { return t.name }
func (t fakeTool) Description() string          { return "Fetches " + t.name }
func (t fakeTool) InputSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (t fakeTool) Idempotent() bool             { return true }
func (t fakeTool) Call(ctx context.Context, inv *Invocation, input json.RawMessage) (string, error) {
	return t.name, nil
}

func testPersona() *Persona {
	temp := 0.2
	return &Persona{
		Name:        "support-agent",
		Description: "Answers customer email.",
		Model:       chat.ModelSettings{Name: "claude-sonnet-4-5", MaxTokens: 4096, Temperature: &temp, Stop: []string{"END"}, Extra: map[string]any{"b": 1, "a": true}},
		Tools:       []Tool{fakeTool{"web_fetch"}, fakeTool{"lookup_order"}},
		MessageChain: NewChain(
			Step{Kind: "load_text", Resolver: &LoadText{Text: "You answer email."}},
			Step{Kind: "load_text", Resolver: &LoadText{TextFunc: func(inv *Invocation) (string, error) {
				return "Subject: " + inv.Inbound.Subject, nil
			}}},
		),
		ResponsibilityChain: NewChain(
			Step{Kind: "load_text", Resolver: &LoadText{TextFunc: func(inv *Invocation) (string, error) {
				return "Run " + inv.Responsibility.Name, nil
			}, Role: chat.RoleUser}},
		),
		Responsibilities: []Responsibility{{Name: "daily-digest", Schedule: "0 8 * * *", Timezone: "Europe/Berlin", Enabled: true}},
	}
}

func TestBuildRequest(t *testing.T) {
	p := testPersona()
	pdf := history.Attachment{ID: "att-1", Filename: "invoice.pdf", ContentType: "application/pdf", Size: 8, Data: []byte("%PDF-1.7")}
	png := history.Attachment{ID: "att-2", Filename: "shot.png", ContentType: "image/png", Size: 4, Data: []byte{0x89, 'P', 'N', 'G'}}
	meta := history.Attachment{ID: "att-3", Filename: "big.zip", ContentType: "application/zip", Size: 123456}
	chainOut := []chat.Message{chat.SystemMessage("You answer email."), chat.SystemMessage("Subject: Order")}
	tests := []struct {
		name string
		in   *history.Message
		want chat.Message
	}{
		{"text body", &history.Message{Subject: "Order", Text: "Where is my order?", HTML: "<p>ignored</p>"},
			chat.UserMessage("Where is my order?")},
		{"HTML-only body", &history.Message{Subject: "Order", HTML: "<html><body><p>Where is <b>my</b> order?</p><p>Thanks &amp; bye</p><script>x()</script></body></html>"},
			chat.UserMessage("Where is my order?\n\nThanks & bye")},
		{"empty body says the subject", &history.Message{Subject: "Order"}, chat.UserMessage("Subject: Order")},
		{"attachments become parts", &history.Message{Subject: "Order", Text: "See attached.", Attachments: []history.Attachment{pdf, png, meta}},
			partsMessage(chat.RoleUser,
				chat.TextPart("See attached."),
				chat.DocumentPart("invoice.pdf", "application/pdf", []byte("%PDF-1.7")),
				chat.ImagePart("image/png", []byte{0x89, 'P', 'N', 'G'}),
				chat.TextPart("[attachment: big.zip (application/zip, 123456 bytes, id att-3)]"),
			)},
		{"attachment only", &history.Message{Subject: "Order", Attachments: []history.Attachment{png}},
			partsMessage(chat.RoleUser, chat.ImagePart("image/png", []byte{0x89, 'P', 'N', 'G'}))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := BuildRequest(context.Background(), &Invocation{Persona: p, Inbound: tt.in})
			if err != nil {
				t.Fatal(err)
			}
			want := append(append([]chat.Message(nil), chainOut...), tt.want)
			if !equalMessages(req.Messages, want) {
				t.Errorf("messages:\n got %+v\nwant %+v", req.Messages, want)
			}
			if len(req.Tools) != 2 || req.Tools[0].Name != "web_fetch" || req.Tools[1].Name != "lookup_order" {
				t.Errorf("tools = %v", req.Tools)
			}
			if req.Model.Name != "claude-sonnet-4-5" || req.Model.MaxTokens != 4096 || *req.Model.Temperature != 0.2 || req.Model.Stop[0] != "END" {
				t.Errorf("model = %+v", req.Model)
			}
		})
	}
}

func TestBuildRequestScheduledRunHasNoTrailingMessage(t *testing.T) {
	resp, _ := testPersona().Responsibility("daily-digest")
	req, err := BuildRequest(context.Background(), &Invocation{Persona: testPersona(), Responsibility: &resp})
	if err != nil {
		t.Fatal(err)
	}
	if want := []chat.Message{chat.UserMessage("Run daily-digest")}; !equalMessages(req.Messages, want) {
		t.Errorf("got %+v, want %+v", req.Messages, want)
	}
	if len(req.Tools) != 2 {
		t.Errorf("tools = %v", req.Tools)
	}
}

func TestBuildRequestRejectsMalformedInvocations(t *testing.T) {
	p := testPersona()
	tests := []struct {
		name string
		inv  *Invocation
		want string
	}{
		{"nil invocation", nil, "invalid invocation: no persona"},
		{"no persona", &Invocation{Inbound: &history.Message{}}, "invalid invocation: no persona"},
		{"neither", &Invocation{Persona: p}, "invalid invocation: set exactly one of Inbound (a reply run) and Responsibility (a scheduled run)"},
		{"both", &Invocation{Persona: p, Inbound: &history.Message{}, Responsibility: &Responsibility{}}, "invalid invocation: set exactly one of Inbound (a reply run) and Responsibility (a scheduled run)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := BuildRequest(context.Background(), tt.inv)
			if req != nil || !errors.Is(err, ErrInvocation) || err.Error() != tt.want {
				t.Errorf("got %v, %v; want %s", req, err, tt.want)
			}
		})
	}
}

func TestBuildRequestReturnsTheStepError(t *testing.T) {
	p := testPersona()
	p.MessageChain = NewChain(Step{Kind: "load_file", Pos: "x.persona.yaml:9:5", Resolver: &LoadFile{Path: "none.md", Files: FSFiles(fstest.MapFS{})}})
	_, err := BuildRequest(context.Background(), &Invocation{Persona: p, Inbound: &history.Message{Text: "hi"}})
	var nf *FileNotFoundError
	var se *StepError
	if !errors.As(err, &nf) || !errors.As(err, &se) || se.Index != 0 {
		t.Fatalf("err = %v", err)
	}
	if want := `resolver #1 (load_file at x.persona.yaml:9:5): file not found: "none.md" (resolved to fs:none.md)`; err.Error() != want {
		t.Errorf("err = %q\nwant  %q", err, want)
	}
}

func TestBuildRequestIntoReusesTheBuffer(t *testing.T) {
	p := testPersona()
	buf := make([]chat.Message, 0, 16)
	req, err := buildRequestInto(context.Background(), &Invocation{Persona: p, Inbound: &history.Message{Subject: "Order", Text: "hi"}}, buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 3 || &req.Messages[0] != &buf[:1][0] {
		t.Errorf("messages were not built in the given buffer")
	}
}

func TestRequestJSON(t *testing.T) {
	req, err := BuildRequest(context.Background(), &Invocation{Persona: testPersona(), Inbound: &history.Message{Subject: "Order", Text: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(req, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "request.json", append(b, '\n'))
}

func TestFormatDateIsUTC(t *testing.T) {
	d := time.Date(2025, 3, 4, 9, 5, 6, 0, time.FixedZone("CET", 3600))
	if got := FormatDate(d); got != "Tue, 04 Mar 2025 08:05:06 +0000" {
		t.Errorf("FormatDate = %q", got)
	}
}

func TestPersonaResponsibility(t *testing.T) {
	p := testPersona()
	if r, ok := p.Responsibility("daily-digest"); !ok || r.Schedule != "0 8 * * *" {
		t.Errorf("got %+v %v", r, ok)
	}
	if _, ok := p.Responsibility("nope"); ok {
		t.Error("unknown responsibility found")
	}
}

// benchPersona is a persona whose reply chain assembles 59 messages: a system prompt file from
// an fs.FS, a computed text, one record, and 56 history-like messages (user and assistant
// turns with tool rounds) from a ResolverFunc appending prepared messages. The inbound message
// makes the 60th.
func benchPersona(tb testing.TB) (*Persona, *Invocation) {
	files := FSFiles(fstest.MapFS{"prompts/system.md": {Data: []byte(strings.Repeat("You are a careful support agent.\n", 40))}})
	var replayed []chat.Message
	for len(replayed) < 56 {
		n := len(replayed)
		replayed = append(replayed,
			chat.UserMessage(fmt.Sprintf("From: ada@example.com\nSubject: order %d\n\nWhere is order %d?", n, n)),
			chat.AssistantMessage("", mustCall(tb, fmt.Sprint("c", n), "lookup_order", map[string]any{"order": n})),
			chat.ToolMessage(fmt.Sprint("c", n), `{"status":"shipped"}`),
			chat.AssistantMessage(fmt.Sprintf("Order %d has shipped.", n)),
		)
	}
	type acct struct{ Email, Plan string }
	p := &Persona{
		Name:  "support-agent",
		Model: chat.ModelSettings{Name: "m", MaxTokens: 1024},
		Tools: []Tool{fakeTool{"lookup_order"}},
		MessageChain: NewChain(
			Step{Kind: "load_file", Pos: "b.yaml:1:1", Resolver: &LoadFile{Path: "prompts/system.md", Files: files}},
			Step{Kind: "load_text", Pos: "b.yaml:2:1", Resolver: &LoadText{TextFunc: func(inv *Invocation) (string, error) {
				return inv.Persona.Name, nil
			}}},
			Step{Kind: "load_record", Pos: "b.yaml:3:1", Resolver: NewLoadRecord("", func(context.Context, *Invocation) ([]acct, error) {
				return []acct{{"ada@example.com", "gold"}}, nil
			}, Method(func(a acct) string { return a.Email }))},
			Step{Kind: "use", Pos: "b.yaml:4:1", Resolver: ResolverFunc(func(_ context.Context, _ *Invocation, dst []chat.Message) ([]chat.Message, error) {
				return append(dst, replayed...), nil
			})},
		),
	}
	inv := &Invocation{Persona: p, Inbound: &history.Message{ThreadID: "t1", MessageID: "m1", From: "ada@example.com", Subject: "again", Text: "Any news?"}}
	return p, inv
}

func TestBenchPersonaBuilds60ValidMessages(t *testing.T) {
	_, inv := benchPersona(t)
	req, err := BuildRequest(context.Background(), inv)
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != 60 {
		t.Fatalf("%d messages, want 60", len(req.Messages))
	}
	if err := chat.Validate(req.Messages); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkBuildRequest60(b *testing.B) {
	_, inv := benchPersona(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req, err := BuildRequest(ctx, inv)
		if err != nil || len(req.Messages) != 60 {
			b.Fatal(err)
		}
	}
}

func TestInboundMessageNeverEmpty(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   history.Message
		want chat.Message
	}{
		{"text body", history.Message{Text: "Hello", Subject: "Hi"}, chat.UserMessage("Hello")},
		{"html only", history.Message{HTML: "<p>Hello <b>there</b></p>"}, chat.UserMessage("Hello there")},
		{"blank text falls back to html", history.Message{Text: " \n", HTML: "<p>From HTML</p>"}, chat.UserMessage("From HTML")},
		{"subject only", history.Message{Text: "  ", Subject: " Call me back "}, chat.UserMessage("Subject: Call me back")},
		{"nothing at all", history.Message{}, chat.UserMessage(emptyInboundText)},
		{"attachment only keeps no text part", history.Message{Subject: "scan", Attachments: []history.Attachment{{ID: "a1", Filename: "x.pdf", ContentType: "application/pdf", Size: 3}}},
			partsMessage(chat.RoleUser, chat.TextPart("[attachment: x.pdf (application/pdf, 3 bytes, id a1)]"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := inboundMessage(&tc.in); !got.Equal(tc.want) {
				t.Errorf("inboundMessage = %#v, want %#v", got, tc.want)
			}
		})
	}
}
