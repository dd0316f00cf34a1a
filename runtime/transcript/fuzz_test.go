package transcript

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/chat"
)

// trickyLines are content lines that Parse treats specially or that resemble such lines; the
// generator mixes them with arbitrary bytes taken from the fuzz input.
var trickyLines = []string{
	"", " ", "\t", "\r", " \r", "hello", "user:", "user: hi", "\\user:", "\\\\user:", "\\\\\\user: x",
	"foo_bar: x", "x1: y", "User: x", " user:", "system:", "assistant:", "tool:", "tool: x",
	"function_call: {}", `function_call: {"name":"a","id":"b"}`, "function_call_output:",
	"function_call_output_x: y", "part:", `part: {"type":"text"}`, "parts: x",
	"provider_state:", `provider_state: {"provider":"anthropic"}`, "provider_states: x",
	"```", "```go", "~~~", "````", "~~~~ x", "```x```", "``", "\\```", "\\~~~", "\\\\```",
	"\\", "\\\\", "\\ ", "\\\r", "\\foo", "\\\\foo", "\xff\xfe", "a\r", "\x00", "é",
}

// gen turns fuzz bytes into values. When the bytes run out every read returns zero.
type gen struct{ b []byte }

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *gen) n(max int) int { return int(g.byte()) % max }

// raw returns up to 7 bytes taken verbatim from the input.
func (g *gen) raw() string {
	k := g.n(8)
	if k > len(g.b) {
		k = len(g.b)
	}
	s := string(g.b[:k])
	g.b = g.b[k:]
	return s
}

// text returns 0–5 lines, each a tricky line, raw bytes, or both joined.
func (g *gen) text() string {
	k := g.n(6)
	lines := make([]string, k)
	for i := range lines {
		switch g.n(4) {
		case 0, 1:
			lines[i] = trickyLines[g.n(len(trickyLines))]
		case 2:
			lines[i] = g.raw()
		default:
			lines[i] = trickyLines[g.n(len(trickyLines))] + g.raw()
		}
	}
	s := strings.Join(lines, "\n")
	if g.n(4) == 0 {
		s += "\n"
	}
	return s
}

// str returns a valid UTF-8 string, for fields that travel inside JSON.
func (g *gen) str() string { return strings.ToValidUTF8(g.text(), "\uFFFD") }

var inputs = []string{"", "{}", `{"q":"x"}`, "{ \"a\" : [1, 2.5, null],\n \"b\": {\"c\": true} }", `{"html":"<a&b>"}`, `{"s":"line\nbreak \u2028"}`}

func (g *gen) input() json.RawMessage {
	if g.n(3) == 0 {
		b, _ := json.Marshal(map[string]string{"k": g.str()})
		return b
	}
	in := inputs[g.n(len(inputs))]
	if in == "" {
		return nil
	}
	return json.RawMessage(in)
}

func (g *gen) part(prevInvalid bool) chat.Part {
	switch g.n(3) {
	case 0:
		t := g.text()
		if prevInvalid {
			t = strings.ToValidUTF8(t, "\uFFFD")
		}
		return chat.TextPart(t)
	case 1:
		return chat.ImagePart(g.str(), []byte(g.raw()))
	default:
		return chat.DocumentPart(g.str(), g.str(), []byte(g.raw()))
	}
}

// messages builds a message list in Print's domain from fuzz bytes.
func (g *gen) messages() []chat.Message {
	k := g.n(6)
	var msgs []chat.Message
	for range k {
		roles := []chat.Role{chat.RoleSystem, chat.RoleUser, chat.RoleAssistant, chat.RoleTool}
		m := chat.Message{Role: roles[g.n(4)]}
		if m.Role == chat.RoleTool {
			m.ToolCallID = g.str()
			if g.n(4) == 0 {
				m.Parts = []chat.Part{chat.ImagePart("image/png", []byte(g.raw())), chat.TextPart(g.str())}
			} else {
				m.Text = g.str()
			}
			m.IsError = g.n(3) == 0
			msgs = append(msgs, m)
			continue
		}
		if g.n(3) == 0 {
			prevInvalid := false
			for range g.n(5) {
				p := g.part(prevInvalid)
				prevInvalid = p.Type == chat.PartText && !utf8.ValidString(p.Text)
				m.Parts = append(m.Parts, p)
			}
		} else {
			m.Text = g.text()
		}
		if m.Role == chat.RoleAssistant {
			for range g.n(4) {
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: g.str(), Name: g.str(), Input: g.input()})
			}
			for range g.n(3) {
				m.State = append(m.State, chat.ProviderState{Provider: g.str(), Data: g.input()})
			}
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// checkRoundTrip asserts that msgs survive Print then Parse and that printing is canonical.
func checkRoundTrip(t *testing.T, msgs []chat.Message) {
	t.Helper()
	text := Print(msgs)
	if again := Print(msgs); again != text {
		t.Fatalf("Print is not deterministic:\n%q\n%q", text, again)
	}
	got, err := Parse(text)
	if err != nil {
		t.Fatalf("Parse(Print(m)) failed: %v\nmessages: %s\ntext:\n%s", err, dump(msgs), text)
	}
	if !slices.EqualFunc(got, msgs, chat.Message.Equal) {
		t.Fatalf("Parse(Print(m)) != m\nwant: %s\ngot:  %s\ntext:\n%q", dump(msgs), dump(got), text)
	}
	if reprint := Print(got); reprint != text {
		t.Fatalf("Print(Parse(Print(m))) != Print(m)\nfirst:  %q\nsecond: %q", text, reprint)
	}
}

func dump(msgs []chat.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		fmt.Fprintf(&b, "\n  {%s text=%q parts=%+v id=%q error=%v calls=", m.Role, m.Text, m.Parts, m.ToolCallID, m.IsError)
		for _, c := range m.ToolCalls {
			fmt.Fprintf(&b, "[%q %q %s]", c.ID, c.Name, c.Input)
		}
		for _, st := range m.State {
			fmt.Fprintf(&b, " state[%q %s]", st.Provider, st.Data)
		}
		b.WriteString("}")
	}
	return b.String()
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x01\x05\x00\x03\x00\x07\x00\x09"))
	f.Add([]byte("\x03\x02\x01\x05\x00\x14\x00\x15\x01abc\x00\x1a\x03\x00\x02\x01"))
	f.Add([]byte("\x05\x03\x00\x04\x00\x1c\x00\x22\x00\x1d\x00\x24\x03\x01\x02\x02hi\x01\x00"))
	f.Add([]byte("\x02\x00\x00\x03\x02\x00\x03\x01\xff\xfe\x00\x00\x02\x01\x03\x00\x00\x05\x02\x03\xff\xfe\xfd"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		checkRoundTrip(t, g.messages())
	})
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "user: hi", "user:\n\\user:\n```\nassistant:\n```\n", "assistant:\nfunction_call: {\"name\":\"a\",\"arguments\":{},\"id\":\"1\"}\n\nfunction_call_output: {\"id\":\"1\",\"content\":\"r\"}",
		"system:\r\nhi\r\n", "user:\n\\\n\n\\\n", "user:\nx\npart: {\"type\":\"text\",\"text\":\"y\"}\n\xff\npart: {\"type\":\"image\",\"data\":\"AAE=\"}",
		"~~~\nuser:", "tool: x", "user:\npart: {\"type\":\"text\",\"text\":\"x\"}\n\xff\npart: {\"type\":\"text\",\"text\":\"\"}\n\xfe", "function_call_output: {\"id\":\"1\",\"content\":[{\"type\":\"text\",\"text\":\"a\"}]}",
		"assistant:\nfunction_call: {\"name\":\"a\",\"id\":\"1\"}\nprovider_state: {\"provider\":\"p\",\"data\":[1, {}]}\nfunction_call_output: {\"id\":\"1\",\"is_error\":true}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		msgs, err := Parse(s)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Line < 1 {
				t.Fatalf("Parse error is not a *ParseError with a line: %#v", err)
			}
			return
		}
		text := Print(msgs)
		again, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse(Print(Parse(s))) failed: %v\ninput: %q\nprinted: %q", err, s, text)
		}
		if !slices.EqualFunc(again, msgs, chat.Message.Equal) {
			t.Fatalf("not a fixed point\ninput: %q\nfirst:  %s\nsecond: %s\nprinted: %q", s, dump(msgs), dump(again), text)
		}
	})
}
