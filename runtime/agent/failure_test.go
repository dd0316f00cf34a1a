package agent_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/store"
)

func TestClassifyNamesEveryStop(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Unix(0, 0))
	defer cancel2()
	lost, cancel3 := context.WithCancelCause(live)
	cancel3(fmt.Errorf("renew: %w", store.ErrLeaseLost))
	transient := func(c store.FailureClass) agent.Verdict { return agent.Verdict{Class: c, Record: true} }
	fault := func(c store.FailureClass) agent.Verdict { return agent.Verdict{Class: c, Record: true, Fault: true} }
	final := func(c store.FailureClass) agent.Verdict { return agent.Verdict{Class: c, Record: true, Final: true} }
	call := func(status int, transient bool, after time.Duration, err error) error {
		return fmt.Errorf("generate: %w", &chat.CallError{Provider: "anthropic", StatusCode: status, Transient: transient, RetryAfter: after, Err: err})
	}
	step := func(err error) error { return &runtime.StepError{Index: 2, Kind: "load_record", Err: err} }
	for _, c := range []struct {
		name  string
		ctx   context.Context
		err   error
		model bool // the error is a model adapter's
		want  agent.Verdict
	}{
		{"a graceful stop", cancelled, fmt.Errorf("model: %w", context.Canceled), true, transient(store.FailureShutdown)},
		{"a graceful stop while a store write ran", cancelled, errors.New("store: read run: broken pipe"), false, transient(store.FailureShutdown)},
		{"the attempt's deadline", expired, context.DeadlineExceeded, true, transient(store.FailureTimeout)},
		{"a lease lost while working", lost, context.Canceled, false, agent.Verdict{}},
		{"a write refused because the run was taken over", live, fmt.Errorf("x: %w", store.ErrLeaseLost), false, agent.Verdict{}},
		{"a write refused because the run finished elsewhere", live, fmt.Errorf("x: %w", store.ErrRunFinished), false, agent.Verdict{}},
		{"a 429 with a retry time", live, call(429, true, 2*time.Second, errors.New("rate limited")), true,
			agent.Verdict{Class: store.FailureModelUnavailable, RetryAfter: 2 * time.Second, Record: true}},
		{"a 529 without one", live, call(529, true, 0, errors.New("overloaded")), true, transient(store.FailureModelUnavailable)},
		{"a model network error", live, call(0, true, 0, &net.OpError{Op: "dial", Err: errors.New("connection refused")}), true,
			transient(store.FailureModelUnavailable)},
		{"a 400", live, call(400, false, 0, errors.New("bad request")), true, final(store.FailureRequestRefused)},
		{"a 401", live, call(401, false, 0, errors.New("invalid x-api-key")), true, final(store.FailureRequestRefused)},
		{"a 404", live, call(404, false, 0, errors.New("model not found")), true, final(store.FailureRequestRefused)},
		{"an adapter's refusal before sending", live, errors.New("openai: top_k is not supported"), true, final(store.FailureRequestRefused)},
		{"a model adapter's network error without a CallError", live, &net.OpError{Op: "read", Err: errors.New("reset")}, true,
			transient(store.FailureUnavailable)},
		{"a 400 that says the context window", live, call(400, false, 0, chat.ErrContextWindow), true, final(store.FailureContextWindow)},
		{"a malformed answer", live, call(200, false, 0, provider.ErrMalformedResponse), true, final(store.FailureInvalidAnswer)},
		{"the turn limit", live, fmt.Errorf("%w (16 model calls)", agent.ErrMaxTurns), false, final(store.FailureMaxTurns)},
		{"no answer", live, fmt.Errorf("%w (stop reason %q)", agent.ErrNoAnswer, "refusal"), false, final(store.FailureNoAnswer)},
		{"a refused answer", live, fmt.Errorf("%w: 101 calls", agent.ErrInvalidAnswer), false, final(store.FailureInvalidAnswer)},
		{"a lost database connection", live, fmt.Errorf("store: start turn: %w", driver.ErrBadConn), false, transient(store.FailureUnavailable)},
		{"MySQL's invalid connection", live, mysql.ErrInvalidConn, false, transient(store.FailureUnavailable)},
		{"a deadlock that outlasted the retries", live, &mysql.MySQLError{Number: 1213}, false, transient(store.FailureUnavailable)},
		{"a read-only server in a failover", live, &mysql.MySQLError{Number: 1290}, false, transient(store.FailureUnavailable)},
		{"a resolver's database down", live, step(driver.ErrBadConn), false, transient(store.FailureUnavailable)},
		{"a resolver's network timeout", live, step(&net.DNSError{Err: "i/o timeout", IsTimeout: true}), false, transient(store.FailureTimeout)},
		{"a resolver's own deadline", live, step(context.DeadlineExceeded), false, transient(store.FailureTimeout)},
		{"a duplicate key, which no retry fixes", live, &mysql.MySQLError{Number: 1062}, false, fault(store.FailureUnclassified)},
		{"a resolver's own error", live, step(errors.New("no such customer")), false, fault(store.FailureUnclassified)},
		{"a resolver's own cancellation, not the attempt's", live, step(context.Canceled), false, fault(store.FailureUnclassified)},
	} {
		if got := agent.Classify(c.ctx, c.err, c.model); got != c.want {
			t.Errorf("%s: %v = %+v, want %+v", c.name, c.err, got, c.want)
		}
	}
}

func TestRunErrorSaysWhetherTheRunFailedOrStopped(t *testing.T) {
	cause := errors.New("overloaded")
	for _, c := range []struct {
		err  agent.RunError
		want string
	}{
		{agent.RunError{Key: "k", Class: store.FailureInvalidAnswer, Final: true, Err: cause},
			`agent: run "k" failed (invalid_answer): overloaded`},
		{agent.RunError{Key: "k", Class: store.FailureModelUnavailable, Err: cause},
			`agent: run "k" stopped (model_unavailable; resumable now): overloaded`},
		{agent.RunError{Key: "k", Class: store.FailureModelUnavailable, RetryAt: time.Date(2026, 3, 6, 15, 0, 0, 0, time.UTC), Err: cause},
			`agent: run "k" stopped (model_unavailable; resumable from 2026-03-06T15:00:00Z): overloaded`},
	} {
		if got := c.err.Error(); got != c.want || !errors.Is(&c.err, cause) {
			t.Errorf("Error() = %s\nwant %s", got, c.want)
		}
	}
}
