package provider_test

import (
	"fmt"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
)

// The one table of settings each API accepts: what `personagen validate` reports at the spec's
// line and every adapter refuses before its first call.
func ExampleCheckSettings() {
	temperature := 0.7
	s := chat.ModelSettings{Name: "claude-sonnet-4-5", MaxTokens: 1024, Temperature: &temperature, Stop: []string{"Signed,"}}
	fmt.Println(provider.CheckSettings(provider.Anthropic, s))
	fmt.Println(provider.CheckSettings(provider.OpenAIResponses, s))
	fmt.Println(provider.CheckSettings(provider.OpenAI, s))
	// Output:
	// provider anthropic does not accept model.temperature: the Anthropic Messages API (anthropic-sdk-go v2.15.0) has no temperature parameter; remove it
	// provider openai-responses does not accept model.stop: the Responses API has no stop sequences; remove model.stop, or use provider openai (Chat Completions)
	// <nil>
}
