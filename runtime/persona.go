package runtime

import (
	"encoding/json"

	"github.com/personagen/personagen/runtime/history"
)

// Tool is a tool the model may call: its Name (snake_case by convention, unique within a
// persona), a Description the model reads, and InputSchema, the JSON Schema of its input object
// as raw JSON bytes. A spec names tools as package-level values implementing Tool.
type Tool interface {
	Name() string
	Description() string
	InputSchema() json.RawMessage
}

// ModelSettings holds the model settings a persona passes through to the Request: the model
// Name, Provider (the API the settings are written for: "anthropic", "openai" or
// "openai-responses", see package runtime/provider; "" when the persona does not say), MaxTokens
// (the reply's token budget; 0 means the adapter's default), Temperature and TopP (nil when
// unset), Stop sequences, and Extra, free-form provider options (nil when unset) that an adapter
// sends as top-level fields of the request body. encoding/json writes Extra's keys sorted, so a
// Request encodes deterministically. Which settings each provider accepts is the table of
// package runtime/provider; an adapter refuses the others before its first call.
type ModelSettings struct {
	Name        string         `json:"name,omitempty"`
	Provider    string         `json:"provider,omitempty"`
	MaxTokens   int            `json:"max_tokens,omitempty"`
	Temperature *float64       `json:"temperature,omitempty"`
	TopP        *float64       `json:"top_p,omitempty"`
	Stop        []string       `json:"stop,omitempty"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// Persona is a compiled persona: its identity, model settings, tools, its two chains and its
// responsibilities. Generated constructors return one; hosts may also build one by hand.
// MessageChain runs for reply runs (an Invocation with Inbound), ResponsibilityChain for
// scheduled runs (an Invocation with Responsibility). A Persona is read-only once built and safe
// for concurrent use when its resolvers are.
type Persona struct {
	Name                string
	Description         string
	Model               ModelSettings
	Tools               []Tool
	MessageChain        *Chain
	ResponsibilityChain *Chain
	Responsibilities    []Responsibility
}

// Responsibility returns the persona's responsibility named name, and whether it exists.
func (p *Persona) Responsibility(name string) (Responsibility, bool) {
	for _, r := range p.Responsibilities {
		if r.Name == name {
			return r, true
		}
	}
	return Responsibility{}, false
}

// Options are the run-time dependencies a generated persona constructor takes besides the
// host's env: Files, where relative prompt and transcript paths resolve (nil reads from the
// working directory), and History, the source that thread_history and thread_summary read (a
// constructor whose spec uses either returns an error when it is nil).
type Options struct {
	Files   *Files
	History history.Source
}
