// Package anthropic sends a persona's chat.Request to the Anthropic Messages API through the
// official SDK, github.com/anthropics/anthropic-sdk-go/v2, and maps the answer back: a
// chat.Model.
//
// Start from New; Params and Response convert a request and an answer without sending anything.
// Configuring it, and the rules all adapters share, are docs/models.md in the repository.
//
// The client is the SDK's own: New takes the SDK's request options, and without options the
// SDK reads its standard environment (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL — the base URL of
// the API, to which the SDK appends v1/messages — and the SDK's other variables).
//
// Conversion (Params) holds every wire rule of the Messages API:
//
//   - System messages before the first other message become the top-level system prompt; a
//     system message later in the chain (a use resolver or a load_text after thread_history)
//     stays in place as a mid-conversation system message (MessageParam.OfSystem), so it keeps
//     both its position and its authority.
//   - Blank text is never sent; empty turns are dropped; consecutive turns of one role are
//     merged; the first turn is a user turn (turns.OpeningText when the chain has none).
//   - A round's tool results travel in one user message right after the assistant's tool_use
//     blocks, results first (a user message that follows the round joins it after the
//     results); a failed tool's result has is_error; a blank result is
//     turns.EmptyResultText.
//   - Images (JPEG, PNG, GIF, WebP) become base64 image blocks and documents (PDF, plain text)
//     document blocks, in user turns and tool results; any other part, and any non-text part
//     in a system or assistant turn, becomes a text note (turns.PartNote).
//   - Tool call ids match ^[a-zA-Z0-9_-]+$, have at most turns.MaxAnthropicCallID (64)
//     characters and are unique within the request: an id that breaks this (another provider's
//     or a host's id, an id of two rounds) is renamed deterministically, in its tool_use and
//     its tool_result alike (see turns.CallIDs); well-formed ids are sent unchanged.
//   - An answer that is not a Messages API message is an error wrapping
//     provider.ErrMalformedResponse (see Response).
//   - An assistant message's "anthropic" State (thinking and redacted_thinking blocks, with
//     their signatures) goes back first in its content, unchanged; state of other providers,
//     and anything that is not such a block, is left out.
//   - Settings: provider.CheckFor(provider.Anthropic) refuses temperature and top_p before any
//     request; max_tokens defaults to DefaultMaxTokens; stop becomes stop_sequences; Extra keys
//     are top-level fields of the body (thinking, metadata, service_tier, …).
//
// Failures and retries follow package provider: a refusal before sending is a plain error, every
// failed call a *chat.CallError of Provider "anthropic" (a 529 overloaded_error is transient, a
// 400 "prompt is too long" wraps chat.ErrContextWindow). anthropic-sdk-go v2.15.0 sleeps any
// wait an answer asks for, without a cap, before it retries; so Generate watches every attempt
// of the call (a per-call middleware) and hands the SDK an answer whose wait is longer than
// Model.MaxRetryWait (provider.DefaultMaxRetryWait, 60 s, by default), or would outlast ctx's
// deadline, with "x-should-retry: false" — which the SDK honours over the status — so the SDK
// returns that answer's error at once and Generate returns it as a transient CallError with
// the wait. Shorter waits are left to the SDK's retries (option.WithMaxRetries).
package anthropic
