package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/personagen/personagen/runtime/chat"
)

// errNilResolver is the cause a Chain reports for a Step whose Resolver is nil.
var errNilResolver = errors.New("step has no resolver")

// Resolver contributes messages to the context a model sees before a run. Resolve appends zero,
// one or many messages to dst and returns the extended slice, as append does; it never modifies
// the messages already in dst, and on error it returns dst unchanged (possibly with a larger
// capacity) together with the error. inv is read-only.
//
// The append shape lets a Chain assemble a whole request in one growing slice instead of one
// slice per resolver; appending nothing, one message or many are the three answers a resolver
// has.
type Resolver interface {
	Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error)
}

// ResolverFunc adapts an ordinary function to the Resolver interface, as http.HandlerFunc does
// for http.Handler.
type ResolverFunc func(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error)

// Resolve calls f(ctx, inv, dst).
func (f ResolverFunc) Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error) {
	return f(ctx, inv, dst)
}

// Step is one entry of a Chain: the resolver, the kind it was declared as (a spec kind such as
// "load_file", or any label a host chooses), Pos, the "file:line:col" of its entry in the spec
// when generated code supplies one (empty otherwise), and Changes, how often its output changes
// (the zero value PerMessage when unknown). Kind and Pos only label errors; Changes decides the
// request's cache plan (BuildRequest), never its messages.
type Step struct {
	Kind     string
	Pos      string
	Resolver Resolver
	Changes  Changes
}

// Chain runs its steps in declaration order and concatenates their messages. A Chain is itself
// a Resolver, so chains nest. Its steps are
// immutable after NewChain and it is safe for concurrent use when its resolvers are.
//
// A Chain remembers how many messages its last successful run appended and grows dst to hold
// that many before the next run, so that a request is assembled with one allocation of the
// message slice instead of one per doubling. The hint changes only capacity, never output.
type Chain struct {
	steps []Step
	hint  atomic.Int64 // messages the last successful Resolve appended
}

// sizeHint returns how many messages the chain appended on its last successful run (0 before
// the first and for a nil Chain).
func (c *Chain) sizeHint() int {
	if c == nil {
		return 0
	}
	return int(c.hint.Load())
}

// NewChain returns a chain of the given steps, in order. It copies the slice.
func NewChain(steps ...Step) *Chain {
	return &Chain{steps: append([]Step(nil), steps...)}
}

// Steps returns a copy of the chain's steps.
func (c *Chain) Steps() []Step {
	if c == nil {
		return nil
	}
	return append([]Step(nil), c.steps...)
}

// Len returns the number of steps.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.steps)
}

// Resolve runs every step in order, appending its messages to dst. It stops at the first
// error, returning dst as it was before the chain ran (truncated back to its original length)
// and a *StepError naming the failing step (a Step with a nil Resolver fails too). A nil Chain
// contributes nothing. Resolve checks ctx before each step and, once it is done, stops with a
// *StepError naming the step that did not run and wrapping ctx.Err() (so errors.Is(err,
// context.Canceled) holds); resolvers that do I/O also see ctx themselves.
func (c *Chain) Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error) {
	return c.resolve(ctx, inv, dst, nil)
}

// resolve is Resolve that also appends to *ends, when ends is not nil, the length of dst after
// each step (on success only: *ends is left as it was on error).
func (c *Chain) resolve(ctx context.Context, inv *Invocation, dst []chat.Message, ends *[]int) ([]chat.Message, error) {
	if c == nil {
		return dst, nil
	}
	start := len(dst)
	if h := c.sizeHint(); cap(dst)-start < h {
		dst = slices.Grow(dst, h)
	}
	var after []int // the length of dst after each step, when asked for
	if ends != nil {
		after = slices.Grow(*ends, len(c.steps))
	}
	for i, s := range c.steps {
		var err error
		switch {
		case ctx.Err() != nil:
			err = ctx.Err()
		case s.Resolver == nil:
			err = errNilResolver
		default:
			var out []chat.Message
			if out, err = s.Resolver.Resolve(ctx, inv, dst); err == nil {
				dst = out
			}
		}
		if err != nil {
			return dst[:start], &StepError{Index: i, Kind: s.Kind, Pos: s.Pos, Err: err}
		}
		if ends != nil {
			after = append(after, len(dst))
		}
	}
	if ends != nil {
		*ends = after
	}
	c.hint.Store(int64(len(dst) - start))
	return dst, nil
}

// StepError is the error a Chain returns when one of its steps fails. Index is the step's
// 0-based position in the chain, Kind its declared kind, Pos its spec position ("" when
// unknown), and Err the resolver's error, available through errors.Is/As via Unwrap.
type StepError struct {
	Index int
	Kind  string
	Pos   string
	Err   error
}

// Error renders "resolver #N (kind at file:line:col): cause", with N counted from 1 as a
// reader of the spec counts entries.
func (e *StepError) Error() string {
	where := e.Kind
	if where == "" {
		where = "resolver"
	}
	if e.Pos != "" {
		where += " at " + e.Pos
	}
	return fmt.Sprintf("resolver #%d (%s): %v", e.Index+1, where, e.Err)
}

// Unwrap returns the resolver's error.
func (e *StepError) Unwrap() error { return e.Err }
