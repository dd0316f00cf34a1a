package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// deniedText is the result the model reads for a call a person denied: who (when the rule
// reveals the approver, else "A person"), and the reason given.
func deniedText(a store.Approval) string {
	who := "A person"
	if a.RevealApprover && a.DecidedBy != "" {
		who = a.DecidedBy
	}
	text := "[denied] " + who + " reviewed this call of " + a.ToolName + " and denied it, so it did not run."
	if note := strings.TrimSpace(a.Note); note != "" {
		return text + " The reason given: " + note
	}
	return text + " No reason was given."
}

// expiredText is the result the model reads for a call whose approval timed out and whose rule
// denies it then.
func expiredText(a store.Approval) string {
	return "[expired] This call of " + a.ToolName + " needed a person's approval, and no decision came within " +
		humanDuration(a.Timeout()) + ", so it did not run."
}

// decisionText is the result of a call whose decision does not let it run.
func decisionText(a store.Approval) string {
	if a.Status == store.ApprovalDenied {
		return deniedText(a)
	}
	return expiredText(a)
}

// humanDuration writes d in whole days, hours or minutes when it is one ("3 days", "1 hour",
// "90 minutes"), else as time.Duration does.
func humanDuration(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	switch {
	case d > 0 && d%(24*time.Hour) == 0:
		return unit(int64(d/(24*time.Hour)), "day")
	case d > 0 && d%time.Hour == 0:
		return unit(int64(d/time.Hour), "hour")
	case d > 0 && d%time.Minute == 0:
		return unit(int64(d/time.Minute), "minute")
	}
	return d.String()
}

// approvalRequests returns the calls of turn t that wait for approval before they run: each
// call of an offered tool whose rule requires approval, with arguments that are a JSON object
// and that the tool decodes (a call that cannot run fails at once instead; see runTools), with
// the decoded input when the tool can give it.
func (a *attempt) approvalRequests(t store.Turn) []store.ApprovalRequest {
	var out []store.ApprovalRequest
	for i, c := range t.ToolCalls {
		tl := a.tools[c.Name]
		rule := a.p.ToolRule(c.Name).Approval
		if tl == nil || rule == nil {
			continue
		}
		if _, bad := c.InvalidArguments(); bad {
			continue
		}
		decoded, ok, err := runtime.DecodeInput(tl, c.Input)
		if err != nil {
			continue
		}
		req := store.ApprovalRequest{Position: i, Timeout: rule.Timeout, OnTimeout: rule.OnTimeout, RevealApprover: rule.RevealApprover}
		if ok && len(decoded) <= store.MaxTurnCallBytes && utf8.Valid(decoded) {
			req.Input = decoded
		}
		out = append(out, req)
	}
	return out
}

// pause ends the attempt because calls of turn t wait for approval, once the round's other
// calls ran and their outcomes are recorded: the run is recorded waiting with its lease
// released (store.WaitRun), so no worker holds it, and the Result and a *store.WaitingError
// (wrapped) say what it waits for. When every call was decided while the other calls ran, it
// reads the turn's decisions back and returns again: the caller carries on with them.
func (a *attempt) pause(ctx context.Context, t store.Turn, waiting []store.Approval) (res *Result, err error, again bool) {
	run, err := a.st.WaitRun(ctx, a.key, a.holder)
	if errors.Is(err, store.ErrNotWaiting) {
		a.log.Info("the calls were decided before the run paused; going on", "turn", t.TurnIndex)
		if a.turns, err = a.st.Turns(ctx, a.run.ID); err != nil {
			res, err = a.end(ctx, err)
			return res, err, false
		}
		return nil, nil, true
	}
	if err != nil {
		res, err = a.end(ctx, err)
		return res, err, false
	}
	if a.stopLease != nil {
		a.stopLease()
	}
	a.run = run
	we := &store.WaitingError{Run: run, Pending: waiting}
	for _, ap := range waiting {
		if we.Until.IsZero() || ap.ExpiresAt.Before(we.Until) {
			we.Until = ap.ExpiresAt
		}
	}
	a.finish = store.Finish{Status: store.RunWaiting, StopReason: string(a.stopReason()), Usage: a.usage()}
	calls := make([]string, len(waiting))
	for i, ap := range waiting {
		calls[i] = ap.ToolName + "/" + ap.CallID
	}
	a.log.Info("run waits for approval", "turn", t.TurnIndex, "calls", strings.Join(calls, ", "), "until", we.Until)
	if err := a.r.at(fmt.Sprintf("wait:%d", t.TurnIndex)); err != nil {
		return a.result(), err, false
	}
	res = a.result()
	res.Approvals, res.WaitUntil = waiting, we.Until
	return res, we, false
}

// waitingResult returns, for err wrapping a *store.WaitingError (a run found waiting), the
// Result that says what it waits for; nil for any other error.
func (a *attempt) waitingResult(err error) *Result {
	var we *store.WaitingError
	if !errors.As(err, &we) {
		return nil
	}
	return &Result{Run: we.Run, Approvals: we.Pending, WaitUntil: we.Until, Usage: we.Run.Usage,
		Finish: store.Finish{Status: store.RunWaiting, StopReason: we.Run.StopReason, Usage: we.Run.Usage}}
}
