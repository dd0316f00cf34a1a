package conversion

import "github.com/tmc/langchaingo/llms"

// llmsTools is the call option that passes tools to a langchaingo model.
func llmsTools(tools []llms.Tool) []llms.CallOption {
	return []llms.CallOption{llms.WithTools(tools), llms.WithMaxTokens(4096)}
}
