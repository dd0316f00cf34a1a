// Package provider names the model APIs personagen has adapters for and holds the one table of
// which model settings each accepts, shared by `personagen validate` (a spec whose model names
// a provider) and by the adapters, which check a persona's settings before their first call
// with the same messages.
//
// Start from CheckSettings (the settings a provider accepts) and the adapters' constructors,
// anthropic.New, openai.NewChat and openai.NewResponses. Configuring the adapters, the settings
// per provider and the wire rules they share are docs/models.md in the repository.
//
// The adapters live below it: runtime/provider/anthropic (the Anthropic Messages API through
// anthropic-sdk-go), runtime/provider/openai (the OpenAI Chat Completions and Responses APIs
// through openai-go) and runtime/provider/scripted (a deterministic model for tests and
// examples). Each is a chat.Model.
package provider
