package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/tool"
)

func TestToolRuleCheckNamesTheProblem(t *testing.T) {
	for _, c := range []struct {
		name string
		rule runtime.ToolRule
		want string // "" for a valid rule
	}{
		{"the zero rule", runtime.ToolRule{}, ""},
		{"both chains", runtime.ToolRule{Chains: []runtime.ChainKind{runtime.ChainReply, runtime.ChainScheduled}}, ""},
		{"every approval setting", runtime.ToolRule{Approval: &runtime.ApprovalRule{Timeout: runtime.MaxApprovalTimeout,
			OnTimeout: runtime.TimeoutApprove, RevealApprover: true}}, ""},
		{"an unknown chain", runtime.ToolRule{Chains: []runtime.ChainKind{"daily"}}, `tool "refund": chain "daily" (want "reply" or "scheduled")`},
		{"a chain twice", runtime.ToolRule{Chains: []runtime.ChainKind{runtime.ChainReply, runtime.ChainReply}}, `chain "reply" is listed twice`},
		{"a timeout too short", runtime.ToolRule{Approval: &runtime.ApprovalRule{Timeout: time.Second}}, "approval timeout 1s (want 0 for 72h0m0s, or 1m0s to 2160h0m0s)"},
		{"a timeout too long", runtime.ToolRule{Approval: &runtime.ApprovalRule{Timeout: runtime.MaxApprovalTimeout + 1}}, "approval timeout 2160h0m0.000000001s"},
		{"an unknown action", runtime.ToolRule{Approval: &runtime.ApprovalRule{OnTimeout: "retry"}}, `on-timeout action "retry" (want "deny" or "approve")`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.rule.Check("refund")
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case c.want != "" && (!errors.Is(err, runtime.ErrInvalidToolRule) || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Check = %v, want ErrInvalidToolRule saying %q", err, c.want)
			}
		})
	}
}

func TestToolRuleDefaults(t *testing.T) {
	var r runtime.ApprovalRule
	if r.EffectiveTimeout() != 72*time.Hour || r.EffectiveOnTimeout() != runtime.TimeoutDeny {
		t.Errorf("defaults = %v, %q", r.EffectiveTimeout(), r.EffectiveOnTimeout())
	}
	reply := runtime.ToolRule{Chains: []runtime.ChainKind{runtime.ChainReply}}
	if !reply.Offered(runtime.ChainReply) || reply.Offered(runtime.ChainScheduled) || !(runtime.ToolRule{}).Offered(runtime.ChainScheduled) {
		t.Error("Offered does not follow Chains (nil: both)")
	}
	p := &runtime.Persona{ToolRules: map[string]runtime.ToolRule{"refund": reply}}
	if got := p.ToolRule("refund"); len(got.Chains) != 1 || p.ToolRule("other").Approval != nil {
		t.Errorf("ToolRule = %+v", got)
	}
}

type refund struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
	Note   string `json:"note"`
}

// wrapped is a tool that wraps another, as a service's counting wrapper does.
type wrapped struct{ runtime.Tool }

func (w wrapped) Unwrap() runtime.Tool { return w.Tool }

// opaque wraps a tool without saying so.
type opaque struct{ runtime.Tool }

// TestDecodeInputShowsWhatTheToolWouldRunWith: a built tool decodes a call's arguments into its
// input struct, written back as JSON in field order with every field (HTML not escaped), or gives
// Call's input error without running; wrappers with Unwrap are seen through, others are not.
func TestDecodeInputShowsWhatTheToolWouldRunWith(t *testing.T) {
	ran := 0
	tl := tool.Must(tool.New(tool.Def{Name: "refund", Description: "Refund.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"},"amount":{"type":"integer","minimum":1},"note":{"type":"string"}},"required":["order","amount"],"additionalProperties":false}`)},
		func(ctx context.Context, inv *runtime.Invocation, in refund) (string, error) { ran++; return "ok", nil }))
	for _, c := range []struct {
		name    string
		tool    runtime.Tool
		input   string
		decoded string
		ok      bool
		err     string
	}{
		{"arguments", tl, `{ "amount": 120, "order": "A-17 <late>" }`, `{"order":"A-17 <late>","amount":120,"note":""}`, true, ""},
		{"through a wrapper", wrapped{wrapped{tl}}, `{"order":"A","amount":1}`, `{"order":"A","amount":1,"note":""}`, true, ""},
		{"arguments that do not match", tl, `{"order":"A","amount":0}`, "", true, "invalid tool input for refund: the arguments do not match the input schema: at /amount: must be >= 1 but found 0"},
		{"a property the input lacks", tl, `{"order":"A","amount":1,"x":1}`, "", true, "invalid tool input for refund"},
		{"a wrapper that does not say so", opaque{tl}, `{"order":"A","amount":1}`, "", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			decoded, ok, err := runtime.DecodeInput(c.tool, json.RawMessage(c.input))
			if string(decoded) != c.decoded || ok != c.ok || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Errorf("DecodeInput = %s, %v, %v; want %s, %v, %q", decoded, ok, err, c.decoded, c.ok, c.err)
			}
			if c.err != "" && !errors.Is(err, tool.ErrInvalidInput) {
				t.Errorf("error %v does not wrap tool.ErrInvalidInput", err)
			}
		})
	}
	if ran != 0 {
		t.Errorf("decoding ran the tool %d times", ran)
	}
}
