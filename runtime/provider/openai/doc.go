// Package openai sends a persona's chat.Request to OpenAI through the official SDK,
// github.com/openai/openai-go/v3, over either API: Chat (the Chat Completions API, provider
// "openai") and Responses (the Responses API, provider "openai-responses"). Both are
// chat.Models.
//
// Start from NewChat or NewResponses; ChatParams, ResponsesParams, ChatResponse and
// ResponsesResponse convert a request and an answer without sending anything. Configuring them,
// and the rules all adapters share, are docs/models.md in the repository.
//
// The clients are the SDK's own: NewChat and NewResponses take the SDK's request options, and
// the SDK reads its standard environment first (OPENAI_API_KEY, OPENAI_BASE_URL — the base URL
// of the API, ending in /v1 — and the SDK's other OPENAI_* variables); an option passed
// explicitly wins over the variable.
//
// Rules both APIs share (Params functions):
//
//   - System messages keep their place: every system message, at the start or after the
//     history, is a system-role message where it stands in the chain (both APIs take them
//     anywhere), so a later one is read as an instruction, not as user text.
//   - Blank text is never sent; empty turns are dropped; consecutive turns of one role are
//     merged (their texts joined by a blank line); the first non-system turn is a user turn
//     (turns.OpeningText when the chain has none).
//   - Images (PNG, JPEG, GIF, WebP) travel as base64 data URLs and PDFs as file data, in user
//     turns; any other part, and any non-text part where the API takes only text, becomes a
//     text note (turns.PartNote).
//   - A failed tool's result starts with turns.ErrorResultPrefix (neither API has an error
//     flag); a blank result is turns.EmptyResultText. Arguments travel as the JSON text the
//     model produced (for a call flagged by chat.ToolCall.InvalidArguments, the produced
//     text itself).
//   - Tool call ids are 1 to turns.MaxChatCallID (40, Chat Completions' limit) or
//     turns.MaxResponsesCallID (64) characters of [A-Za-z0-9_-], unique within the request: an
//     id that breaks this (another provider's or a host's id, an id of two rounds) is renamed
//     deterministically, in its call and its result alike (see turns.CallIDs); well-formed ids
//     are sent unchanged.
//   - An answer that is not one of the API (not JSON, not an object, without what the API
//     always sends) is an error wrapping provider.ErrMalformedResponse (see ChatResponse and
//     ResponsesResponse).
//   - Settings are checked first (provider.CheckFor); Extra keys are top-level fields of the
//     body.
//
// Chat Completions: tool results are "tool" messages keyed by tool_call_id right after the
// assistant message with the tool_calls; max_tokens is sent as max_completion_tokens; stop as
// stop (at most 4).
//
// Responses: calls and results are function_call and function_call_output items; the request
// is sent with store: false (the provider keeps nothing unless model.extra sets store: true)
// and include: ["reasoning.encrypted_content"], so reasoning items come back encrypted, travel
// in the assistant message's State and go back, without their ids, ahead of the message's
// items; max_tokens is sent as max_output_tokens; stop sequences do not exist.
//
// Failures and retries follow package provider: a refusal before sending is a plain error, every
// failed call a *chat.CallError of Provider "openai" or "openai-responses" (code
// context_length_exceeded wraps chat.ErrContextWindow; a response of status "failed" is a
// CallError of its 200, transient for the codes server_error, rate_limit_exceeded and
// vector_store_timeout). openai-go v3.98.0 sleeps a wait an answer asks for up to
// option.WithMaxRetryDelay (2 minutes unless set) and returns the answer beyond it; the adapters
// pass their MaxRetryWait there on every call (provider.DefaultMaxRetryWait, 60 s, by default),
// and watch every attempt so that a wait that would outlast ctx's deadline is not slept either
// (the answer reaches the SDK with "x-should-retry: false"). Such an answer's error is returned
// at once, as a transient CallError with the wait; shorter waits are left to the SDK's retries
// (option.WithMaxRetries).
package openai
