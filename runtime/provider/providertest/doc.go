// Package providertest checks that a model adapter — a chat.Model over a provider's HTTP API —
// keeps the contract of package runtime/chat, as testing/slogtest checks an slog.Handler and
// runtime/historytest a history source. personagen's adapters (runtime/provider/anthropic,
// runtime/provider/openai) run it; a third party's adapter (Gemini, Bedrock, a local model
// server) proves itself against the same cases with one call — start from Adapter, which
// describes the adapter and its API, and Run:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, providertest.Adapter{
//			Provider: "gemini",
//			New: func(baseURL string) chat.Model {
//				return gemini.New(gemini.WithBaseURL(baseURL), gemini.WithMaxRetries(0))
//			},
//			Answer: renderGeminiAnswer, // a providertest.Answer as the API's JSON body
//		})
//	}
//
// The suite plays the provider's API with a Server: the adapter is built over the server's URL
// (Adapter.New), the suite queues replies — success answers rendered by the implementer's
// Adapter.Answer, error statuses with their headers, stalls, dropped connections, malformed
// bodies — and checks what Generate returns at the chat.Model boundary. It cannot read the
// provider's wire format, so what the adapter sent is checked by the implementer's own
// Adapter.Check when set (personagen's adapters pass their strict servers' rules there). Each
// rule is a subtest named for it:
//
//   - answers: text, an empty answer, usage (InputTokens counting cached input), max_tokens,
//     stop sequences, refusals, parallel tool calls and the request that carries their results,
//     text beside a call, arguments that are not a JSON object kept and flagged
//     (chat.ToolCall.InvalidArguments) — each mapped back to exactly the Answer rendered;
//   - requests: a replayed support thread (a compaction summary, rounds of parallel calls with a
//     whitespace-only and a failed result, a system message after the history, an image), parts
//     of every media type in every role, a chain of only a system prompt, and a few hundred
//     generated message lists of every shape chat.Validate accepts are each sent in one request
//     and answered; lists chat.Validate refuses are refused before any request with the
//     *chat.PairingError, as a plain error;
//   - the cache plan (chat.CachePlan): a request with a plan is sent unchanged and, when
//     Adapter.CacheMarks reads the markers back from the wire, each ends one of the plan's
//     prefixes, in order, with the plan's key;
//   - failures, each a *chat.CallError with the adapter's Provider and exact fields: every error
//     status classified (408, 409, 429 and 5xx, 529 included, transient; other 4xx permanent),
//     the wait read from retry-after-ms or Retry-After (seconds or an HTTP-date), a dropped
//     connection (transient, no status), malformed success answers (permanent, wrapping
//     provider.ErrMalformedResponse), the API's context-window refusal (chat.ErrContextWindow)
//     when Adapter.ContextWindow is set;
//   - context: cancelled while waiting, a deadline passing, cancelled before the call — each
//     matching ctx.Err() with errors.Is, and transient;
//   - concurrency: calls made at once with one shared request (run the suite with -race);
//   - retries, when Adapter.NewRetrying is set: a wait longer than the adapter's cap ends the
//     call at once, transient with the wait (see provider.DefaultMaxRetryWait); a shorter one is
//     slept and retried.
//
// Every call must return, must not modify its Request (compared with a deep copy), must return
// a Response only with a nil error, and a Response whose assistant message a conversation can
// continue with. No rule asserts a duration, and none waits longer than a 200 ms deadline or a
// retry of a few milliseconds when the adapter keeps the rules: an adapter that sleeps a long
// wait is caught by the requests the server counts, one that hangs by a deadline of 30 s.
//
// Check runs the same suite outside a test and returns the broken rules as an error. Server, the
// suite's player of an API, also serves an adapter's own tests of scripted failures.
package providertest
