package runtime

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// ChainKind names one of a persona's two chains, and so the kind of run it assembles: a reply
// run (MessageChain, for an inbound message) or a scheduled run (ResponsibilityChain, for a fire
// of a responsibility).
type ChainKind string

// The two chains.
const (
	// ChainReply is the reply chain (the spec's message_resolvers).
	ChainReply ChainKind = "reply"
	// ChainScheduled is the scheduled chain (the spec's responsibility_resolvers).
	ChainScheduled ChainKind = "scheduled"
)

// Approval timeouts: how long a call that needs approval waits for a person's decision.
const (
	// DefaultApprovalTimeout is the timeout of an ApprovalRule whose Timeout is 0: three days,
	// so that a call asked for on a Friday evening is still decidable on Monday, and every
	// waiting run ends.
	DefaultApprovalTimeout = 72 * time.Hour
	// MinApprovalTimeout and MaxApprovalTimeout bound an ApprovalRule's Timeout.
	MinApprovalTimeout = time.Minute
	MaxApprovalTimeout = 90 * 24 * time.Hour
)

// TimeoutAction is what happens to a call whose approval timed out.
type TimeoutAction string

// The timeout actions.
const (
	// TimeoutDeny (the default) does not run the call: the model reads that no decision came in
	// time.
	TimeoutDeny TimeoutAction = "deny"
	// TimeoutApprove runs the call as if a person had approved it: for a call that should run
	// unless somebody objects in time.
	TimeoutApprove TimeoutAction = "approve"
)

// ApprovalRule makes every call of a tool wait for a person's decision before it runs: the run
// records the call as awaiting approval and pauses, and an approval (store.Approve) runs it, a
// denial (store.Deny) or the timeout gives the model a result saying why it did not run.
type ApprovalRule struct {
	// Timeout is how long a call waits for a decision; 0 = DefaultApprovalTimeout. Between
	// MinApprovalTimeout and MaxApprovalTimeout.
	Timeout time.Duration
	// OnTimeout is what happens when no decision came within Timeout; "" = TimeoutDeny.
	OnTimeout TimeoutAction
	// RevealApprover puts the name of the person who denied a call into the result the model
	// reads (and so perhaps into the reply to the customer). Off by default: the model reads
	// "a person" instead.
	RevealApprover bool
}

// EffectiveTimeout returns Timeout, or DefaultApprovalTimeout for 0.
func (r ApprovalRule) EffectiveTimeout() time.Duration {
	if r.Timeout == 0 {
		return DefaultApprovalTimeout
	}
	return r.Timeout
}

// EffectiveOnTimeout returns OnTimeout, or TimeoutDeny for "".
func (r ApprovalRule) EffectiveOnTimeout() TimeoutAction {
	if r.OnTimeout == "" {
		return TimeoutDeny
	}
	return r.OnTimeout
}

// ToolRule is how a persona governs one of its tools beyond what the tool says of itself: which
// chains offer it and whether its calls wait for approval. A spec's tools entry writes it
// (chains:, approval:); the zero ToolRule offers the tool to both chains and runs its calls at
// once.
type ToolRule struct {
	// Chains are the chains whose runs offer the tool; nil = both. A run offers the model only
	// the tools of its chain and refuses a call of any other (a failed result the model reads).
	Chains []ChainKind
	// Approval, when set, makes every call of the tool wait for a person's decision.
	Approval *ApprovalRule
}

// Offered reports whether a run of chain c offers the tool.
func (r ToolRule) Offered(c ChainKind) bool {
	return len(r.Chains) == 0 || slices.Contains(r.Chains, c)
}

// ErrInvalidToolRule is returned (wrapped, naming the tool and the problem) by ToolRule.Check.
var ErrInvalidToolRule = errors.New("invalid tool rule")

// Check returns an error wrapping ErrInvalidToolRule, naming tool, for a rule a runner cannot
// apply: a chain other than ChainReply and ChainScheduled or one listed twice, a Timeout that is
// neither 0 nor between MinApprovalTimeout and MaxApprovalTimeout, an OnTimeout other than "",
// TimeoutDeny and TimeoutApprove.
func (r ToolRule) Check(tool string) error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: tool %q: %s", ErrInvalidToolRule, tool, fmt.Sprintf(format, a...))
	}
	for i, c := range r.Chains {
		if c != ChainReply && c != ChainScheduled {
			return fail("chain %q (want %q or %q)", c, ChainReply, ChainScheduled)
		}
		if slices.Contains(r.Chains[:i], c) {
			return fail("chain %q is listed twice", c)
		}
	}
	if a := r.Approval; a != nil {
		if a.Timeout != 0 && (a.Timeout < MinApprovalTimeout || a.Timeout > MaxApprovalTimeout) {
			return fail("approval timeout %v (want 0 for %v, or %v to %v)", a.Timeout, DefaultApprovalTimeout, MinApprovalTimeout, MaxApprovalTimeout)
		}
		switch a.OnTimeout {
		case "", TimeoutDeny, TimeoutApprove:
		default:
			return fail("on-timeout action %q (want %q or %q)", a.OnTimeout, TimeoutDeny, TimeoutApprove)
		}
	}
	return nil
}

// ToolRule returns the rule of the persona's tool named name: its entry in ToolRules, or the
// zero ToolRule.
func (p *Persona) ToolRule(name string) ToolRule { return p.ToolRules[name] }

// InputDecoder is implemented by a Tool that can decode a call's arguments without running:
// DecodeInput returns the input the tool would run with, encoded as JSON (for a tool built by
// runtime/tool, the decoded input struct), or the error Call would return for these arguments
// without running anything. A runner records the decoded input with a call that waits for
// approval, so the person deciding sees what the tool will do, and fails a call whose arguments
// do not decode at once instead of asking anybody about it.
type InputDecoder interface {
	DecodeInput(input json.RawMessage) (json.RawMessage, error)
}

// DecodeInput decodes input with t's DecodeInput, looking through wrappers that have an
// Unwrap() Tool method (a tool that counts or traces the calls of another). ok is false when no
// tool of the chain implements InputDecoder; err is the decoder's error.
func DecodeInput(t Tool, input json.RawMessage) (decoded json.RawMessage, ok bool, err error) {
	for range 16 { // wrappers do not nest deeper; the bound only stops a cycle
		if d, is := t.(InputDecoder); is {
			decoded, err = d.DecodeInput(input)
			return decoded, true, err
		}
		u, is := t.(interface{ Unwrap() Tool })
		if !is {
			return nil, false, nil
		}
		if t = u.Unwrap(); t == nil {
			return nil, false, nil
		}
	}
	return nil, false, nil
}
