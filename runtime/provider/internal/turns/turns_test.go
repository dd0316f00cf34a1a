package turns

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

func call(id string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: "f", Input: json.RawMessage(`{}`)}
}

// show renders turns compactly: one "kind[parts|calls|state|results]" per turn.
func show(ts []Turn) string {
	var out []string
	for _, t := range ts {
		var b strings.Builder
		b.WriteString([]string{"S", "U", "A", "R"}[t.Kind])
		for _, p := range t.Parts {
			if p.Type == chat.PartText {
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
		msgs []chat.Message
		want string
	}{
		{"empty list gets a user turn", nil, `U "[start of conversation]"`},
		{"only system prompts get a user turn after them", []chat.Message{chat.SystemMessage("a"), chat.SystemMessage("b")},
			`S "a" "b" | U "[start of conversation]"`},
		{"assistant first gets a user turn before it", []chat.Message{chat.SystemMessage("s"), chat.AssistantMessage("earlier"), chat.UserMessage("now")},
			`S "s" | U "[start of conversation]" | A "earlier" | U "now"`},
		{"user first is left alone", []chat.Message{chat.UserMessage("hi")}, `U "hi"`},
		{"blank text dropped, blank messages dropped", []chat.Message{chat.UserMessage("hi"), chat.AssistantMessage(" \n"),
			partsMessage(chat.RoleUser, chat.TextPart("\u00a0"), chat.TextPart("x"), chat.ImagePart("image/png", nil))},
			`U "hi" "x" <image>`},
		{"same roles merged across a dropped blank turn", []chat.Message{chat.UserMessage("a"), chat.AssistantMessage(""), chat.UserMessage("b")},
			`U "a" "b"`},
		{"replayed round: no text, calls kept, results batched in order with placeholders",
			[]chat.Message{chat.UserMessage("q"), chat.AssistantMessage("", call("1"), call("2")),
				chat.ToolMessage("2", "two"), chat.ToolMessage("1", " \t"), chat.UserMessage("next")},
			`U "q" | A call:1 call:2 | R result:2="two" result:1="[the tool returned no output]" | U "next"`},
		{"assistant text then calls merge into one turn", []chat.Message{chat.UserMessage("q"), chat.AssistantMessage("let me look"),
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call("1")}, State: []chat.ProviderState{{Provider: "anthropic"}}}, chat.ToolErrorMessage("1", "boom")},
			`U "q" | A "let me look" call:1 state:anthropic | R result:1="boom"!`},
		{"state alone is no turn", []chat.Message{chat.UserMessage("q"), {Role: chat.RoleAssistant, State: []chat.ProviderState{{Provider: "x"}}}, chat.UserMessage("r")},
			`U "q" "r"`},
		{"system after history keeps its place", []chat.Message{chat.SystemMessage("s1"), chat.UserMessage("old"), chat.AssistantMessage("reply"), chat.SystemMessage("s2"), chat.UserMessage("new")},
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
	got, err := Normalize(dst, []chat.Message{chat.UserMessage("q"), chat.AssistantMessage("", call("1"))})
	var pe *chat.PairingError
	if !errors.As(err, &pe) || len(got) != 1 {
		t.Fatalf("got %d turns, err %v", len(got), err)
	}
}

func TestNormalizeNeverWritesIntoTheCallersArrays(t *testing.T) {
	states := make([]chat.ProviderState, 1, 4)
	states[0] = chat.ProviderState{Provider: "a"}
	parts := make([]chat.Part, 1, 4)
	parts[0] = chat.TextPart("x")
	msgs := []chat.Message{chat.UserMessage("q"),
		{Role: chat.RoleAssistant, Parts: parts[:1], State: states[:1]},
		{Role: chat.RoleAssistant, Text: "y", State: []chat.ProviderState{{Provider: "b"}}}}
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

// tool is a tool definition with the given input schema.
func tool(schema string) chat.ToolDefinition {
	return chat.ToolDefinition{Name: "t", InputSchema: json.RawMessage(schema)}
}

func TestSchema(t *testing.T) {
	for schema, want := range map[string]string{"": `{"type":"object"}`, `{"type":"object","properties":{}}`: `{"type":"object","properties":{}}`} {
		got, err := Schema(tool(schema))
		if err != nil || string(got) != want {
			t.Errorf("Schema(%q) = %s, %v", schema, got, err)
		}
	}
	for _, schema := range []string{`{"properties":{}}`, `{"type":"string"}`, `[]`, `{`} {
		if _, err := Schema(tool(schema)); !errors.Is(err, ErrSchema) {
			t.Errorf("Schema(%q): err = %v, want ErrSchema", schema, err)
		}
	}
}

func TestInputAndArguments(t *testing.T) {
	invalid := chat.ToolCallFromArguments("1", "f", `{"a":`)
	for _, tt := range []struct {
		c           chat.ToolCall
		input, args string
	}{
		{chat.ToolCall{ID: "1", Input: json.RawMessage(`{"a":1}`)}, `{"a":1}`, `{"a":1}`},
		{chat.ToolCall{ID: "1"}, `{}`, `{}`},
		{invalid, `{"_invalid_arguments":"{\"a\":"}`, `{"a":`},
		{chat.ToolCall{ID: "1", Input: json.RawMessage(`[1]`)}, `{"_invalid_arguments":"[1]"}`, `[1]`},
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
	p := chat.DocumentPart("my\nfile.docx", "", []byte("abc"))
	if got := PartNote(p, "why"); got != "[document my file.docx (no media type, 3 bytes) not sent: why]" {
		t.Errorf("PartNote = %q", got)
	}
	got := JoinText([]chat.Part{chat.TextPart("a"), p, chat.TextPart("b")}, func(chat.Part) string { return "N" })
	if got != "a\n\nN\n\nb" {
		t.Errorf("JoinText = %q", got)
	}
}

func partsMessage(role chat.Role, parts ...chat.Part) chat.Message {
	return chat.Message{Role: role, Parts: parts}
}
