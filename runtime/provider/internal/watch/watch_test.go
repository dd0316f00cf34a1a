package watch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
)

// answer returns a next that answers with status, header and body.
func answer(status int, header map[string]string, body io.Reader) func(*http.Request) (*http.Response, error) {
	return func(*http.Request) (*http.Response, error) {
		h := http.Header{}
		for k, v := range header {
			h.Set(k, v)
		}
		return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(body)}, nil
	}
}

func TestMiddlewareStopsTheSDKFromSleepingLongWaits(t *testing.T) {
	tests := []struct {
		name     string
		maxWait  time.Duration
		deadline time.Duration // 0: none
		header   map[string]string
		stop     bool
		wait     time.Duration
	}{
		{"no wait asked", time.Minute, 0, nil, false, 0},
		{"a wait within the cap", time.Minute, 0, map[string]string{"Retry-After": "60"}, false, time.Minute},
		{"a wait over the cap", time.Minute, 0, map[string]string{"Retry-After": "61"}, true, 61 * time.Second},
		{"milliseconds over the cap", time.Second, 0, map[string]string{"Retry-After-Ms": "1001"}, true, 1001 * time.Millisecond},
		{"a wait past the deadline", time.Minute, 10 * time.Second, map[string]string{"Retry-After": "30"}, true, 30 * time.Second},
		{"a wait before the deadline", time.Minute, time.Hour, map[string]string{"Retry-After": "30"}, false, 30 * time.Second},
		{"no wait slept at all", -1, 0, map[string]string{"Retry-After-Ms": "1"}, true, time.Millisecond},
		{"a zero wait with no wait slept", -1, 0, map[string]string{"Retry-After": "0"}, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadline)
				defer cancel()
			}
			r := Start(ctx, "anthropic", "a Messages API message", tt.maxWait)
			var sent http.Header
			resp, err := r.Middleware(nil, func(req *http.Request) (*http.Response, error) {
				res, err := answer(429, tt.header, strings.NewReader(`{}`))(req)
				sent = res.Header
				return res, err
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Header.Get("X-Should-Retry") == "false"; got != tt.stop {
				t.Errorf("x-should-retry false = %v, want %v", got, tt.stop)
			}
			if sent.Get("X-Should-Retry") != "" {
				t.Errorf("the answer's own header map was changed: %v", sent)
			}
			if r.wait != tt.wait || r.status != 429 || r.attempts != 1 {
				t.Errorf("recorded wait %s, status %d, %d attempts", r.wait, r.status, r.attempts)
			}
		})
	}
}

type brokenBody struct{ io.Reader }

func (brokenBody) Close() error { return nil }

var errCut = errors.New("connection reset")

func TestMiddlewareKeepsTheBodyAndPassesAReadFailureOn(t *testing.T) {
	ctx := context.Background()
	a := Start(ctx, "openai", "a chat completion", 0)
	resp, err := a.Middleware(nil, answer(200, map[string]string{"Content-Type": "text/html"}, strings.NewReader("<html>")))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := io.ReadAll(resp.Body); string(got) != "<html>" || !a.got || a.Body() != "<html>" {
		t.Errorf("SDK reads %q; kept %v %q", got, a.got, a.Body())
	}
	merr := a.Fail(errors.New("sdk"))
	var ce *chat.CallError
	if !errors.As(merr, &ce) || !errors.Is(merr, provider.ErrMalformedResponse) || ce.Transient || ce.StatusCode != 200 ||
		merr.Error() != `openai: status 200 (permanent): malformed model answer: the body is not a chat completion (content type "text/html" is not JSON); body "<html>"` {
		t.Errorf("Fail = %v", merr)
	}

	b := Start(ctx, "openai", "a chat completion", 0)
	resp, err = b.Middleware(nil, func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: brokenBody{io.MultiReader(strings.NewReader(`{"id":`), failedRead{errCut})}}, nil
	})
	if err != nil {
		t.Fatalf("a read failure became a failed attempt: %v", err)
	}
	if _, rerr := io.ReadAll(resp.Body); !errors.Is(rerr, errCut) || b.got {
		t.Errorf("SDK read err = %v, kept an answer: %v", rerr, b.got)
	}
	if err := b.Fail(errCut); !errors.As(err, &ce) || !ce.Transient || ce.StatusCode != 200 || errors.Is(err, provider.ErrMalformedResponse) {
		t.Errorf("a body cut off: Fail = %v, want a transient CallError, not a malformed answer", err)
	}
}

func TestFailClassifiesTheLastAttempt(t *testing.T) {
	sdkErr := errors.New("sdk error")
	tests := []struct {
		name     string
		attempts []func(*http.Request) (*http.Response, error)
		err      error
		want     *chat.CallError // nil: a plain error
	}{
		{"nothing sent", nil, sdkErr, nil},
		{"a refusal", []func(*http.Request) (*http.Response, error){answer(400, nil, strings.NewReader(`{}`))}, sdkErr,
			&chat.CallError{StatusCode: 400}},
		{"a rate limit with its wait", []func(*http.Request) (*http.Response, error){answer(429, map[string]string{"Retry-After": "3600"}, strings.NewReader(`{}`))}, sdkErr,
			&chat.CallError{StatusCode: 429, Transient: true, RetryAfter: time.Hour}},
		{"an overloaded API", []func(*http.Request) (*http.Response, error){answer(529, nil, strings.NewReader(`{}`))}, sdkErr,
			&chat.CallError{StatusCode: 529, Transient: true}},
		{"no answer after an answer", []func(*http.Request) (*http.Response, error){
			answer(503, map[string]string{"Retry-After": "1"}, strings.NewReader(`{}`)),
			func(*http.Request) (*http.Response, error) { return nil, errCut },
		}, errCut, &chat.CallError{Transient: true}},
		{"cancelled while the SDK slept a wait", []func(*http.Request) (*http.Response, error){answer(429, map[string]string{"Retry-After": "2"}, strings.NewReader(`{}`))},
			context.Canceled, &chat.CallError{StatusCode: 429, Transient: true, RetryAfter: 2 * time.Second}},
		{"a deadline before anything was sent", nil, context.DeadlineExceeded, &chat.CallError{Transient: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Start(context.Background(), "anthropic", "a Messages API message", 0)
			for _, next := range tt.attempts {
				_, _ = r.Middleware(nil, next)
			}
			err := r.Fail(tt.err)
			if !errors.Is(err, tt.err) {
				t.Errorf("err = %v does not wrap %v", err, tt.err)
			}
			var ce *chat.CallError
			if tt.want == nil {
				if errors.As(err, &ce) || err.Error() != "anthropic: sdk error" {
					t.Errorf("err = %v, want the plain error %q", err, "anthropic: sdk error")
				}
				return
			}
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a *chat.CallError", err)
			}
			want := *tt.want
			want.Provider, want.Err = "anthropic", tt.err
			if *ce != want {
				t.Errorf("CallError = %+v\nwant        %+v", *ce, want)
			}
		})
	}
}

func TestMaxWait(t *testing.T) {
	for field, want := range map[time.Duration]time.Duration{0: provider.DefaultMaxRetryWait, time.Second: time.Second, -1: -1} {
		if got := MaxWait(field); got != want {
			t.Errorf("MaxWait(%s) = %s, want %s", field, got, want)
		}
	}
}
