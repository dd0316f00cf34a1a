package agent

import (
	"context"
	"time"

	"github.com/personagen/personagen/runtime/store"
)

// Internals the external tests reach, as net/http's export_test.go does.

// SetHook makes r call f at every named point of a run (see Runner.at); an error f returns
// aborts the attempt there, as a crash would. The "tool:…" points are passed from the tools'
// goroutines, concurrently.
func SetHook(r *Runner, f func(point string) error) { r.hook = f }

// InDoubtText is the result the model reads for a call in doubt.
var InDoubtText = inDoubtText

// DecisionText is the result the model reads for a call whose decision does not let it run.
var DecisionText = decisionText

// ReplayInput is the stored arguments' replay as a call input.
var ReplayInput = replayInput

// Verdict is how classify ends an attempt.
type Verdict struct {
	Class      store.FailureClass
	RetryAfter time.Duration
	Fault      bool
	Final      bool
	Record     bool
}

// Classify is classify, and with model set the classification of a model adapter's error.
func Classify(ctx context.Context, err error, model bool) Verdict {
	if model {
		err = modelError(ctx, err)
	}
	v := classify(ctx, err)
	return Verdict{v.class, v.retryAfter, v.fault, v.final, v.record}
}
