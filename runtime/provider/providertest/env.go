package providertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/fixture"
)

// rule is one rule of the suite: its subtest name and its check.
type rule struct {
	name string
	run  func(e *env)
}

// callTimeout is the deadline of every call a rule makes: far longer than any call of the suite
// takes, so that only an adapter that sleeps or ignores its context reaches it. guard is how much
// longer the suite waits for Generate to return before it gives up on the call. The suite's own
// tests shorten both.
var (
	callTimeout = 30 * time.Second
	guard       = 15 * time.Second
)

// env is one rule's view of the adapter: its own server and adapter.
type env struct {
	t   tb
	a   Adapter
	srv *Server
	m   chat.Model
}

func runRule(t tb, a Adapter, r rule) {
	e := &env{t: t, a: a}
	defer func() {
		if e.srv != nil {
			e.srv.Close()
		}
	}()
	r.run(e)
	if e.srv != nil {
		for i, rej := range e.srv.Rejections() {
			t.Errorf("Adapter.Check refused a request the adapter sent (refusal %d): %s", i+1, rej)
		}
	}
}

// model returns the rule's adapter (Adapter.New) over its server, starting both on first use.
func (e *env) model() chat.Model {
	e.t.Helper()
	if e.m == nil {
		e.m = e.a.New(e.server().URL)
		if e.m == nil {
			e.t.Fatalf("Adapter.New returned nil")
		}
	}
	return e.m
}

func (e *env) server() *Server {
	if e.srv == nil {
		e.srv = NewServer(e.a)
	}
	return e.srv
}

// requests is the number of requests the rule's server received.
func (e *env) requests() int { return len(e.server().Bodies()) }

// settings are the model settings of the suite's requests.
func (e *env) settings() chat.ModelSettings {
	s := e.a.Settings
	if s.Name == "" {
		s.Name = "providertest-model"
	}
	return s
}

// request returns a request of msgs with the suite's settings and tools.
func (e *env) request(msgs ...chat.Message) *chat.Request {
	return &chat.Request{Model: e.settings(), Messages: msgs, Tools: slices.Clone(fixture.Definitions)}
}

// answer renders ans, skipping the rule when the API cannot express it.
func (e *env) answer(ans Answer) Reply {
	e.t.Helper()
	rep, err := e.a.render(ans)
	if errors.Is(err, errors.ErrUnsupported) {
		e.t.Skipf("the API cannot express the answer: %v", err)
	}
	if err != nil {
		e.t.Fatalf("Adapter.Answer(%+v): %v", ans, err)
	}
	return rep
}

// callContext is the context of one call: callTimeout from now.
func callContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), callTimeout)
}

// generate calls m.Generate(ctx, req) and checks what holds for every call: it returns (within
// guard after ctx's deadline), does not modify req, returns a Response only without an error,
// and a Response that a conversation can continue with. It stops the rule when the call does
// not return.
func (e *env) generate(ctx context.Context, m chat.Model, req *chat.Request) (*chat.Response, error) {
	e.t.Helper()
	before := deepCopy(req)
	type result struct {
		r     *chat.Response
		err   error
		panic any
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- result{panic: p}
			}
		}()
		r, err := m.Generate(ctx, req)
		done <- result{r: r, err: err}
	}()
	wait := callTimeout + guard
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d) + guard
	}
	var res result
	select {
	case res = <-done:
	case <-time.After(wait):
		e.t.Fatalf("Generate did not return %s after its context's deadline: it sleeps or ignores its context", guard)
	}
	if res.panic != nil {
		e.t.Fatalf("Generate panicked: %v", res.panic)
	}
	if !reflect.DeepEqual(before, req) {
		e.t.Errorf("Generate modified the request: before %s\nafter  %s", show(before), show(req))
	}
	if res.err != nil {
		if res.r != nil {
			e.t.Errorf("Generate returned a Response (%+v) with its error %v; a Response comes only with a nil error", res.r, res.err)
		}
		return nil, res.err
	}
	if res.r == nil {
		e.t.Fatalf("Generate returned neither a Response nor an error")
	}
	e.checkResponse(req, res.r)
	return res.r, nil
}

// checkResponse checks what every Response holds: an assistant message without tool-result
// fields, tool calls with ids unique and non-empty, names, and JSON object inputs — a message
// the conversation can continue with — and the request id when the API names requests.
func (e *env) checkResponse(req *chat.Request, r *chat.Response) {
	e.t.Helper()
	m := r.Message
	if m.Role != chat.RoleAssistant || m.ToolCallID != "" || m.IsError {
		e.t.Errorf("Response.Message has role %q, tool call id %q, is_error %v; want an assistant message without tool-result fields", m.Role, m.ToolCallID, m.IsError)
	}
	for i, c := range m.ToolCalls {
		in := strings.TrimSpace(string(c.Input))
		if c.Name == "" || !json.Valid(c.Input) || !strings.HasPrefix(in, "{") {
			e.t.Errorf("tool call %d (%s) has name %q and input %s; want a name and a JSON object (chat.ToolCallFromArguments keeps other arguments)", i, c.ID, c.Name, c.Input)
		}
	}
	next := append(slices.Clone(req.Messages), m)
	for _, c := range m.ToolCalls {
		next = append(next, chat.ToolMessage(c.ID, "done"))
	}
	if err := chat.Validate(next); err != nil {
		e.t.Errorf("the conversation cannot continue with the answer's tool calls %+v and their results: %v", m.ToolCalls, err)
	}
	if h := e.a.RequestIDHeader; h != "" && !strings.HasPrefix(r.RequestID, "req_") {
		e.t.Errorf("Response.RequestID = %q, want the %s header the server sent (req_<n>)", r.RequestID, h)
	}
}

// callError returns err's *chat.CallError, failing the rule when it has none.
func (e *env) callError(err error) *chat.CallError {
	e.t.Helper()
	var ce *chat.CallError
	if !errors.As(err, &ce) {
		e.t.Errorf("err = %v (%T), want a *chat.CallError", err, err)
		return nil
	}
	return ce
}

// expectCallError checks that err is a *chat.CallError with exactly want's Provider (the
// adapter's), StatusCode, Transient and RetryAfter.
func (e *env) expectCallError(what string, err error, want chat.CallError) *chat.CallError {
	e.t.Helper()
	if err == nil {
		e.t.Errorf("%s: no error, want %s", what, describe(want))
		return nil
	}
	ce := e.callError(err)
	if ce == nil {
		return nil
	}
	want.Provider = e.a.Provider
	if ce.Provider != want.Provider || ce.StatusCode != want.StatusCode || ce.Transient != want.Transient || ce.RetryAfter != want.RetryAfter {
		e.t.Errorf("%s: got %s, want %s (%v)", what, describe(*ce), describe(want), err)
	}
	return ce
}

func describe(c chat.CallError) string {
	return fmt.Sprintf("CallError{Provider: %q, StatusCode: %d, Transient: %v, RetryAfter: %s}", c.Provider, c.StatusCode, c.Transient, c.RetryAfter)
}

// expectRequests checks that the rule's server received n requests so far.
func (e *env) expectRequests(what string, n int) {
	e.t.Helper()
	if got := e.requests(); got != n {
		e.t.Errorf("%s: the server received %d requests, want %d", what, got, n)
	}
}

// show renders a request for a failure message.
func show(req *chat.Request) string {
	b, err := json.Marshal(req)
	if err != nil {
		return fmt.Sprintf("%+v", *req)
	}
	return string(b)
}

// deepCopy returns a copy of req that shares no memory with it.
func deepCopy(req *chat.Request) *chat.Request {
	if req == nil {
		return nil
	}
	return copyValue(reflect.ValueOf(req)).Interface().(*chat.Request)
}

func copyValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Elem().Type())
		c.Elem().Set(copyValue(v.Elem()))
		return c
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(copyValue(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			c.SetMapIndex(it.Key(), copyValue(it.Value()))
		}
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type()).Elem()
		c.Set(copyValue(v.Elem()))
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			if c.Field(i).CanSet() {
				c.Field(i).Set(copyValue(v.Field(i)))
			}
		}
		return c
	}
	return v
}
