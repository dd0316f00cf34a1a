package spec

import (
	"fmt"
	"time"
)

// The chains a tools entry's chains key names (runtime.ChainReply and runtime.ChainScheduled).
const (
	// ChainReply is the reply chain, message_resolvers.
	ChainReply = "reply"
	// ChainScheduled is the scheduled chain, responsibility_resolvers.
	ChainScheduled = "scheduled"
)

// Approval timeouts, as runtime/agent applies them (runtime.DefaultApprovalTimeout and its
// bounds).
const (
	// DefaultApprovalTimeout is the timeout of an approval without a timeout key.
	DefaultApprovalTimeout = 72 * time.Hour
	// MinApprovalTimeout and MaxApprovalTimeout bound a timeout key.
	MinApprovalTimeout = time.Minute
	MaxApprovalTimeout = 90 * 24 * time.Hour
)

// The on_timeout values of an approval.
const (
	// OnTimeoutDeny (the default): the call does not run, and the model reads that no decision
	// came in time.
	OnTimeoutDeny = "deny"
	// OnTimeoutApprove: the call runs as if approved.
	OnTimeoutApprove = "approve"
)

// Approval is a tools entry's approval key: every call of the tool waits for a person's
// decision before it runs (runtime.ApprovalRule). It is written `approval: required` (every
// default) or as a mapping with timeout, on_timeout and reveal_approver.
type Approval struct {
	// Pos is the position of the approval key's value.
	Pos Pos
	// Timeout is how long a call waits for a decision: the timeout key, a Go duration (72h,
	// 90m) between MinApprovalTimeout and MaxApprovalTimeout; zero when absent (then
	// DefaultApprovalTimeout).
	Timeout Duration
	// OnTimeout is what happens when no decision came in time: OnTimeoutDeny or
	// OnTimeoutApprove; zero when absent (OnTimeoutDeny).
	OnTimeout String
	// RevealApprover lets the model read the name of the person who denied a call (and so
	// perhaps the customer); default false: the model reads "a person".
	RevealApprover Bool
}

// Duration is a duration written in a spec as a Go duration string, with its position; zero
// (Pos invalid) when absent.
type Duration struct {
	Value time.Duration
	Pos   Pos
}

// valueTool builds a mapping entry of tools that names a value (value:), which names and
// describes itself: name, description and idempotent are refused, and so are method and func.
func (b *personaBuilder) valueTool(n, value, method, fn *tnode) (Tool, bool) {
	t := Tool{Pos: n.pos}
	for _, other := range []*tnode{method, fn} {
		if other != nil {
			b.errorf(other.pos, "a tools mapping names a value, a method or a function, not two; keep one of value:, method: and func:")
			return t, false
		}
	}
	t.Value = b.ref(value, true)
	if t.Value == nil {
		return t, false
	}
	for _, key := range []string{"name", "description", "idempotent"} {
		if i := n.lookup(key); i >= 0 {
			b.errorf(n.keys[i].pos, "a value tool names and describes itself (its Name, Description and Idempotent methods); %s: is for method: and func: tools: remove it", key)
			return t, false
		}
	}
	b.toolRule(n, &t)
	return t, true
}

// toolRule reads the chains and approval keys of the tools mapping n into t.
func (b *personaBuilder) toolRule(n *tnode, t *Tool) {
	if c := n.get("chains"); c != nil && c.kind == ValueList {
		seen := map[string]bool{}
		t.Chains = []String{}
		for _, item := range c.items {
			s, ok := str(item)
			if !ok {
				continue
			}
			if seen[s.Value] {
				b.errorf(s.Pos, "chain %s is listed twice", s.Value)
				continue
			}
			seen[s.Value] = true
			t.Chains = append(t.Chains, s)
		}
	}
	a := n.get("approval")
	switch {
	case a == nil:
	case a.kind == ValueString:
		t.Approval = &Approval{Pos: a.pos}
	case a.kind == ValueMap:
		ap := &Approval{Pos: a.pos}
		if s, ok := str(a.get("timeout")); ok {
			d, err := time.ParseDuration(s.Value)
			switch {
			case err != nil:
				b.errorf(s.Pos, "approval timeout %q is not a Go duration (write 72h, 90m or 30m)", s.Value)
			case d < MinApprovalTimeout || d > MaxApprovalTimeout:
				b.errorf(s.Pos, "approval timeout %s is out of range: between %s and %s (90 days), so every waiting run ends and a person has time to decide",
					s.Value, fmtDuration(MinApprovalTimeout), fmtDuration(MaxApprovalTimeout))
			default:
				ap.Timeout = Duration{Value: d, Pos: s.Pos}
			}
		}
		ap.OnTimeout, _ = str(a.get("on_timeout"))
		ap.RevealApprover = boolean(a.get("reveal_approver"), false)
		t.Approval = ap
	}
}

// checkToolChains refuses a tools entry whose chains key names only chains the spec does not
// have: the tool would never be offered.
func (b *personaBuilder) checkToolChains(p *Persona, hasReply, hasScheduled bool) {
	for _, t := range p.Tools {
		if len(t.Chains) == 0 {
			continue
		}
		offered := false
		for _, c := range t.Chains {
			offered = offered || c.Value == ChainReply && hasReply || c.Value == ChainScheduled && hasScheduled
		}
		if !offered {
			missing := "message_resolvers (the reply chain)"
			if t.Chains[0].Value == ChainScheduled {
				missing = "responsibility_resolvers (the scheduled chain)"
			}
			if len(t.Chains) > 1 {
				missing = "message_resolvers or responsibility_resolvers"
			}
			b.errorf(t.Chains[0].Pos, "tool %s is offered only to chains this spec does not have (it has no %s): no run would offer it; list a chain the spec has, or remove the tool",
				toolLabel(t), missing)
		}
	}
}

// toolLabel names a tools entry in messages: its Go reference, or its name for a method.
func toolLabel(t Tool) string {
	if t.Name.Value != "" {
		return t.Name.Value
	}
	return t.Ref().String()
}

// fmtDuration writes d as a spec would: 1m, 2160h.
func fmtDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return fmt.Sprintf("%dm", d/time.Minute)
}
