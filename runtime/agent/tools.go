package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// settleTimeout bounds the write that records a call's outcome after the run's ctx ended: the
// tool ran, so its outcome is worth recording even while the run stops.
const settleTimeout = 10 * time.Second

// errToolPanicked is the cause of a failed result whose tool panicked.
var errToolPanicked = errors.New("tool panicked")

// OutcomeUnknown starts the result the model reads, and the store records, for a call of a tool
// that is not idempotent which a crash cut off: it may have run, so it is not run again.
const OutcomeUnknown = "[outcome unknown]"

// inDoubtText is the result of such a call of tool.
func inDoubtText(tool string) string {
	return OutcomeUnknown + " The run was interrupted while this call of " + tool + " was running, and " + tool +
		" is not safe to run twice, so it was not run again. It may or may not have taken effect: check before calling it again."
}

// runTools returns the results of turn t's calls, index for index, running the calls that need
// it — at most Parallel at once — and recording the outcome of each call of a tool that is not
// idempotent as soon as it returned. For a turn recorded by an earlier attempt (fromLedger), a
// recorded outcome is used as it is, an idempotent tool runs again, and a call of a tool that is
// not idempotent without an outcome is in doubt: it is not run, and its result says so. A call
// with arguments that are not a JSON object, or of a tool the run does not offer (the persona
// lacks it, or its rule limits it to the other chain), fails without running.
//
// A call recorded as waiting for approval (t.Approvals) runs only as its decision says: a
// waiting call is returned in waiting, with no result (the caller pauses the run); a denied or
// expired one gets the decision's text as a failed result; an approved one (or one expired with
// runtime.TimeoutApprove) is recorded started (store.StartApprovedCall) and run, once: one found
// started without an outcome is in doubt. In a turn with such calls every call's outcome is
// recorded as soon as it returned, idempotent ones too, so that a run resumed days later reads
// the results the model would have read without the pause. A call of a tool that needs approval
// and has none recorded fails with the tool's input error when its arguments do not decode.
//
// When ctx ends while tools run, it returns ctx's error and nothing of the round is recorded (the
// outcomes of the calls that completed are).
func (a *attempt) runTools(ctx context.Context, t store.Turn, fromLedger bool) (results []store.Result, waiting []store.Approval, err error) {
	results = make([]store.Result, len(t.ToolCalls))
	errs := make([]error, len(t.ToolCalls))
	settled := make(map[int]store.Result, len(t.Outcomes))
	for _, o := range t.Outcomes {
		settled[o.Position] = o.Result
	}
	approvals := make(map[int]store.Approval, len(t.Approvals))
	for _, ap := range t.Approvals {
		approvals[ap.Position] = ap
	}
	settleAll := len(t.Approvals) > 0
	sem := make(chan struct{}, a.r.parallel())
	var wg sync.WaitGroup
	start := func(i int, tl runtime.Tool, before func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			if before != nil {
				if errs[i] = before(); errs[i] != nil {
					return
				}
			}
			results[i], errs[i] = a.runTool(ctx, tl, t, i, settleAll || !tl.Idempotent())
		}()
	}
	for i, c := range t.ToolCalls {
		tl := a.tools[c.Name]
		if res, ok := settled[i]; ok {
			results[i] = res
			continue
		}
		if raw, bad := c.InvalidArguments(); bad {
			results[i] = store.Result{Content: fmt.Sprintf("the arguments of this call of %s are not a JSON object: %s", c.Name, runtime.Clip(raw, 200))}
			continue
		}
		if tl == nil {
			if slices.ContainsFunc(a.p.Tools, func(p runtime.Tool) bool { return p != nil && p.Name() == c.Name }) {
				a.log.Warn("the model called a tool this chain does not offer; refused", "tool", c.Name, "call_id", c.ID, "chain", a.chain)
			}
			results[i] = store.Result{Content: fmt.Sprintf("unknown tool %q; the tools are: %s", c.Name, a.toolNames())}
			continue
		}
		if ap, ok := approvals[i]; ok {
			switch {
			case ap.Status == store.ApprovalWaiting:
				waiting = append(waiting, ap)
			case !ap.Runs():
				results[i] = store.Result{Content: decisionText(ap)}
			case !ap.StartedAt.IsZero() && !tl.Idempotent():
				results[i] = store.Result{Content: inDoubtText(c.Name)}
				a.inDoubt++
				a.log.Warn("approved tool call in doubt: it was started and not run again", "tool", c.Name, "call_id", c.ID, "turn", t.TurnIndex)
			case !ap.StartedAt.IsZero():
				start(i, tl, nil) // idempotent: runs again
			default:
				start(i, tl, func() error {
					if err := a.st.StartApprovedCall(ctx, a.holder, a.run.ID, t.TurnIndex, i); err != nil {
						return err
					}
					return a.r.at(fmt.Sprintf("approved:%d:%d", t.TurnIndex, i))
				})
			}
			continue
		}
		if a.p.ToolRule(c.Name).Approval != nil {
			if _, _, derr := runtime.DecodeInput(tl, c.Input); derr != nil {
				results[i] = store.Result{Content: toolErrorText(derr)}
				continue
			}
			if !fromLedger {
				// approvalRequests recorded a request for every call that decodes; never run one
				// without it.
				results[i] = store.Result{Content: fmt.Sprintf("this call of %s needs approval, and none could be asked for", c.Name)}
				a.log.Error("a call that needs approval has no approval recorded; not run", "tool", c.Name, "call_id", c.ID)
				continue
			}
			// Recorded before the tool's rule required approval: it goes as calls of its turn went.
		}
		if fromLedger && !tl.Idempotent() {
			results[i] = store.Result{Content: inDoubtText(c.Name)}
			a.inDoubt++
			a.log.Warn("tool call in doubt: not run again", "tool", c.Name, "call_id", c.ID, "turn", t.TurnIndex)
			continue
		}
		start(i, tl, nil)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return results, waiting, nil
}

// runTool runs call i of turn t and, with settle (a tool that is not idempotent, or any call of
// a turn with calls that need approval), records its outcome. It returns an error only when the
// attempt must stop (ctx ended while the tool ran, or the outcome could not be recorded); a
// tool's own error or panic is a failed result.
func (a *attempt) runTool(ctx context.Context, tl runtime.Tool, t store.Turn, i int, settle bool) (store.Result, error) {
	c := t.ToolCalls[i]
	content, err := a.invoke(ctx, tl, c)
	if err != nil && ctx.Err() != nil {
		// Cut off by the end of the run's ctx: the outcome is unknown, so nothing is recorded; a
		// call of a tool that is not idempotent is in doubt when the run resumes.
		return store.Result{}, ctx.Err()
	}
	res := store.Result{Content: content, Succeeded: err == nil}
	if err != nil {
		res.Content = toolErrorText(err)
		a.log.Info("tool call failed", "tool", c.Name, "call_id", c.ID, "error", err)
	}
	if settle {
		// The result the round records is the stored one, in the run and after a resume alike.
		res.Content = a.st.StoredPayload(c.Name, store.PayloadResult, res.Content)
		sctx := ctx
		if ctx.Err() != nil {
			var cancel context.CancelFunc
			sctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
			defer cancel()
		}
		if _, err := a.st.SettleCall(sctx, a.holder, a.run.ID, t.TurnIndex, store.CallOutcome{Position: i,
			ToolCallID: c.ID, ToolName: c.Name, Result: res}); err != nil {
			return store.Result{}, err
		}
	}
	return res, a.r.at(fmt.Sprintf("tool:%d:%d", t.TurnIndex, i))
}

// toolErrorText is the failed result of a tool's error: its text, or "the tool failed".
func toolErrorText(err error) string {
	if text := err.Error(); text != "" {
		return text
	}
	return "the tool failed"
}

// invoke calls the tool in an execute_tool span, turning a panic into an error.
func (a *attempt) invoke(ctx context.Context, tl runtime.Tool, c chat.ToolCall) (content string, err error) {
	ctx, end := a.toolSpan(ctx, tl, c)
	defer func() {
		if p := recover(); p != nil {
			a.log.Error("tool panicked", "tool", c.Name, "call_id", c.ID, "panic", p, "stack", string(debug.Stack()))
			content, err = "", fmt.Errorf("%w: %v", errToolPanicked, p)
		}
		end(err)
	}()
	return tl.Call(ctx, a.inv, c.Input)
}

// toolNames lists the names of the tools the run offers, sorted, for an unknown-tool result.
func (a *attempt) toolNames() string {
	names := make([]string, 0, len(a.tools))
	for n := range a.tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// roundMessages returns round as the model reads it: the assistant message (its text, calls and
// state) and one tool message per result, with arguments and results in the form the store keeps
// them. fresh is true for a round this attempt just recorded (its payloads are the ones handed
// to RecordRound; they are put in the stored form here) and false for one read back with Rounds
// (already in it), so both give the same bytes.
func (a *attempt) roundMessages(round store.Round, fresh bool) []chat.Message {
	calls := make([]chat.ToolCall, len(round.Calls))
	for i, c := range round.Calls {
		args := string(c.Input)
		if len(bytes.TrimSpace(c.Input)) == 0 {
			args = "{}"
		}
		if fresh {
			args = a.st.StoredPayload(c.Name, store.PayloadArguments, args)
		}
		calls[i] = chat.ToolCall{ID: c.ID, Name: c.Name, Input: replayInput(args)}
	}
	msgs := make([]chat.Message, 0, 1+len(calls))
	msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, Text: round.Text, ToolCalls: calls, State: round.State})
	for i, res := range round.Results {
		content := res.Content
		if fresh {
			content = a.st.StoredPayload(calls[i].Name, store.PayloadResult, content)
		}
		msgs = append(msgs, chat.Message{Role: chat.RoleTool, ToolCallID: calls[i].ID, Text: content, IsError: !res.Succeeded})
	}
	return msgs
}

// replayInput is a stored argument payload as a call's Input, by the rule of the thread
// history's replay: the payload itself when it is a JSON object, {} when it is blank, and
// {"_clipped_arguments": "<payload>"} (encoded without HTML escaping) for anything else, such as
// arguments clipped when they were stored.
func replayInput(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	switch {
	case trimmed == "":
		return json.RawMessage("{}")
	case trimmed[0] == '{' && json.Valid([]byte(trimmed)):
		return json.RawMessage(args)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Arguments string `json:"_clipped_arguments"`
	}{args}) // a struct of one string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
