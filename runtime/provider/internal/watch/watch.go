// Package watch watches one model call through an official SDK — every attempt the SDK makes —
// so that the adapter can report how it failed as a *chat.CallError, keep the body of a success
// answer the SDK could not decode, and stop the SDK from sleeping a provider's long retry wait.
//
// Both SDKs (anthropic-sdk-go v2.15.0, openai-go v3.98.0) retry 408, 409, 429 and 5xx answers and
// failed connections themselves, sleeping the answer's retry-after-ms or Retry-After first.
// anthropic-sdk-go sleeps any such wait, without a cap, so a 429 with "retry-after: 3600" would
// hold the call for an hour (or until the caller's deadline, then fail with a context error
// that has lost the wait). openai-go caps the wait at option.WithMaxRetryDelay (2 minutes by
// default) and returns the 429 beyond it. Neither SDK lets a caller decide a retry itself, but
// both call the request's middleware on every attempt and honour the answer's x-should-retry
// header over its status. So Record.Middleware reads the wait of every answer and, when it is
// longer than the adapter's cap or would outlast the caller's deadline, sets
// "x-should-retry: false" on the answer the SDK sees: the SDK returns that answer's error at
// once, and Fail turns it into a transient CallError carrying the wait. Shorter waits are left
// to the SDK, which sleeps them and retries as configured (option.WithMaxRetries). The
// alternative — turning the SDK's retries off and retrying in the adapter — would override the
// retry count a host passes to the SDK and duplicate its backoff.
package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
)

// Record watches the attempts of one call. Build it with Start for each call and pass
// Middleware to the SDK with option.WithMiddleware on that call (both SDKs' middleware is this
// function type). The SDK makes its attempts one after another, so Record needs no lock.
type Record struct {
	provider string
	what     string // the API's answer object, for malformed-answer errors
	maxWait  time.Duration
	deadline time.Time // the caller's, zero when it has none

	attempts int
	status   int           // the last attempt's HTTP status, 0 when it got no answer
	wait     time.Duration // the wait the last answer asked for

	got         bool // the last attempt got a 2xx answer whose body was read whole
	body        []byte
	contentType string
}

// Start returns the Record of a call made with ctx by the adapter of provider (the
// chat.CallError.Provider of its errors), whose API answers with what ("a chat completion"). A
// wait longer than maxWait is not slept; a negative maxWait lets no wait be slept.
func Start(ctx context.Context, provider, what string, maxWait time.Duration) *Record {
	r := &Record{provider: provider, what: what, maxWait: max(0, maxWait)}
	if d, ok := ctx.Deadline(); ok {
		r.deadline = d
	}
	return r
}

// MaxWait returns the cap an adapter's MaxRetryWait field sets: provider.DefaultMaxRetryWait
// for 0, the field otherwise (negative: no wait is slept).
func MaxWait(field time.Duration) time.Duration {
	if field == 0 {
		return provider.DefaultMaxRetryWait
	}
	return field
}

// Middleware sends one attempt through next and records its answer: its status and the wait
// it asks for (provider.RetryAfter). An answer whose wait is longer than the cap, or ends after
// the caller's deadline, reaches the SDK with "x-should-retry: false" (on a copy of its header),
// so the SDK does not sleep it. The body of a 2xx answer is read into the Record and handed to
// the SDK as a copy; a body that cannot be read fails the SDK's own read with the same error, as
// without the middleware (so the SDK takes it for a dropped connection, as it is).
func (r *Record) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	r.attempts++
	r.status, r.wait, r.got, r.body, r.contentType = 0, 0, false, nil, ""
	resp, err := next(req)
	if err != nil || resp == nil {
		return resp, err
	}
	r.status = resp.StatusCode
	now := time.Now()
	if wait, ok := provider.RetryAfter(resp.Header, now); ok {
		r.wait = wait
		if wait > r.maxWait || (!r.deadline.IsZero() && now.Add(wait).After(r.deadline)) {
			resp.Header = resp.Header.Clone()
			resp.Header.Set("X-Should-Retry", "false")
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 || resp.Body == nil {
		return resp, nil
	}
	body, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if rerr != nil {
		resp.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), failedRead{rerr}))
		return resp, nil
	}
	r.got, r.body, r.contentType = true, body, resp.Header.Get("Content-Type")
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// failedRead is a reader that fails with err.
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) { return 0, f.err }

// Body returns the body of the last attempt's 2xx answer ("" when there was none).
func (r *Record) Body() string { return string(r.body) }

// Fail returns the error of a call whose SDK call returned err (err as the adapter wrapped it,
// the SDK's error inside):
//
//   - a done context (err matches context.Canceled or context.DeadlineExceeded): a transient
//     CallError, with the status and wait of the last answer when there was one;
//   - no attempt made (the SDK failed before sending: a base URL it cannot use, a body it cannot
//     encode): err itself, prefixed with the provider — a plain error, permanent, like a
//     refusal before sending;
//   - a 2xx answer the SDK could not decode: a permanent CallError wrapping
//     provider.ErrMalformedResponse that shows the start of the body;
//   - an answer of status 400 or above: provider.HTTPError's classification, with the wait the
//     answer asked for;
//   - no answer (a failed connection, an attempt's timeout, a body cut off): transient.
func (r *Record) Fail(err error) error {
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return r.callError(true, err)
	case r.attempts == 0:
		return fmt.Errorf("%s: %w", r.provider, err)
	case r.got:
		reason := "the SDK could not decode it: " + err.Error()
		if mt, _, _ := mime.ParseMediaType(r.contentType); !strings.Contains(mt, "application/json") && !strings.HasSuffix(mt, "+json") {
			reason = fmt.Sprintf("content type %q is not JSON", r.contentType)
		}
		return r.Malformed(reason)
	case r.status >= 400:
		return r.callError(provider.TransientStatus(r.status), err)
	}
	return r.callError(true, err)
}

// Malformed returns the permanent CallError of a 2xx answer whose body the SDK decoded into
// nothing or into something that is not an answer of the API, for reason (turns.Malformed).
func (r *Record) Malformed(reason string) *chat.CallError {
	return r.callError(false, turns.Malformed(r.what, r.Body(), reason))
}

// Answered returns the CallError of a 2xx answer that is an answer of the API but says the call
// failed (err, which the adapter built from the answer; transient as the answer says).
func (r *Record) Answered(err error, transient bool) *chat.CallError {
	return r.callError(transient, err)
}

func (r *Record) callError(transient bool, err error) *chat.CallError {
	return &chat.CallError{Provider: r.provider, StatusCode: r.status, Transient: transient, RetryAfter: r.wait, Err: err}
}
