package chat

import (
	"fmt"
	"time"
)

// CallError is a model call that failed, as an adapter reports it: which API, the HTTP status
// when an answer arrived, whether trying the same request again later may succeed, and how long
// the provider asked the caller to wait. Adapters return it (as the error itself or wrapped)
// for every failure of a request they sent; a refusal before sending (a setting the provider
// cannot take, a message list that breaks Validate) is a plain error, which a caller must treat
// as permanent. Find it with errors.As; errors.Is sees through it to its cause (ErrContextWindow,
// context.Canceled, the SDK's error).
//
// Provider is the adapter's provider name ("anthropic", "openai", "openai-responses", or a
// third party's). StatusCode is the HTTP status of the last answer, 0 when none arrived.
//
// Transient is true for a failure that is not about the request itself: no answer arrived (a
// network error, a timeout, a connection cut off), the caller's context ended (Err then matches
// ctx.Err()), or the status is 408, 409, 429 or 5xx (Anthropic's 529 included). Every other
// status (400, 401, 403, 404, 413, 422, …), a refusal for the context window (Err wraps
// ErrContextWindow) and a success answer that is not a message of the API are permanent: the
// same request fails the same way, so a caller must not send it again.
//
// RetryAfter is the wait the last answer asked for (its retry-after-ms or Retry-After header,
// read at its arrival), 0 when it asked for none. An adapter does not sleep waits longer than
// its documented cap, nor waits that would end after the caller's deadline, inside Generate: it
// returns the CallError at once, and the caller schedules the retry.
type CallError struct {
	Provider   string
	StatusCode int
	Transient  bool
	RetryAfter time.Duration
	Err        error
}

// Error returns the provider, the status (when there is one), whether the failure is
// transient, and the cause, for example
// "anthropic: status 429 (transient, retry after 1h0m0s): rate limited".
func (e *CallError) Error() string {
	kind := "permanent"
	if e.Transient {
		kind = "transient"
	}
	if e.RetryAfter > 0 {
		kind += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	status := "no answer"
	if e.StatusCode != 0 {
		status = fmt.Sprintf("status %d", e.StatusCode)
	}
	return fmt.Sprintf("%s: %s (%s): %v", e.Provider, status, kind, e.Err)
}

// Unwrap returns the cause (the SDK's error, a network error, a context error).
func (e *CallError) Unwrap() error { return e.Err }
