package provider

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/chat"
)

// DefaultMaxRetryWait is the longest wait a provider may ask for that an adapter sleeps inside
// Generate before it retries (each adapter's MaxRetryWait field changes it). An answer asking
// for a longer wait — or for a wait that would outlast the caller's context deadline — ends the
// call at once with a *chat.CallError whose RetryAfter is the wait asked for, so the caller
// schedules the retry instead of holding a worker, a lease and a connection for it.
const DefaultMaxRetryWait = 60 * time.Second

// TransientStatus reports whether an HTTP status of a model API's answer is a transient failure
// (chat.CallError.Transient): 408 Request Timeout, 409 Conflict, 429 Too Many Requests and every
// 5xx (Anthropic's 529 Overloaded included). Every other status of 400 and above is permanent.
// These are the statuses both official SDKs retry.
func TransientStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusConflict ||
		status == http.StatusTooManyRequests || status >= http.StatusInternalServerError
}

// RetryAfter returns the wait an answer's header h asks for, read at now, and whether it asks
// for one, by the rules both official SDKs apply: retry-after-ms (milliseconds, a decimal
// number) first, else Retry-After, either a number of seconds (a decimal number) or an HTTP-date
// (RFC 9110: IMF-fixdate, RFC 850 or asctime), whose wait is the date minus now. A value that is
// neither, negative, or not a number (NaN) is ignored and the next header read; a date in the past
// is a wait of 0; a wait too long for a time.Duration is the longest Duration.
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if d, ok := number(h.Get("Retry-After-Ms"), float64(time.Millisecond)); ok {
		return d, true
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if d, ok := number(v, float64(time.Second)); ok {
		return d, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(0, at.Sub(now)), true
	}
	return 0, false
}

// number reads v as a non-negative decimal number of units.
func number(v string, unit float64) (time.Duration, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if (err != nil && !math.IsInf(f, 1)) || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if d := f * unit; d < math.MaxInt64 {
		return time.Duration(d), true
	}
	return math.MaxInt64, true
}

// HTTPError returns the *chat.CallError of a model call whose API answered with status (400 or
// above) and header h: Provider provider, StatusCode status, Transient by TransientStatus,
// RetryAfter by RetryAfter (0 when the answer asks for no wait), and err, the cause. A third
// party's adapter classifies its SDK's API errors with it the way personagen's adapters do.
func HTTPError(provider string, status int, h http.Header, err error) *chat.CallError {
	wait, _ := RetryAfter(h, time.Now())
	return &chat.CallError{Provider: provider, StatusCode: status, Transient: TransientStatus(status), RetryAfter: wait, Err: err}
}
