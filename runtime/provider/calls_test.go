package provider

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
)

var now = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func TestRetryAfterReadsTheSDKsHeaders(t *testing.T) {
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3600"}, time.Hour, true},
		{"fractional seconds", map[string]string{"Retry-After": "2.5"}, 2500 * time.Millisecond, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"white space around", map[string]string{"Retry-After": " 7 "}, 7 * time.Second, true},
		{"milliseconds", map[string]string{"Retry-After-Ms": "1500"}, 1500 * time.Millisecond, true},
		{"milliseconds first", map[string]string{"Retry-After-Ms": "250", "Retry-After": "7"}, 250 * time.Millisecond, true},
		{"bad milliseconds fall back to seconds", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "7"}, 7 * time.Second, true},
		{"negative milliseconds fall back", map[string]string{"Retry-After-Ms": "-5", "Retry-After": "1"}, time.Second, true},
		{"IMF-fixdate", map[string]string{"Retry-After": "Mon, 02 Mar 2026 11:00:00 GMT"}, 2 * time.Hour, true},
		{"RFC 850 date", map[string]string{"Retry-After": "Monday, 02-Mar-26 09:00:30 GMT"}, 30 * time.Second, true},
		{"asctime date", map[string]string{"Retry-After": "Mon Mar  2 09:01:00 2026"}, time.Minute, true},
		{"a date in the past", map[string]string{"Retry-After": "Mon, 02 Mar 2026 08:00:00 GMT"}, 0, true},
		{"not a number or a date", map[string]string{"Retry-After": "soon"}, 0, false},
		{"negative seconds", map[string]string{"Retry-After": "-1"}, 0, false},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0, false},
		{"infinite", map[string]string{"Retry-After": "Inf"}, math.MaxInt64, true},
		{"too long for a Duration", map[string]string{"Retry-After": "1e300"}, math.MaxInt64, true},
		{"overflowing float", map[string]string{"Retry-After-Ms": "1e400"}, math.MaxInt64, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := RetryAfter(h, now)
			if got != tt.want || ok != tt.ok {
				t.Errorf("RetryAfter = %s, %v; want %s, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// FuzzRetryAfter holds that any header values give a wait that is never negative, 0 when the
// answer asks for none, and for a number of milliseconds exactly that number.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"1500", ""}, {"", "3600"}, {"x", "Mon, 02 Mar 2026 11:00:00 GMT"}, {"-0", "1e9"}, {"0x10", "+Inf"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, ms, seconds string) {
		h := http.Header{}
		h.Set("Retry-After-Ms", ms)
		h.Set("Retry-After", seconds)
		d, ok := RetryAfter(h, now)
		if d < 0 || (!ok && d != 0) {
			t.Fatalf("RetryAfter(%q, %q) = %s, %v", ms, seconds, d, ok)
		}
		if v, err := strconv.ParseFloat(h.Get("Retry-After-Ms"), 64); err == nil && v >= 0 && v*1e6 < math.MaxInt64 {
			if want := time.Duration(v * float64(time.Millisecond)); !ok || d != want {
				t.Fatalf("RetryAfter(%q, %q) = %s, %v; want %s", ms, seconds, d, ok, want)
			}
		}
	})
}

func TestTransientStatus(t *testing.T) {
	transient := map[int]bool{408: true, 409: true, 429: true}
	for status := 400; status < 600; status++ {
		want := transient[status] || status >= 500
		if got := TransientStatus(status); got != want {
			t.Errorf("TransientStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestHTTPError(t *testing.T) {
	cause := errors.New("slow down")
	h := http.Header{}
	h.Set("Retry-After", "30")
	got := HTTPError("gemini", 429, h, cause)
	if want := (chat.CallError{Provider: "gemini", StatusCode: 429, Transient: true, RetryAfter: 30 * time.Second, Err: cause}); *got != want {
		t.Errorf("HTTPError = %+v, want %+v", *got, want)
	}
	if got := HTTPError("gemini", 403, nil, cause); got.Transient || got.RetryAfter != 0 || !errors.Is(got, cause) ||
		got.Error() != "gemini: status 403 (permanent): slow down" {
		t.Errorf("HTTPError(403) = %+v (%v)", *got, got)
	}
}
