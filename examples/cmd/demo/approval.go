package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/store"
)

// The demo's operator: who approves the calls that wait for approval (escalate_ticket), and the
// note recorded with the decision, as `personagen approve -by … -note …` records them.
const (
	demoApprover     = "billing-lead@acme.example"
	demoApprovalNote = "Within the Business plan's refund limit."
)

// reply answers in with r as a service and an operator do together: when the run pauses because
// calls wait for approval, the demo approves each of them (store.Approve, the call `personagen
// approve` makes) and answers again, which resumes the run where it paused. It returns the run's
// Result and the decisions, in call order.
func (d *demo) reply(ctx context.Context, r *agent.Runner, in agent.Inbound) (*agent.Result, []store.Approval, error) {
	res, err := r.Reply(ctx, in)
	var we *store.WaitingError
	if !errors.As(err, &we) {
		return res, nil, err
	}
	var decided []store.Approval
	for _, a := range we.Pending {
		ap, _, err := d.st.Approve(ctx, a.RunKey, a.CallID, demoApprover, demoApprovalNote)
		if err != nil {
			return res, decided, err
		}
		decided = append(decided, ap)
	}
	res, err = r.Reply(ctx, in)
	return res, decided, err
}

// printApprovals prints the calls a run waited for and their decisions, as `personagen
// approvals -status approved` lists them.
func printApprovals(w io.Writer, approvals []store.Approval) {
	for _, a := range approvals {
		fmt.Fprintf(w, "# %s (call %s) waited for approval: the run paused (status waiting, no lease held) at %s, until %s at the latest;\n",
			a.ToolName, a.CallID, a.RequestedAt.Format(time.RFC3339), a.ExpiresAt.Format(time.RFC3339))
		fmt.Fprintf(w, "#   %s %s it at %s (%q), and the run resumed where it paused\n", a.DecidedBy, a.Status,
			a.DecidedAt.Format(time.RFC3339), a.Note)
		fmt.Fprintf(w, "#   arguments %s\n#   decoded   %s\n", a.Arguments, a.Input)
	}
}
