package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/store"
)

// MaxFaults is how many faults a run may have: an attempt that panicked (in a resolver, the
// model adapter, Compose, the runner itself), a worker that died holding the run (counted when
// another attempt resumes it), or an attempt stopped by an error of no known class
// (store.FailureUnclassified). The run fails at its MaxFaults-th fault, with that fault's class
// (store.FailureCrashed or store.FailureUnclassified), and is not tried again: a message that
// kills its worker, or keeps failing in a way nobody classified, ends instead of being retried
// forever.
const MaxFaults = 3

// ErrTooManyFaults is returned (wrapped) when a run failed at its MaxFaults-th fault.
var ErrTooManyFaults = errors.New("agent: the run faulted too often")

// ErrInvalidAnswer is returned (wrapped) when the model's answer cannot be carried out or
// recorded: more than store.MaxRoundCalls tool calls, a call without a tool name, or a field over
// the store's limits (store.CheckTurn). The answer is refused before any of its tools runs, and
// the run fails (store.FailureInvalidAnswer).
var ErrInvalidAnswer = errors.New("agent: the model's answer cannot be carried out")

// errPanicked is the cause of an attempt that panicked.
var errPanicked = errors.New("agent: the run panicked")

// RunError is the error Reply and Fire return when an attempt at a run ended without the run
// succeeding, and how it ended: Class is the error's failure class (recorded on the run as
// Run.FailureClass, with the error's text as Run.Reason). Final is true when the run is now
// failed — a permanent class, or its MaxFaults-th fault — and nothing will run it again (no
// model call, no tool); a failure the store could not record is not Final (the error joins
// the store's), and the run fails again when it is next resumed. Otherwise the run stays running with its lease released
// (store.StopRun): any worker may resume it at once by calling Reply or Fire again, or from
// RetryAt when the provider asked for a wait (Reply refuses to resume it earlier, with a
// RunError wrapping store.ErrRetryLater). For a claimed run (Fire with Run set) nothing is
// recorded: Result.Finish carries the class for the caller. Err is the error itself; errors.Is
// and errors.As see through to it (ErrMaxTurns, provider.ErrMalformedResponse, a
// *chat.CallError, …).
type RunError struct {
	Key     string
	Class   store.FailureClass
	Final   bool
	RetryAt time.Time
	Err     error
}

// Error says whether the run failed or stopped, its key, class, retry time and the error, for
// example `agent: run "reply:support/…" failed (invalid_answer): agent: the model's answer cannot
// be carried out: 101 tool calls (at most 100)`.
func (e *RunError) Error() string {
	if e.Final {
		return fmt.Sprintf("agent: run %q failed (%s): %v", e.Key, e.Class, e.Err)
	}
	when := "resumable now"
	if !e.RetryAt.IsZero() {
		when = "resumable from " + e.RetryAt.Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("agent: run %q stopped (%s; %s): %v", e.Key, e.Class, when, e.Err)
}

// Unwrap returns Err.
func (e *RunError) Unwrap() error { return e.Err }

// classedError is an error whose failure class its call site knows.
type classedError struct {
	class store.FailureClass
	err   error
}

func (e *classedError) Error() string { return e.err.Error() }
func (e *classedError) Unwrap() error { return e.err }

// withClass marks err with the class its call site knows it has.
func withClass(class store.FailureClass, err error) error { return &classedError{class, err} }

// injectedError is a test hook's error (Runner.at): the attempt aborts as if its process had
// died, recording nothing.
type injectedError struct{ err error }

func (e *injectedError) Error() string { return e.err.Error() }
func (e *injectedError) Unwrap() error { return e.err }

// verdict is how an attempt's error ends it.
type verdict struct {
	class      store.FailureClass
	retryAfter time.Duration
	fault      bool // counts towards MaxFaults
	final      bool // the run fails
	record     bool // false: the run is not this attempt's to record (lease lost, injected crash)
}

// classify decides what err, which stopped an attempt whose context is ctx, does to the run:
//
//   - not recorded: the run was taken over or finished elsewhere (store.ErrLeaseLost,
//     store.ErrRunFinished, a lease lost while working), or a test hook aborted the attempt;
//   - the class its call site gave it (a Compose failure is store.FailureHostError, an answer
//     refused before its tools is store.FailureInvalidAnswer, a panic store.FailureCrashed, a
//     model adapter's error that is neither a *chat.CallError nor a network or context error is
//     store.FailureRequestRefused, …);
//   - ctx ended: store.FailureShutdown (cancelled) or store.FailureTimeout (deadline);
//   - ErrMaxTurns, ErrNoAnswer, provider.ErrMalformedResponse, chat.ErrContextWindow (still
//     there after compaction): store.FailureMaxTurns, FailureNoAnswer, FailureInvalidAnswer,
//     FailureContextWindow, final;
//   - a *chat.CallError: store.FailureModelUnavailable with its RetryAfter when Transient, else
//     store.FailureRequestRefused, final;
//   - a deadline of its own (context.DeadlineExceeded) or a network timeout:
//     store.FailureTimeout; store.Unavailable or another network error: store.FailureUnavailable;
//   - anything else: store.FailureUnclassified, a fault.
func classify(ctx context.Context, err error) verdict {
	var injected *injectedError
	var classed *classedError
	var call *chat.CallError
	var ne net.Error
	transient := func(c store.FailureClass) verdict {
		return verdict{class: c, record: true, fault: c == store.FailureUnclassified || c == store.FailureCrashed}
	}
	permanent := func(c store.FailureClass) verdict { return verdict{class: c, record: true, final: true} }
	switch {
	case errors.As(err, &injected), errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrRunFinished):
		return verdict{}
	case ctx.Err() != nil && (errors.Is(context.Cause(ctx), store.ErrLeaseLost) || errors.Is(context.Cause(ctx), store.ErrRunFinished)):
		return verdict{}
	case errors.As(err, &classed):
		if classed.class.Transient() {
			return transient(classed.class)
		}
		return permanent(classed.class)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return transient(store.FailureTimeout)
	case ctx.Err() != nil:
		return transient(store.FailureShutdown)
	case errors.Is(err, ErrMaxTurns):
		return permanent(store.FailureMaxTurns)
	case errors.Is(err, ErrNoAnswer):
		return permanent(store.FailureNoAnswer)
	case errors.Is(err, provider.ErrMalformedResponse), errors.Is(err, ErrInvalidAnswer):
		return permanent(store.FailureInvalidAnswer)
	case errors.Is(err, chat.ErrContextWindow):
		return permanent(store.FailureContextWindow)
	case errors.As(err, &call) && call.Transient:
		v := transient(store.FailureModelUnavailable)
		v.retryAfter = max(call.RetryAfter, 0)
		return v
	case call != nil:
		return permanent(store.FailureRequestRefused)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return transient(store.FailureTimeout)
	case store.Unavailable(err):
		return transient(store.FailureUnavailable)
	}
	return transient(store.FailureUnclassified)
}

// modelError classifies a model adapter's error: a *chat.CallError, a malformed answer, a
// context window refusal and context and network errors keep their own classes (see classify);
// any other error is the adapter refusing the request before sending it (settings the provider
// cannot take, messages that break chat.Validate), which the same request would meet again:
// store.FailureRequestRefused.
func modelError(ctx context.Context, err error) error {
	var call *chat.CallError
	var ne net.Error
	switch {
	case ctx.Err() != nil, errors.As(err, &call), errors.As(err, &ne),
		errors.Is(err, provider.ErrMalformedResponse), errors.Is(err, chat.ErrContextWindow),
		errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return err
	}
	return withClass(store.FailureRequestRefused, err)
}
