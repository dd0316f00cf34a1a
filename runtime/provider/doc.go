// Package provider names the model APIs personagen has adapters for and holds what they share:
// the one table of which model settings each accepts (used by `personagen validate`, for a spec
// whose model names a provider, and by the adapters, which check a persona's settings before
// their first call with the same messages), and the rules by which a failed call is classified
// and a provider's retry wait is honoured.
//
// Start from CheckSettings (the settings a provider accepts) and the adapters' constructors,
// anthropic.New, openai.NewChat and openai.NewResponses. Configuring the adapters, the settings
// per provider and the wire rules they share are docs/models.md in the repository.
//
// The adapters live below it: runtime/provider/anthropic (the Anthropic Messages API through
// anthropic-sdk-go), runtime/provider/openai (the OpenAI Chat Completions and Responses APIs
// through openai-go) and runtime/provider/scripted (a deterministic model for tests and
// examples). Each is a chat.Model. runtime/provider/providertest is the conformance suite they
// pass, which a third party's adapter runs too.
//
// # Failed calls
//
// A request an adapter refuses before sending — a *SettingError, a message list that breaks
// chat.Validate (wrapping the *chat.PairingError), a tool schema that is not an object schema,
// no model name — is a plain error: nothing was sent, and sending the same request can only
// fail the same way. Every failure of a call that was sent is a *chat.CallError whose Provider is
// the adapter's provider name (Anthropic, OpenAI, OpenAIResponses), classified so:
//
//	failure                                      StatusCode            Transient  RetryAfter
//	408, 409, 429, 5xx (Anthropic's 529 too)     its status            yes        the answer's wait
//	any other status of 400 and above (1)        its status            no         the answer's wait
//	no answer: network error, timeout, cut off   0, or the cut 2xx's   yes        0
//	ctx done: cancelled or deadline passed (2)   the last answer's, 0  yes        the last answer's, 0
//	a 2xx body that is not an answer (3)         its status            no         0
//	a Responses API response "failed" (4)        its status            by code    0
//
// (1) A context-window refusal also wraps chat.ErrContextWindow. (2) The error matches ctx.Err()
// with errors.Is. (3) It wraps ErrMalformedResponse. (4) Transient for the codes server_error,
// rate_limit_exceeded and vector_store_timeout.
//
// The CallError wraps the SDK's error (errors.As finds *anthropic.Error or *openai.Error), and
// its text reads "<provider>: status 429 (transient, retry after 1m0s): <the SDK's error>". A
// transient failure may succeed later with the same request; a permanent one never will, so a
// caller must not send it again. TransientStatus, RetryAfter and HTTPError are the rules
// themselves, for a third party's adapter.
//
// # Retry waits
//
// The SDKs retry a transient failure themselves (option.WithMaxRetries; 2 retries by default),
// sleeping the wait the answer asks for (retry-after-ms, else Retry-After in seconds or as an
// HTTP-date; see RetryAfter) or their own short backoff. An adapter never sleeps a wait longer
// than its MaxRetryWait (DefaultMaxRetryWait, 60 s, when 0; none when negative), nor one that
// would end after the caller's context deadline: the call ends at once with the transient
// CallError, whose RetryAfter is the wait asked for, and the caller schedules the retry. So a
// 429 with "retry-after: 3600" returns after one request, not after an hour. Shorter waits are
// slept and retried as the SDK is configured; a CallError after the last retry carries the last
// answer's wait.
package provider
