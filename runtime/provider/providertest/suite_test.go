package providertest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/providertest"
)

// broken wraps the local adapter and breaks one rule in what Generate does.
type broken struct {
	inner    chat.Model
	generate func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error)
}

func (b broken) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	return b.generate(b.inner, ctx, req)
}

// rewrap returns err's CallError changed by f, as a new error.
func rewrap(err error, f func(*chat.CallError)) error {
	var ce *chat.CallError
	if !errors.As(err, &ce) {
		return err
	}
	c := *ce
	f(&c)
	return &c
}

// failedRules returns the rules Check reports broken, in order.
func failedRules(err error) []string {
	var out []string
	if err == nil {
		return nil
	}
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		name, _, _ := strings.Cut(e.Error(), ": ")
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// Each broken adapter fails the rules it breaks, so the suite cannot pass a wrong adapter.
func TestSuiteCatchesBrokenAdapters(t *testing.T) {
	defer providertest.SetTimeouts(time.Second, 250*time.Millisecond)()
	cases := []struct {
		name     string
		generate func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error)
		retrying bool // the broken adapter is NewRetrying's
		want     []string
	}{
		{"modifies the request", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			if len(req.Messages) == 1 { // not the shared request of concurrent_calls_share_a_request, which -race would flag
				req.Messages[0].Text += " (seen)"
			}
			return r, err
		}, false, []string{"text_answer", "refusal", "only_a_system_prompt"}},
		{"returns plain errors", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			if err != nil {
				return nil, errors.New(err.Error())
			}
			return r, nil
		}, false, []string{"error_statuses_classified", "retry_wait_read_from_the_answer", "no_answer_is_transient",
			"malformed_answers_are_permanent", "cancelled_while_waiting", "deadline_while_waiting", "cancelled_before_the_call"}},
		{"calls every failure transient", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			return r, rewrap(err, func(c *chat.CallError) { c.Transient = true })
		}, false, []string{"error_statuses_classified", "malformed_answers_are_permanent"}},
		{"loses the retry wait", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			return r, rewrap(err, func(c *chat.CallError) { c.RetryAfter = 0 })
		}, false, []string{"retry_wait_read_from_the_answer"}},
		{"reads Retry-After in milliseconds", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			return r, rewrap(err, func(c *chat.CallError) { c.RetryAfter /= 1000 })
		}, false, []string{"retry_wait_read_from_the_answer"}},
		{"ignores its context", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			return m.Generate(context.WithoutCancel(ctx), req)
		}, false, []string{"cancelled_while_waiting", "deadline_while_waiting", "cancelled_before_the_call"}},
		{"drops tool calls", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			if r != nil {
				r.Message.ToolCalls = nil
			}
			return r, err
		}, false, []string{"parallel_tool_calls_and_their_results", "text_beside_a_tool_call", "invalid_arguments_kept_and_flagged", "replayed_thread"}},
		{"forgets the cache in the usage", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			if r != nil {
				r.Usage.InputTokens -= r.Usage.CacheReadTokens + r.Usage.CacheWriteTokens
			}
			return r, err
		}, false, []string{"usage_counts_cached_input"}},
		{"moves its cache markers one message on", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			if req.Cache == nil {
				return m.Generate(ctx, req)
			}
			cp, plan := *req, *req.Cache
			plan.Breakpoints = nil
			for _, b := range req.Cache.Breakpoints {
				b.End++
				plan.Breakpoints = append(plan.Breakpoints, b)
			}
			cp.Cache = &plan
			return m.Generate(ctx, &cp)
		}, false, []string{"cache_plan"}},
		{"maps max_tokens to end_turn", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			if r != nil && r.StopReason == chat.StopMaxTokens {
				r.StopReason = chat.StopEndTurn
			}
			return r, err
		}, false, []string{"max_tokens"}},
		{"sends what Validate refuses", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			if chat.Validate(req.Messages) != nil {
				return nil, &chat.CallError{Provider: "local", StatusCode: 400, Err: errors.New("refused by the API")}
			}
			return m.Generate(ctx, req)
		}, false, []string{"invalid_conversations_refused_before_sending"}},
		{"returns a response with its error", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			if err != nil {
				return &chat.Response{Message: chat.AssistantMessage("")}, err
			}
			return r, nil
		}, false, []string{"error_statuses_classified"}},
		{"answers as a user", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			if r != nil {
				r.Message.Role = chat.RoleUser
			}
			return r, err
		}, false, []string{"text_answer", "generated_conversations"}},
		{"retries every wait", func(m chat.Model, ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := m.Generate(ctx, req)
			var ce *chat.CallError
			if errors.As(err, &ce) && ce.RetryAfter > 0 {
				time.Sleep(min(ce.RetryAfter, 10*time.Millisecond)) // a shortened sleep of the wait
				return m.Generate(ctx, req)
			}
			return r, err
		}, true, []string{"long_retry_wait_not_slept"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := localAdapter()
			inner := a.New
			if c.retrying {
				a.NewRetrying = func(baseURL string, _ time.Duration) chat.Model {
					return broken{inner: inner(baseURL), generate: c.generate}
				}
			} else {
				a.New = func(baseURL string) chat.Model { return broken{inner: inner(baseURL), generate: c.generate} }
			}
			failed := failedRules(providertest.Check(a))
			for _, rule := range c.want {
				if !slices.Contains(failed, rule) {
					t.Errorf("rule %s passed an adapter that breaks it; failed rules: %s", rule, strings.Join(failed, ", "))
				}
			}
		})
	}
}

// A correct adapter fails none, and the retry rules pass one that leaves short waits to a retry
// and returns long ones.
func TestSuitePassesACorrectAdapter(t *testing.T) {
	a := localAdapter()
	a.NewRetrying = func(baseURL string, maxWait time.Duration) chat.Model {
		inner := a.New(baseURL)
		return chat.ModelFunc(func(ctx context.Context, req *chat.Request) (*chat.Response, error) {
			r, err := inner.Generate(ctx, req)
			var ce *chat.CallError
			if errors.As(err, &ce) && ce.Transient && ce.RetryAfter <= maxWait {
				time.Sleep(ce.RetryAfter)
				return inner.Generate(ctx, req)
			}
			return r, err
		})
	}
	if err := providertest.Check(a); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// Run and Check refuse an Adapter without what the suite needs, saying which field to set.
func TestAdapterWithoutRequiredFieldsIsRefused(t *testing.T) {
	err := providertest.Check(providertest.Adapter{})
	for _, want := range []string{"Adapter.Provider is empty", "Adapter.New is nil", "Adapter.Answer is nil"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
}

// The server counts every request, answers queued replies in order and the adapter's text
// answer after them, and refuses requests Check refuses with the adapter's error body.
func TestServerAnswersInOrderAndRefusesWhatCheckRefuses(t *testing.T) {
	a := localAdapter()
	srv := providertest.NewServer(a)
	defer srv.Close()
	srv.Queue(providertest.Reply{Status: 503, Header: map[string]string{"Retry-After": "2"}, Body: `{"error":{"message":"busy"}}`})
	m := a.New(srv.URL)
	ctx := context.Background()
	req := &chat.Request{Messages: []chat.Message{chat.UserMessage("hi")}}
	_, err := m.Generate(ctx, req)
	var ce *chat.CallError
	if !errors.As(err, &ce) || ce.StatusCode != 503 || ce.RetryAfter != 2*time.Second || !ce.Transient {
		t.Fatalf("first call: err = %v", err)
	}
	r, err := m.Generate(ctx, req)
	if err != nil || r.Message.Text != "OK." || r.Usage != (chat.Usage{InputTokens: 10, OutputTokens: 5}) {
		t.Fatalf("second call: %+v, %v", r, err)
	}
	bad := localAdapter()
	bad.Check = func(*http.Request, []byte) error { return errors.New("messages.0: blank text") }
	bsrv := providertest.NewServer(bad)
	defer bsrv.Close()
	_, err = bad.New(bsrv.URL).Generate(ctx, req)
	if !errors.As(err, &ce) || ce.StatusCode != 400 || ce.Transient || !strings.Contains(err.Error(), `{"error":{"message":"messages.0: blank text","type":"error"}}`) {
		t.Errorf("refused call: err = %v", err)
	}
	if n, rej := len(srv.Bodies()), bsrv.Rejections(); n != 2 || len(rej) != 1 || rej[0] != "messages.0: blank text" {
		t.Errorf("%d requests, rejections %q", n, rej)
	}
}
