package turns

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/chat"
)

// Kind is what a turn is.
type Kind uint8

// The four kinds of turn.
const (
	System Kind = iota
	User
	Assistant
	Results
)

// Result is one tool result of a Results turn: the call it answers, its content (never empty:
// a blank result is one text part EmptyResultText) and whether the tool failed.
type Result struct {
	CallID  string
	Parts   []chat.Part
	IsError bool
}

// Turn is one normalised turn. Parts holds the content of System, User and Assistant turns (no
// blank text part; at least one part, except an Assistant turn that has Calls); Calls and State
// belong to Assistant turns; Results to Results turns (one per tool message of the round, in
// order).
type Turn struct {
	Kind    Kind
	Parts   []chat.Part
	Calls   []chat.ToolCall
	State   []chat.ProviderState
	Results []Result
}

// OpeningText is the text of the user turn put first when a conversation's first non-system
// turn is not a user turn (a history window that starts with the persona's own reply, or a
// scheduled run whose chain holds only system prompts): every model API wants a user turn
// first.
const OpeningText = "[start of conversation]"

// EmptyResultText stands for a tool result whose content is empty or white space only, which
// the model APIs refuse as a text block.
const EmptyResultText = "[the tool returned no output]"

// ErrorResultPrefix starts the text of a failed tool's result on APIs without an error flag
// (Chat Completions, Responses), so the model still learns the call failed.
const ErrorResultPrefix = "[tool error] "

// Normalize checks msgs with chat.Validate and appends their normalised turns to dst:
//
//   - text parts that are empty or white space only are dropped; a system, user or assistant
//     message left without content (and, for assistant, without tool calls) is dropped;
//   - consecutive system, user or assistant turns are merged into one (parts, calls and state
//     in order);
//   - the tool messages answering one assistant message become one Results turn; a result
//     without content gets EmptyResultText;
//   - when the first turn that is not a system turn is not a user turn (or there is none), a
//     user turn with OpeningText is put there.
//
// It returns the chat.Validate error (a *chat.PairingError) for a list that breaks the
// pairing invariant, and then appends nothing.
func Normalize(dst []Turn, msgs []chat.Message) ([]Turn, error) {
	dst, _, err := NormalizeMarked(dst, msgs, nil)
	return dst, err
}

// Mark is where a prefix of the messages ends among the normalised turns: Turn is the index
// (from the first appended turn) of the turn holding the prefix's last content, and Parts,
// Calls and Results how many of that turn's parts, calls and results the prefix holds. Turn is
// -1 when the prefix holds no content at all (it ends after the tools). The prefix's last
// element is the turn's last call when Calls > 0 (an assistant turn renders calls after its
// parts), else its last result (a Results turn), else its last part.
type Mark struct {
	Turn, Parts, Calls, Results int
}

// NormalizeMarked is Normalize that also returns, for each message count in ends (ascending),
// the Mark where msgs[:end] ends among the turns; a prefix whose last messages were dropped
// (blank) ends at the content before them.
func NormalizeMarked(dst []Turn, msgs []chat.Message, ends []int) ([]Turn, []Mark, error) {
	if err := chat.Validate(msgs); err != nil {
		return dst, nil, err
	}
	var marks []Mark
	if len(ends) > 0 {
		marks = make([]Mark, 0, len(ends))
	}
	start := len(dst)
	// The one-part contents of text messages share one array (each a capped window of it).
	texts := 0
	for i := range msgs {
		if len(msgs[i].Parts) == 0 {
			texts++
		}
	}
	arena := make([]chat.Part, 0, texts)
	content := func(m *chat.Message) []chat.Part {
		if len(m.Parts) == 0 {
			if Blank(m.Text) {
				return nil
			}
			arena = append(arena, chat.TextPart(m.Text))
			return arena[len(arena)-1 : len(arena) : len(arena)]
		}
		return partsContent(m.Parts)
	}
	mark := func(done int) {
		for len(marks) < len(ends) && ends[len(marks)] <= done {
			if len(dst) == start {
				marks = append(marks, Mark{Turn: -1})
				continue
			}
			t := &dst[len(dst)-1]
			marks = append(marks, Mark{Turn: len(dst) - 1 - start, Parts: len(t.Parts), Calls: len(t.Calls), Results: len(t.Results)})
		}
	}
	mark(0)
	results := 0
	for i := range msgs {
		mark(i)
		m := &msgs[i]
		if m.Role == chat.RoleTool {
			if results == 0 {
				for k := i; k < len(msgs) && msgs[k].Role == chat.RoleTool; k++ {
					results++
				}
				dst = append(dst, Turn{Kind: Results, Results: make([]Result, 0, results)})
			}
			results--
			r := Result{CallID: m.ToolCallID, Parts: content(m), IsError: m.IsError}
			if len(r.Parts) == 0 {
				r.Parts = emptyResult
			}
			dst[len(dst)-1].Results = append(dst[len(dst)-1].Results, r)
			continue
		}
		t := Turn{Kind: kindOf(m.Role), Parts: content(m)}
		if t.Kind == Assistant {
			// Capped, so that merging never appends into the caller's arrays.
			t.Calls = m.ToolCalls[:len(m.ToolCalls):len(m.ToolCalls)]
			if len(t.Parts) == 0 && len(t.Calls) == 0 {
				continue // state alone is no turn: the APIs want the item that followed it
			}
			t.State = m.State[:len(m.State):len(m.State)]
		} else if len(t.Parts) == 0 {
			continue
		}
		if n := len(dst); n > start && dst[n-1].Kind == t.Kind {
			prev := &dst[n-1]
			prev.Parts = append(prev.Parts, t.Parts...)
			prev.Calls = append(prev.Calls, t.Calls...)
			prev.State = append(prev.State, t.State...)
			continue
		}
		dst = append(dst, t)
	}
	mark(len(msgs))
	first := start
	for first < len(dst) && dst[first].Kind == System {
		first++
	}
	if first == len(dst) || dst[first].Kind != User {
		dst = append(dst, Turn{})
		copy(dst[first+1:], dst[first:])
		dst[first] = Turn{Kind: User, Parts: []chat.Part{chat.TextPart(OpeningText)}}
		for k := range marks {
			if marks[k].Turn >= first-start {
				marks[k].Turn++
			}
		}
	}
	return dst, marks, nil
}

func kindOf(r chat.Role) Kind {
	switch r {
	case chat.RoleSystem:
		return System
	case chat.RoleAssistant:
		return Assistant
	}
	return User
}

// emptyResult is the content of a blank tool result. It is shared and capped, so no append
// can write into it.
var emptyResult = []chat.Part{chat.TextPart(EmptyResultText)}[:1:1]

// partsContent returns parts without blank text parts, copying only when it must drop one.
// A message's Parts are owned by the caller: merging appends to a turn's own slice, so a
// returned slice that aliases parts is capped at its length.
func partsContent(parts []chat.Part) []chat.Part {
	keep := 0
	for _, p := range parts {
		if p.Type != chat.PartText || !Blank(p.Text) {
			keep++
		}
	}
	if keep == len(parts) {
		return parts[:len(parts):len(parts)]
	}
	out := make([]chat.Part, 0, keep)
	for _, p := range parts {
		if p.Type != chat.PartText || !Blank(p.Text) {
			out = append(out, p)
		}
	}
	return out
}

// Blank reports whether s is empty or only white space (Unicode White_Space), the text the
// model APIs refuse in a text block.
func Blank(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\v' && c != '\f' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			return false
		}
		i += n
	}
	return true
}

// JoinText joins the text parts of parts with a blank line, and renders every other part with
// note; it is the content of a turn on an API that takes one string.
func JoinText(parts []chat.Part, note func(chat.Part) string) string {
	if len(parts) == 1 && parts[0].Type == chat.PartText {
		return parts[0].Text
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if p.Type == chat.PartText {
			b.WriteString(p.Text)
		} else {
			b.WriteString(note(p))
		}
	}
	return b.String()
}

// PartNote is the text that stands for a part an API cannot carry where it stands: its kind,
// filename, media type and size, and why it was not sent, e.g.
// `[image chart.svg (image/svg+xml, 1234 bytes) not sent: the Anthropic Messages API takes JPEG, PNG, GIF and WebP images]`.
func PartNote(p chat.Part, why string) string {
	name := ""
	if p.Filename != "" {
		name = " " + oneLine(p.Filename)
	}
	mt := oneLine(p.MediaType)
	if mt == "" {
		mt = "no media type"
	}
	return fmt.Sprintf("[%s%s (%s, %d bytes) not sent: %s]", p.Type, name, mt, len(p.Data), why)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ErrorText is the text of a failed tool's result on an API without an error flag:
// ErrorResultPrefix and the result's text.
func ErrorText(text string) string { return ErrorResultPrefix + text }

// Arguments returns a call's arguments as the JSON text the OpenAI APIs carry: the arguments
// as the model produced them for a call flagged by ToolCall.InvalidArguments, {} for an empty
// Input, the Input bytes otherwise.
func Arguments(c chat.ToolCall) string {
	if raw, ok := c.InvalidArguments(); ok {
		return raw
	}
	if len(bytes.TrimSpace(c.Input)) == 0 {
		return "{}"
	}
	return string(c.Input)
}

// Input returns a call's input as a JSON object for an API that takes an object (Anthropic):
// the Input when it is one, {} when it is empty, and otherwise the {"_invalid_arguments": …}
// object holding the bytes, so what goes on the wire is always an object.
func Input(c chat.ToolCall) json.RawMessage {
	in := bytes.TrimSpace(c.Input)
	switch {
	case len(in) == 0:
		return json.RawMessage("{}")
	case in[0] == '{' && validObject(in):
		return c.Input
	}
	return chat.ToolCallFromArguments(c.ID, c.Name, string(c.Input)).Input
}

// ErrSchema is returned (wrapped) by Schema for a tool whose input schema is not a JSON object
// of "type": "object".
var ErrSchema = errors.New("invalid tool input schema")

// Schema returns the input schema of tool t for the wire: {"type":"object"} when it is empty,
// the schema's bytes when it is a JSON object whose "type" is "object"; otherwise an error
// wrapping ErrSchema that names the tool.
func Schema(t chat.ToolDefinition) (json.RawMessage, error) {
	s := t.InputSchema
	if len(bytes.TrimSpace(s)) == 0 {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var head struct {
		Type json.RawMessage `json:"type"`
	}
	if err := json.Unmarshal(s, &head); err != nil {
		return nil, fmt.Errorf("tool %s: %w: %v", t.Name, ErrSchema, err)
	}
	if string(bytes.TrimSpace(head.Type)) != `"object"` {
		return nil, fmt.Errorf(`tool %s: %w: the model APIs want "type": "object" at the top, got %s`, t.Name, ErrSchema, orNothing(head.Type))
	}
	return s, nil
}

func orNothing(b json.RawMessage) string {
	if len(b) == 0 {
		return "no type"
	}
	return string(b)
}
