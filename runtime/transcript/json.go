package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/personagen/personagen/runtime/chat"
)

// wirePart is the JSON form of one part on a "part:" line and inside a function_call_output's
// content list. Data travels as standard base64, as encoding/json writes every []byte.
type wirePart struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	Filename  string `json:"filename,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Data      []byte `json:"data,omitempty"`
}

// wireCall is the JSON object of a "function_call:" line. Pointer fields detect absent keys.
type wireCall struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	ID        *string         `json:"id"`
}

// wireOutput is the JSON object of a "function_call_output:" line.
type wireOutput struct {
	ID      *string         `json:"id"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error,omitempty"`
}

// wireState is the JSON object of a "provider_state:" line.
type wireState struct {
	Provider *string         `json:"provider"`
	Data     json.RawMessage `json:"data"`
}

// appendJSON appends the JSON encoding of v without HTML escaping and without the encoder's
// trailing newline. v is always one of this package's wire types or a string, which encode
// without error.
func appendJSON(b *strings.Builder, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("transcript: encode %T: %v", v, err)) // unreachable for our wire types
	}
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
}

func toWire(p chat.Part) wirePart {
	return wirePart{Type: string(p.Type), Text: p.Text, Filename: p.Filename, MediaType: p.MediaType, Data: p.Data}
}

// appendCall writes the function_call object: {"name":…,"arguments":…,"id":…}. A nil or blank
// Input is written as {}; an Input that is not valid JSON is written as a JSON string (which
// Parse then rejects unless it holds an object), so the line stays one line.
func appendCall(b *strings.Builder, c chat.ToolCall) {
	b.WriteString(`{"name":`)
	appendJSON(b, c.Name)
	b.WriteString(`,"arguments":`)
	var buf bytes.Buffer
	switch {
	case len(bytes.TrimSpace(c.Input)) == 0:
		b.WriteString("{}")
	case json.Compact(&buf, c.Input) == nil:
		b.Write(buf.Bytes())
	default:
		appendJSON(b, string(c.Input))
	}
	b.WriteString(`,"id":`)
	appendJSON(b, c.ID)
	b.WriteByte('}')
}

// appendOutput writes the function_call_output object: {"id":…,"content":…}, where content is
// the message's text as a JSON string, or its parts as a list when it has any.
func appendOutput(b *strings.Builder, m chat.Message) {
	b.WriteString(`{"id":`)
	appendJSON(b, m.ToolCallID)
	b.WriteString(`,"content":`)
	if len(m.Parts) == 0 {
		appendJSON(b, m.Text)
	} else {
		ws := make([]wirePart, len(m.Parts))
		for i, p := range m.Parts {
			ws[i] = toWire(p)
		}
		appendJSON(b, ws)
	}
	if m.IsError {
		b.WriteString(`,"is_error":true`)
	}
	b.WriteByte('}')
}

// appendState writes the provider_state object: {"provider":…,"data":…} with data compacted;
// empty data is written as null and data that is not valid JSON as a JSON string (which Parse
// reads back as that string), so the line stays one line.
func appendState(b *strings.Builder, st chat.ProviderState) {
	b.WriteString(`{"provider":`)
	appendJSON(b, st.Provider)
	b.WriteString(`,"data":`)
	var buf bytes.Buffer
	switch {
	case len(bytes.TrimSpace(st.Data)) == 0:
		b.WriteString("null")
	case json.Compact(&buf, st.Data) == nil:
		b.Write(buf.Bytes())
	default:
		appendJSON(b, string(st.Data))
	}
	b.WriteByte('}')
}

// decodeState parses the JSON of a provider_state line. "provider" is required; "data" is any
// JSON value (absent means null), kept compacted.
func decodeState(s string) (chat.ProviderState, error) {
	var w wireState
	if err := decodeObject(s, &w); err != nil {
		return chat.ProviderState{}, err
	}
	if w.Provider == nil {
		return chat.ProviderState{}, errors.New(`missing "provider"`)
	}
	data := json.RawMessage("null")
	if d := bytes.TrimSpace(w.Data); len(d) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, d); err != nil {
			return chat.ProviderState{}, fmt.Errorf(`"data": %w`, err)
		}
		data = buf.Bytes()
	}
	return chat.ProviderState{Provider: *w.Provider, Data: data}, nil
}

// decodeObject decodes exactly one JSON object from s into v, refusing unknown keys and
// trailing data.
func decodeObject(s string, v any) error {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		if s == "" {
			return errors.New("expected a JSON object on the same line, found nothing")
		}
		return errors.New("expected a JSON object")
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON: unexpected data after the object")
	}
	return nil
}

// decodeCall parses the JSON of a function_call line. arguments may be absent or null (an
// empty object), a JSON object, or a JSON string holding a JSON object (the OpenAI wire form).
func decodeCall(s string) (chat.ToolCall, error) {
	var w wireCall
	if err := decodeObject(s, &w); err != nil {
		return chat.ToolCall{}, err
	}
	if w.Name == nil {
		return chat.ToolCall{}, errors.New(`missing "name"`)
	}
	if w.ID == nil {
		return chat.ToolCall{}, errors.New(`missing "id"`)
	}
	args := bytes.TrimSpace(w.Arguments)
	if len(args) > 0 && args[0] == '"' {
		var inner string
		if err := json.Unmarshal(args, &inner); err != nil {
			return chat.ToolCall{}, fmt.Errorf(`"arguments": %w`, err)
		}
		args = bytes.TrimSpace([]byte(inner))
		if !json.Valid(args) {
			return chat.ToolCall{}, errors.New(`"arguments" must be a JSON object (a string holding one is accepted)`)
		}
	}
	var input json.RawMessage
	switch {
	case len(args) == 0 || string(args) == "null":
		input = json.RawMessage("{}")
	case args[0] == '{':
		var buf bytes.Buffer
		if err := json.Compact(&buf, args); err != nil {
			return chat.ToolCall{}, fmt.Errorf(`"arguments": %w`, err)
		}
		input = buf.Bytes()
	default:
		return chat.ToolCall{}, errors.New(`"arguments" must be a JSON object (a string holding one is accepted)`)
	}
	return chat.ToolCall{ID: *w.ID, Name: *w.Name, Input: input}, nil
}

// decodeOutput parses the JSON of a function_call_output line into a tool message. content may
// be absent or null (empty text), a string (the text) or a list of part objects (the parts).
func decodeOutput(s string) (chat.Message, error) {
	var w wireOutput
	if err := decodeObject(s, &w); err != nil {
		return chat.Message{}, err
	}
	if w.ID == nil {
		return chat.Message{}, errors.New(`missing "id"`)
	}
	m := chat.Message{Role: chat.RoleTool, ToolCallID: *w.ID, IsError: w.IsError}
	c := bytes.TrimSpace(w.Content)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		if err := json.Unmarshal(c, &m.Text); err != nil {
			return chat.Message{}, fmt.Errorf(`"content": %w`, err)
		}
	case c[0] == '[':
		dec := json.NewDecoder(bytes.NewReader(c))
		dec.DisallowUnknownFields()
		var ws []wirePart
		if err := dec.Decode(&ws); err != nil {
			return chat.Message{}, fmt.Errorf(`"content": %w`, err)
		}
		for i, w := range ws {
			p, err := fromWire(w)
			if err != nil {
				return chat.Message{}, fmt.Errorf(`"content" part %d: %w`, i+1, err)
			}
			m.Parts = append(m.Parts, p)
		}
	default:
		return chat.Message{}, errors.New(`"content" must be a string or a list of parts`)
	}
	return m, nil
}

// decodePart parses the JSON of a part line.
func decodePart(s string) (chat.Part, error) {
	var w wirePart
	if err := decodeObject(s, &w); err != nil {
		return chat.Part{}, err
	}
	return fromWire(w)
}

func fromWire(w wirePart) (chat.Part, error) {
	switch t := chat.PartType(w.Type); t {
	case chat.PartText, chat.PartImage, chat.PartDocument:
		return chat.Part{Type: t, Text: w.Text, Filename: w.Filename, MediaType: w.MediaType, Data: w.Data}, nil
	case "":
		return chat.Part{}, errors.New(`missing "type" (text, image or document)`)
	default:
		return chat.Part{}, fmt.Errorf(`unknown part type %q (use text, image or document)`, w.Type)
	}
}
