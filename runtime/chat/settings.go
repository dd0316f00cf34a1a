package chat

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
