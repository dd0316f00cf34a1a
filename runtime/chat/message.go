package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
)

// Role is who speaks a message: one of RoleSystem, RoleUser, RoleAssistant or RoleTool.
type Role string

// The four roles a message can have.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Valid reports whether r is one of the four defined roles.
func (r Role) Valid() bool {
	switch r {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		return true
	}
	return false
}

// PartType says what a Part holds: PartText, PartImage or PartDocument.
type PartType string

// The three kinds of message part.
const (
	PartText     PartType = "text"
	PartImage    PartType = "image"
	PartDocument PartType = "document"
)

// Part is one piece of multimodal message content. A text part uses Text only; an image part
// uses MediaType (e.g. "image/png") and Data; a document part uses Filename, MediaType (e.g.
// "application/pdf") and Data. Data holds the raw bytes (not base64); JSON encoding writes it
// as standard base64, as encoding/json does for every []byte.
type Part struct {
	Type      PartType `json:"type"`
	Text      string   `json:"text,omitempty"`
	Filename  string   `json:"filename,omitempty"`
	MediaType string   `json:"media_type,omitempty"`
	Data      []byte   `json:"data,omitempty"`
}

// TextPart returns a text part holding s.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// ImagePart returns an image part of the given media type (e.g. "image/png") and raw bytes.
func ImagePart(mediaType string, data []byte) Part {
	return Part{Type: PartImage, MediaType: mediaType, Data: data}
}

// DocumentPart returns a document part (e.g. a PDF) with its filename, media type and raw bytes.
func DocumentPart(filename, mediaType string, data []byte) Part {
	return Part{Type: PartDocument, Filename: filename, MediaType: mediaType, Data: data}
}

// ToolCall is one call of a tool that an assistant message requests: ID correlates the later
// tool result, Name is the tool's name, and Input is the call's arguments as the raw bytes of a
// JSON object (never nil in messages built by this package: an absent input is "{}").
// The input is kept as raw JSON, so that a replay writes back exactly the bytes that were
// stored.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// Message is one entry of the conversation a model reads or writes — a system prompt, a user
// turn, an assistant answer, a tool result — with its Role, its content, and for tool traffic
// the call fields. It is not an email: the thread_history resolver renders a thread's stored
// emails (history.Message) into Messages.
//
// Content is either text (Text, used when Parts is empty) or a list of parts (Parts, used when it
// has at least one element; Text is then ignored by Equal and by every encoder in this module).
// ToolCallID is set only on RoleTool messages and names the call this message answers. ToolCalls
// is set only on RoleAssistant messages that request tools; such a message usually has empty Text.
// IsError is set only on RoleTool messages: the tool failed and the content says how. State is
// set only on RoleAssistant messages a model returned: provider state that must go back to the
// same provider with the message (see ProviderState). Model adapters ignore IsError and State on
// messages of other roles.
//
// Messages are plain values; the runtime never mutates a message after a resolver returned it,
// but slices inside (Parts, ToolCalls, Data, Input) are shared, so callers treat them as read-only.
//
// JSON: MarshalJSON writes one canonical shape (see there) and encoding/json decodes it back
// into a message Equal to the original; Equal, not ==, is the comparison to use.
type Message struct {
	Role       Role            `json:"role"`
	Text       string          `json:"text,omitempty"`
	Parts      []Part          `json:"parts,omitempty"`
	ToolCallID string          `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall      `json:"tool_calls,omitempty"`
	IsError    bool            `json:"is_error,omitempty"`
	State      []ProviderState `json:"state,omitempty"`
}

// ProviderState is one item of opaque state that a model provider returned with an assistant
// message and requires back, unchanged, when the same conversation continues: an Anthropic
// thinking or redacted_thinking block with its signature, or an OpenAI Responses reasoning item
// with its encrypted content. Provider names the adapter that produced it ("anthropic",
// "openai-responses"; see package runtime/provider) and Data is a JSON value only that adapter
// reads. An adapter sends back the state of its own provider, in order, ahead of the message's
// text and tool calls, and skips state of any other provider.
//
// State belongs to a run: a runner appends the returned assistant message, state included, and
// the following calls of the run send it back (the Anthropic API rejects a tool loop whose
// thinking blocks are missing). A runner stores it with the round so that a resumed run sends
// the same bytes; thread history replays earlier runs without it.
type ProviderState struct {
	Provider string          `json:"provider"`
	Data     json.RawMessage `json:"data"`
}

// Equal reports whether two state items name the same provider and hold the same Data after
// json.Compact (Data that is not valid JSON compares by raw bytes; nil and empty equal null).
func (s ProviderState) Equal(o ProviderState) bool {
	return s.Provider == o.Provider && bytes.Equal(compactData(s.Data), compactData(o.Data))
}

// MarshalJSON writes {"provider":…,"data":…} with Data compacted; empty Data is written as
// null, and Data that is not valid JSON is an error.
func (s ProviderState) MarshalJSON() ([]byte, error) {
	type plain ProviderState
	if len(bytes.TrimSpace(s.Data)) == 0 {
		s.Data = json.RawMessage("null")
	}
	return json.Marshal(plain(s))
}

func compactData(d json.RawMessage) []byte {
	if len(bytes.TrimSpace(d)) == 0 {
		return []byte("null")
	}
	return compactInput(d)
}

// SystemMessage returns a system message with text content.
func SystemMessage(text string) Message { return Message{Role: RoleSystem, Text: text} }

// UserMessage returns a user message with text content.
func UserMessage(text string) Message { return Message{Role: RoleUser, Text: text} }

// AssistantMessage returns an assistant message with text content and, optionally, the tool
// calls it requests.
func AssistantMessage(text string, calls ...ToolCall) Message {
	return Message{Role: RoleAssistant, Text: text, ToolCalls: calls}
}

// ToolMessage returns a tool message carrying the result text of the call with id callID.
func ToolMessage(callID, result string) Message {
	return Message{Role: RoleTool, Text: result, ToolCallID: callID}
}

// ToolErrorMessage returns a tool message reporting that the call with id callID failed, with
// text describing the failure (IsError set).
func ToolErrorMessage(callID, text string) Message {
	return Message{Role: RoleTool, Text: text, ToolCallID: callID, IsError: true}
}

// NewToolCall returns a ToolCall whose Input is the JSON object encoding of input (a map, a
// struct, or a json.RawMessage), compact and without HTML escaping (so "<", ">" and "&" stay one
// character each, as the model wrote them, instead of six-character \u003c escapes that would
// reach the stored payload's clip far sooner); a nil input, or one that encodes to null, gives
// {}. It returns an error wrapping encoding/json's when input cannot be encoded, and an error
// when it encodes to a JSON value other than an object.
func NewToolCall(id, name string, input any) (ToolCall, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(input); err != nil {
		return ToolCall{}, fmt.Errorf("tool call %s: encode input: %w", id, err)
	}
	raw := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if input == nil || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if t := bytes.TrimLeft(raw, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return ToolCall{}, fmt.Errorf("tool call %s: input must encode to a JSON object, got %.40s", id, raw)
	}
	return ToolCall{ID: id, Name: name, Input: raw}, nil
}

// invalidArgumentsKey is the only key of the JSON object that stands in for a tool call's input
// when the model produced arguments that are not a JSON object (cut-off JSON, a bare string, an
// array): the call's Input is {"_invalid_arguments": "<the arguments as produced>"}, so Input is
// still an object and nothing the model wrote is lost. ToolCall.InvalidArguments recognises it;
// a runner answers such a call with an error result instead of running the tool.
const invalidArgumentsKey = "_invalid_arguments"

// ToolCallFromArguments returns the call a model produced with arguments as raw text (the
// OpenAI wire form, a JSON string holding an object). Arguments that form a JSON object are the
// Input as they are; empty or blank arguments, and JSON null, give {}; anything else gives the
// {"_invalid_arguments": "<arguments>"} object, encoded without HTML
// escaping, invalid UTF-8 as U+FFFD. It never fails.
func ToolCallFromArguments(id, name, arguments string) ToolCall {
	in := bytes.TrimSpace([]byte(arguments))
	switch {
	case len(in) == 0 || string(in) == "null":
		return ToolCall{ID: id, Name: name, Input: json.RawMessage("{}")}
	case in[0] == '{' && json.Valid(in):
		return ToolCall{ID: id, Name: name, Input: json.RawMessage(arguments)}
	}
	var b bytes.Buffer
	b.WriteString(`{"` + invalidArgumentsKey + `":`)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(arguments) // a string always encodes
	b.Truncate(b.Len() - 1)   // the encoder's newline
	b.WriteByte('}')
	return ToolCall{ID: id, Name: name, Input: b.Bytes()}
}

// InvalidArguments reports whether the call's Input is the stand-in for arguments that were not
// a JSON object ({"_invalid_arguments": "<arguments>"}), and returns those arguments as they were produced.
func (c ToolCall) InvalidArguments() (string, bool) {
	in := bytes.TrimSpace(c.Input)
	if !bytes.HasPrefix(in, []byte(`{"`+invalidArgumentsKey+`"`)) {
		return "", false
	}
	var w map[string]json.RawMessage
	if json.Unmarshal(in, &w) != nil || len(w) != 1 {
		return "", false
	}
	var raw string
	if json.Unmarshal(w[invalidArgumentsKey], &raw) != nil {
		return "", false
	}
	return raw, true
}

// MarshalJSON writes the call as {"id":…,"name":…,"input":{…}}. An Input that is nil or only
// whitespace is written as {} so every encoded call carries a JSON object; any other Input is
// written compacted, and an Input that is not valid JSON is an error.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	type plain ToolCall
	if len(bytes.TrimSpace(c.Input)) == 0 {
		c.Input = json.RawMessage("{}")
	}
	return json.Marshal(plain(c))
}

// UnmarshalJSON reads a call written by MarshalJSON. An absent or null "input" becomes {}; an
// "input" that is not a JSON object (an array, a string, a number) is an error, since Input is
// always an object. The input's bytes are kept as they appear in data.
func (c *ToolCall) UnmarshalJSON(data []byte) error {
	type plain ToolCall
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	in := bytes.TrimSpace(p.Input)
	switch {
	case len(in) == 0 || bytes.Equal(in, []byte("null")):
		p.Input = json.RawMessage("{}")
	case in[0] != '{':
		return fmt.Errorf("tool call %q: input must be a JSON object, got %.40s", p.ID, in)
	}
	*c = ToolCall(p)
	return nil
}

// MarshalJSON writes the message in one canonical shape:
//
//	{"role":"assistant","text":"…","parts":[…],"tool_call_id":"…","tool_calls":[…],"is_error":true,"state":[…]}
//
// where "text" is written only when Parts is empty and Text is not (Text is ignored when Parts
// is set, see Message), "parts", "tool_call_id", "tool_calls" and "state" only when non-empty,
// and "is_error" only when true. Part data is standard base64. Two messages built the same way encode to the same bytes, and
// decoding the result with encoding/json gives a message Equal to m.
func (m Message) MarshalJSON() ([]byte, error) {
	type plain Message
	if len(m.Parts) > 0 {
		m.Text = ""
	}
	return json.Marshal(plain(m))
}

// Content returns the message's content as parts: Parts when it has any, otherwise one text
// part holding Text, or nil when Text is empty too (a text is shorthand for a single text
// part). It is the basis of Equal.
func (m Message) Content() []Part {
	if len(m.Parts) > 0 {
		return m.Parts
	}
	if m.Text == "" {
		return nil
	}
	return []Part{TextPart(m.Text)}
}

// Equal reports whether m and o are the same message. Two messages are the same when their
// roles, ToolCallIDs and IsError flags are equal, their Content() is equal part by part (so Text
// "x" equals Parts [TextPart("x")], and empty Text equals nil or empty Parts), their tool calls
// are equal in order, where nil and empty ToolCalls are the same and two inputs are the same
// when they are equal after json.Compact (insignificant whitespace is ignored; key order is
// not), and their State items are equal in order (ProviderState.Equal; nil and empty alike).
// Part data compares by bytes, with nil and empty equal.
func (m Message) Equal(o Message) bool {
	if m.Role != o.Role || m.ToolCallID != o.ToolCallID || m.IsError != o.IsError ||
		len(m.ToolCalls) != len(o.ToolCalls) || !slices.EqualFunc(m.State, o.State, ProviderState.Equal) {
		return false
	}
	a, b := m.Content(), o.Content()
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	for i := range m.ToolCalls {
		if !m.ToolCalls[i].Equal(o.ToolCalls[i]) {
			return false
		}
	}
	return true
}

// Equal reports whether two parts have the same type and fields; nil and empty Data are equal.
func (p Part) Equal(o Part) bool {
	return p.Type == o.Type && p.Text == o.Text && p.Filename == o.Filename &&
		p.MediaType == o.MediaType && bytes.Equal(p.Data, o.Data)
}

// Equal reports whether two tool calls have the same ID and Name and the same Input after
// json.Compact (an Input that is not valid JSON compares by raw bytes; nil equals "{}").
func (c ToolCall) Equal(o ToolCall) bool {
	if c.ID != o.ID || c.Name != o.Name {
		return false
	}
	return bytes.Equal(compactInput(c.Input), compactInput(o.Input))
}

func compactInput(in json.RawMessage) []byte {
	if len(bytes.TrimSpace(in)) == 0 {
		return []byte("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, in); err != nil {
		return in
	}
	return buf.Bytes()
}
