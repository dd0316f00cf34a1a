package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime"
)

func call(id string) runtime.ToolCall {
	return runtime.ToolCall{ID: id, Name: "f", Input: json.RawMessage(`{}`)}
}

// show renders turns compactly: one "kind[parts|calls|state|results]" per turn.
func show(ts []Turn) string {
	var out []string
	for _, t := range ts {
		var b strings.Builder
		b.WriteString([]string{"S", "U", "A", "R"}[t.Kind])
		for _, p := range t.Parts {
			if p.Type == runtime.PartText {
				fmt.Fprintf(&b, " %q", p.Text)
			} else {
				fmt.Fprintf(&b, " <%s>", p.Type)
			}
		}
		for _, c := range t.Calls {
			b.WriteString(" call:" + c.ID)
		}
		for _, s := range t.State {
			b.WriteString(" state:" + s.Provider)
		}
		for _, r := range t.Results {
			fmt.Fprintf(&b, " result:%s=%q", r.CallID, r.Parts[0].Text)
			if r.IsError {
				b.WriteString("!")
			}
		}
		out = append(out, b.String())
	}
	return strings.Join(out, " | ")
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name string
		msgs []runtime.Message
		want string
	}{
		{"empty list gets a user turn", nil, `U "[start of conversation]"`},
		{"only system prompts get a user turn after them", []runtime.Message{runtime.SystemMessage("a"), runtime.SystemMessage("b")},
			`S "a" "b" | U "[start of conversation]"`},
		{"assistant first gets a user turn before it", []runtime.Message{runtime.SystemMessage("s"), runtime.AssistantMessage("earlier"), runtime.UserMessage("now")},
			`S "s" | U "[start of conversation]" | A "earlier" | U "now"`},
		{"user first is left alone", []runtime.Message{runtime.UserMessage("hi")}, `U "hi"`},
		{"blank text dropped, blank messages dropped", []runtime.Message{runtime.UserMessage("hi"), runtime.AssistantMessage(" \n"),
			partsMessage(runtime.RoleUser, runtime.TextPart("\u00a0"), runtime.TextPart("x"), runtime.ImagePart("image/png", nil))},
			`U "hi" "x" <image>`},
		{"same roles merged across a dropped blank turn", []runtime.Message{runtime.UserMessage("a"), runtime.AssistantMessage(""), runtime.UserMessage("b")},
			`U "a" "b"`},
		{"replayed round: no text, calls kept, results batched in order with placeholders",
			[]runtime.Message{runtime.UserMessage("q"), runtime.AssistantMessage("", call("1"), call("2")),
				runtime.ToolMessage("2", "two"), runtime.ToolMessage("1", " \t"), runtime.UserMessage("next")},
			`U "q" | A call:1 call:2 | R result:2="two" result:1="[the tool returned no output]" | U "next"`},
		{"assistant text then calls merge into one turn", []runtime.Message{runtime.UserMessage("q"), runtime.AssistantMessage("let me look"),
			{Role: runtime.RoleAssistant, ToolCalls: []runtime.ToolCall{call("1")}, State: []runtime.ProviderState{{Provider: "anthropic"}}}, runtime.ToolErrorMessage("1", "boom")},
			`U "q" | A "let me look" call:1 state:anthropic | R result:1="boom"!`},
		{"state alone is no turn", []runtime.Message{runtime.UserMessage("q"), {Role: runtime.RoleAssistant, State: []runtime.ProviderState{{Provider: "x"}}}, runtime.UserMessage("r")},
			`U "q" "r"`},
		{"system after history keeps its place", []runtime.Message{runtime.SystemMessage("s1"), runtime.UserMessage("old"), runtime.AssistantMessage("reply"), runtime.SystemMessage("s2"), runtime.UserMessage("new")},
			`S "s1" | U "old" | A "reply" | S "s2" | U "new"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, err := Normalize(nil, tt.msgs)
			if err != nil {
				t.Fatal(err)
			}
			if got := show(ts); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestNormalizeRefusesBrokenPairingAndAppendsNothing(t *testing.T) {
	dst := []Turn{{Kind: User}}
	got, err := Normalize(dst, []runtime.Message{runtime.UserMessage("q"), runtime.AssistantMessage("", call("1"))})
	var pe *runtime.PairingError
	if !errors.As(err, &pe) || len(got) != 1 {
		t.Fatalf("got %d turns, err %v", len(got), err)
	}
}

func TestNormalizeNeverWritesIntoTheCallersArrays(t *testing.T) {
	states := make([]runtime.ProviderState, 1, 4)
	states[0] = runtime.ProviderState{Provider: "a"}
	parts := make([]runtime.Part, 1, 4)
	parts[0] = runtime.TextPart("x")
	msgs := []runtime.Message{runtime.UserMessage("q"),
		{Role: runtime.RoleAssistant, Parts: parts[:1], State: states[:1]},
		{Role: runtime.RoleAssistant, Text: "y", State: []runtime.ProviderState{{Provider: "b"}}}}
	ts, err := Normalize(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if got := show(ts); got != `U "q" | A "x" "y" state:a state:b` {
		t.Fatalf("got %s", got)
	}
	if states[:2][1].Provider != "" || parts[:2][1].Text != "" {
		t.Errorf("Normalize appended into the caller's arrays: %+v %+v", states[:2], parts[:2])
	}
}

func TestBlank(t *testing.T) {
	for s, want := range map[string]bool{"": true, " \t\n\r\v\f": true, "\u00a0\u2003\u3000": true, "\u0085": true, "x": false, " x ": false, "\u200b": false, "\xff": false} {
		if got := Blank(s); got != want {
			t.Errorf("Blank(%q) = %v, want %v", s, got, want)
		}
	}
}

type tool struct{ schema string }

func (tool) Name() string                   { return "t" }
func (tool) Description() string            { return "" }
func (t tool) InputSchema() json.RawMessage { return json.RawMessage(t.schema) }
func (tool) Idempotent() bool               { return false }
func (tool) Call(context.Context, *runtime.Invocation, json.RawMessage) (string, error) {
	return "", errors.New("not run")
}

func TestSchema(t *testing.T) {
	for schema, want := range map[string]string{"": `{"type":"object"}`, `{"type":"object","properties":{}}`: `{"type":"object","properties":{}}`} {
		got, err := Schema(tool{schema})
		if err != nil || string(got) != want {
			t.Errorf("Schema(%q) = %s, %v", schema, got, err)
		}
	}
	for _, schema := range []string{`{"properties":{}}`, `{"type":"string"}`, `[]`, `{`} {
		if _, err := Schema(tool{schema}); !errors.Is(err, ErrSchema) {
			t.Errorf("Schema(%q): err = %v, want ErrSchema", schema, err)
		}
	}
}

func TestInputAndArguments(t *testing.T) {
	invalid := runtime.ToolCallFromArguments("1", "f", `{"a":`)
	for _, tt := range []struct {
		c           runtime.ToolCall
		input, args string
	}{
		{runtime.ToolCall{ID: "1", Input: json.RawMessage(`{"a":1}`)}, `{"a":1}`, `{"a":1}`},
		{runtime.ToolCall{ID: "1"}, `{}`, `{}`},
		{invalid, `{"_invalid_arguments":"{\"a\":"}`, `{"a":`},
		{runtime.ToolCall{ID: "1", Input: json.RawMessage(`[1]`)}, `{"_invalid_arguments":"[1]"}`, `[1]`},
	} {
		if got := string(Input(tt.c)); got != tt.input {
			t.Errorf("Input(%s) = %s, want %s", tt.c.Input, got, tt.input)
		}
		if got := Arguments(tt.c); got != tt.args {
			t.Errorf("Arguments(%s) = %s, want %s", tt.c.Input, got, tt.args)
		}
	}
}

func TestPartNoteAndJoinText(t *testing.T) {
	p := runtime.DocumentPart("my\nfile.docx", "", []byte("abc"))
	if got := PartNote(p, "why"); got != "[document my file.docx (no media type, 3 bytes) not sent: why]" {
		t.Errorf("PartNote = %q", got)
	}
	got := JoinText([]runtime.Part{runtime.TextPart("a"), p, runtime.TextPart("b")}, func(runtime.Part) string { return "N" })
	if got != "a\n\nN\n\nb" {
		t.Errorf("JoinText = %q", got)
	}
}

func partsMessage(role runtime.Role, parts ...runtime.Part) runtime.Message {
	return runtime.Message{Role: role, Parts: parts}
}
