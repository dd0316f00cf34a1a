package provider_test

import (
	"context"
	"errors"
	"testing"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaiopt "github.com/openai/openai-go/v3/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/openai"
)

// adapter builds one of the three adapters over a strict server, with the SDK's default
// retries (2) unless noRetries, and MaxRetryWait maxWait.
type adapter struct {
	name  string
	api   strict.API
	build func(baseURL string, maxWait time.Duration, noRetries bool) chat.Model
}

var adapters = []adapter{
	{provider.Anthropic, strict.Anthropic, func(baseURL string, maxWait time.Duration, noRetries bool) chat.Model {
		opts := []anthropicopt.RequestOption{anthropicopt.WithoutEnvironmentDefaults(), anthropicopt.WithBaseURL(baseURL), anthropicopt.WithAPIKey("k")}
		if noRetries {
			opts = append(opts, anthropicopt.WithMaxRetries(0))
		}
		m := anthropic.New(opts...)
		m.MaxRetryWait = maxWait
		return m
	}},
	{provider.OpenAI, strict.Chat, func(baseURL string, maxWait time.Duration, noRetries bool) chat.Model {
		m := openai.NewChat(openaiOptions(baseURL, noRetries)...)
		m.MaxRetryWait = maxWait
		return m
	}},
	{provider.OpenAIResponses, strict.Responses, func(baseURL string, maxWait time.Duration, noRetries bool) chat.Model {
		m := openai.NewResponses(openaiOptions(baseURL, noRetries)...)
		m.MaxRetryWait = maxWait
		return m
	}},
}

func openaiOptions(baseURL string, noRetries bool) []openaiopt.RequestOption {
	opts := []openaiopt.RequestOption{openaiopt.WithBaseURL(baseURL + "/v1"), openaiopt.WithAPIKey("k")}
	if noRetries {
		opts = append(opts, openaiopt.WithMaxRetries(0))
	}
	return opts
}

func rateLimited(api strict.API, status int, header map[string]string) strict.Reply {
	return strict.Reply{Status: status, Header: header, Body: string(strict.ErrorBody(api, "rate_limit_error", "", "slow down"))}
}

// TestRetryWaitsBeyondTheCapAreNotSlept drives each adapter's SDK client against its strict
// server with the SDK's own retries on. A wait longer than the cap or than the time left before
// the caller's deadline ends the call after one request with the transient CallError carrying
// the wait (an adapter that slept would retry and get the server's default answer, so the
// request count catches it); shorter waits are slept and retried by the SDK as before.
func TestRetryWaitsBeyondTheCapAreNotSlept(t *testing.T) {
	type want struct {
		requests int
		err      *chat.CallError // nil: the call succeeds
	}
	tests := []struct {
		name      string
		maxWait   time.Duration
		noRetries bool
		deadline  time.Duration
		replies   func(api strict.API) []strict.Reply
		want      want
	}{
		{"a wait over the default cap of 60 s", 0, false, 10 * time.Minute,
			func(api strict.API) []strict.Reply {
				return []strict.Reply{rateLimited(api, 429, map[string]string{"Retry-After": "61"})}
			},
			want{1, &chat.CallError{StatusCode: 429, Transient: true, RetryAfter: 61 * time.Second}}},
		{"a wait over a cap of 300 ms", 300 * time.Millisecond, false, time.Minute,
			func(api strict.API) []strict.Reply {
				return []strict.Reply{rateLimited(api, 503, map[string]string{"Retry-After": "2"})}
			},
			want{1, &chat.CallError{StatusCode: 503, Transient: true, RetryAfter: 2 * time.Second}}},
		{"an hour's wait with a minute's deadline", 0, false, time.Minute,
			func(api strict.API) []strict.Reply {
				return []strict.Reply{rateLimited(api, 429, map[string]string{"Retry-After": "3600"})}
			},
			want{1, &chat.CallError{StatusCode: 429, Transient: true, RetryAfter: time.Hour}}},
		{"a wait within the cap that outlasts the deadline", 0, false, 3 * time.Second,
			func(api strict.API) []strict.Reply {
				return []strict.Reply{rateLimited(api, 429, map[string]string{"Retry-After": "10"})}
			},
			want{1, &chat.CallError{StatusCode: 429, Transient: true, RetryAfter: 10 * time.Second}}},
		{"a negative cap sleeps no wait", -1, false, time.Minute,
			func(api strict.API) []strict.Reply {
				return []strict.Reply{rateLimited(api, 429, map[string]string{"Retry-After-Ms": "5"})}
			},
			want{1, &chat.CallError{StatusCode: 429, Transient: true, RetryAfter: 5 * time.Millisecond}}},
		{"short waits slept and retried", 0, false, time.Minute,
			func(api strict.API) []strict.Reply {
				r := rateLimited(api, 429, map[string]string{"Retry-After-Ms": "5"})
				return []strict.Reply{r, r}
			},
			want{3, nil}},
		{"retries exhausted: the last answer's wait", 0, false, time.Minute,
			func(api strict.API) []strict.Reply {
				r := rateLimited(api, 503, map[string]string{"Retry-After-Ms": "5"})
				return []strict.Reply{r, r, r}
			},
			want{3, &chat.CallError{StatusCode: 503, Transient: true, RetryAfter: 5 * time.Millisecond}}},
		{"a dropped connection retried", 0, false, time.Minute,
			func(strict.API) []strict.Reply { return []strict.Reply{{Drop: true}} },
			want{2, nil}},
		{"the host's retry count holds", 0, true, time.Minute,
			func(api strict.API) []strict.Reply { return []strict.Reply{rateLimited(api, 503, nil)} },
			want{1, &chat.CallError{StatusCode: 503, Transient: true}}},
	}
	for _, a := range adapters {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				srv := strict.New(t, a.api)
				srv.Queue(tt.replies(a.api)...)
				m := a.build(srv.URL, tt.maxWait, tt.noRetries)
				ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
				defer cancel()
				r, err := m.Generate(ctx, &chat.Request{Model: chat.ModelSettings{Name: "m"}, Messages: []chat.Message{chat.UserMessage("Where is A-17?")}})
				if errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("the call slept until its deadline: %v", err)
				}
				if n := len(srv.Bodies()); n != tt.want.requests {
					t.Errorf("%d requests, want %d", n, tt.want.requests)
				}
				if tt.want.err == nil {
					if err != nil || r.Message.Text != "OK." {
						t.Fatalf("got %+v, %v; want the answer", r, err)
					}
					return
				}
				var ce *chat.CallError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a *chat.CallError", err)
				}
				want := *tt.want.err
				want.Provider, want.Err = a.name, ce.Err
				if *ce != want {
					t.Errorf("CallError = %+v\nwant        %+v", *ce, want)
				}
			})
		}
	}
}

// TestCallErrorText pins how a call error reads: the provider, the status, the class and the
// wait, then the SDK's error with what the API said.
func TestCallErrorText(t *testing.T) {
	for _, a := range adapters {
		srv := strict.New(t, a.api)
		srv.Queue(rateLimited(a.api, 429, map[string]string{"Retry-After": "61"}))
		_, err := a.build(srv.URL, 0, true).Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "m"}, Messages: []chat.Message{chat.UserMessage("hi")}})
		want := map[string]string{
			provider.Anthropic:       `anthropic: status 429 (transient, retry after 1m1s): POST "` + srv.URL + `/v1/messages": 429 Too Many Requests (Request-ID: req_1) {"error":{"message":"slow down","type":"rate_limit_error"},"type":"error"}`,
			provider.OpenAI:          `openai: status 429 (transient, retry after 1m1s): OpenAI API error: 429 Too Many Requests (slow down)`,
			provider.OpenAIResponses: `openai-responses: status 429 (transient, retry after 1m1s): OpenAI API error: 429 Too Many Requests (slow down)`,
		}[a.name]
		if err == nil || err.Error() != want {
			t.Errorf("%s: err = %v\nwant %s", a.name, err, want)
		}
	}
}
