package chat

import (
	"bytes"
	"encoding/json"
)

// Request is what goes to the model: the settings, the messages in order, the definitions of
// the tools the model may call, and Cache, the plan of which prefixes later requests repeat
// (nil: none; see CachePlan). A provider adapter translates it to its wire format and never
// modifies it; a plan adds cache markers to the wire, never content.
type Request struct {
	Model    ModelSettings    `json:"model"`
	Messages []Message        `json:"messages"`
	Tools    []ToolDefinition `json:"tools,omitempty"`
	Cache    *CachePlan       `json:"cache,omitempty"`
}

// ToolDefinition is what the model reads about a tool it may call: Name (unique within a
// request), Description, and InputSchema, the JSON Schema of the tool's input object as raw
// JSON bytes (empty means any object). Running a tool is not part of the model contract: a
// runner maps a ToolCall back to the tool by Name.
type ToolDefinition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// MarshalJSON writes the request for review, logging and fixtures:
//
//	{"model":{…},"messages":[…],"tools":[{"name":…,"description":…,"input_schema":{…}}],"cache":{…}}
//
// with messages in Message's canonical form ("messages" is [] when there are none), tools in
// order ("tools" omitted when there are none) and the cache plan ("cache" omitted when nil). An input schema that is empty is written as {};
// one that is not valid JSON is an error. The encoding decodes back with encoding/json into an
// equal Request.
func (r Request) MarshalJSON() ([]byte, error) {
	type plain Request
	out := plain(r)
	if out.Messages == nil {
		out.Messages = []Message{}
	}
	copied := false
	for i, t := range out.Tools {
		if len(bytes.TrimSpace(t.InputSchema)) == 0 {
			if !copied { // never write into the caller's slice
				out.Tools, copied = append([]ToolDefinition(nil), r.Tools...), true
			}
			out.Tools[i].InputSchema = json.RawMessage("{}")
		}
	}
	return json.Marshal(out)
}
