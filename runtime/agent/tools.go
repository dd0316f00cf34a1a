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
// with arguments that are not a JSON object, or of a tool the persona does not have, fails
// without running. When ctx ends while tools run, it returns ctx's error and nothing of the
// round is recorded (the outcomes of the calls that completed are).
func (a *attempt) runTools(ctx context.Context, t store.Turn, fromLedger bool) ([]store.Result, error) {
	results := make([]store.Result, len(t.ToolCalls))
	errs := make([]error, len(t.ToolCalls))
	settled := make(map[int]store.Result, len(t.Outcomes))
	for _, o := range t.Outcomes {
		settled[o.Position] = o.Result
	}
	sem := make(chan struct{}, a.r.parallel())
	var wg sync.WaitGroup
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
			results[i] = store.Result{Content: fmt.Sprintf("unknown tool %q; the tools are: %s", c.Name, a.toolNames())}
			continue
		}
		if fromLedger && !tl.Idempotent() {
			results[i] = store.Result{Content: inDoubtText(c.Name)}
			a.inDoubt++
			a.log.Warn("tool call in doubt: not run again", "tool", c.Name, "call_id", c.ID, "turn", t.TurnIndex)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				return
			}
			results[i], errs[i] = a.runTool(ctx, tl, t, i)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// runTool runs call i of turn t and, for a tool that is not idempotent, records its outcome.
// It returns an error only when the attempt must stop (ctx ended while the tool ran, or the
// outcome could not be recorded); a tool's own error or panic is a failed result.
func (a *attempt) runTool(ctx context.Context, tl runtime.Tool, t store.Turn, i int) (store.Result, error) {
	c := t.ToolCalls[i]
	content, err := a.invoke(ctx, tl, c)
	if err != nil && ctx.Err() != nil {
		// Cut off by the end of the run's ctx: the outcome is unknown, so nothing is recorded; a
		// call of a tool that is not idempotent is in doubt when the run resumes.
		return store.Result{}, ctx.Err()
	}
	res := store.Result{Content: content, Succeeded: err == nil}
	if err != nil {
		res.Content = err.Error()
		if res.Content == "" {
			res.Content = "the tool failed"
		}
		a.log.Info("tool call failed", "tool", c.Name, "call_id", c.ID, "error", err)
	}
	if !tl.Idempotent() {
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

// toolNames lists the persona's tool names, sorted, for an unknown-tool result.
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
