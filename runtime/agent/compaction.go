package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transcript"
)

// summaryInstructions is the system prompt of a compaction summary.
const summaryInstructions = "You condense the older part of an email thread so that it fits in the context of later replies. " +
	"The summary replaces the messages it covers: keep who wrote what and when, names, numbers, dates, amounts, " +
	"order and ticket ids, promises made, decisions, what tools found, and every open question. " +
	"Write plain text, at most 400 words, without a preamble."

// summaryRequest is the model request that summarises in: the earlier summary, then the
// messages to fold into it, printed in the transcript format.
func (a *attempt) summaryRequest(in runtime.SummaryInput) *chat.Request {
	var b strings.Builder
	if in.Previous != "" {
		b.WriteString("Summary of the thread so far:\n\n" + in.Previous + "\n\n")
		b.WriteString("Messages to add to it, oldest first:\n\n")
	} else {
		b.WriteString("Messages to summarise, oldest first:\n\n")
	}
	b.WriteString(transcript.Print(in.Messages))
	settings := a.p.Model
	settings.Stop = nil
	return &chat.Request{Model: settings, Messages: []chat.Message{
		chat.SystemMessage(summaryInstructions),
		chat.UserMessage(b.String()),
	}}
}

// summarizer writes compaction summaries with the runner's model, in chat spans; their usage
// counts towards the run's.
func (a *attempt) summarizer() history.Summarizer {
	return runtime.SummarizerFunc(func(ctx context.Context, in runtime.SummaryInput) (string, error) {
		resp, err := a.chat(ctx, a.summaryRequest(in))
		if err != nil {
			return "", err
		}
		a.extra = a.extra.Add(resp.Usage)
		return resp.Message.Text, nil
	})
}

// errCompactionPending and errNothingToCompact are why compactToFit could not compact: another
// worker holds the thread's compaction claim (the run resumes after it), or the thread holds
// nothing before the answered message to summarise (the request cannot be made to fit).
var (
	errCompactionPending = errors.New("another worker is compacting the thread")
	errNothingToCompact  = errors.New("nothing is left to compact")
)

// compactToFit compacts the thread of a reply run whose request the model refused as too long:
// the messages older than the answered one, after the compaction in use, are summarised except
// the newest Keep of them (Runner.Compaction's Keep, or the default; one when that leaves nothing
// to summarise). The run then reads its thread with the new compaction.
func (a *attempt) compactToFit(ctx context.Context) error {
	keep := 0
	if a.r.Compaction != nil {
		keep = a.r.Compaction.Keep
	}
	var after int64
	if a.view.Compaction != nil {
		after = a.view.Compaction.BoundarySeq
	}
	thread := a.inbound.ThreadID
	w, err := a.st.History(ctx, history.Query{ThreadID: thread, AfterSeq: after, UpToSeq: a.inbound.Seq - 1,
		Limit: history.NoLimit, ToolUses: true})
	if err != nil {
		return err
	}
	boundary, ok := runtime.CompactionPolicy{MaxMessages: 1, Keep: keep}.Plan(w.Messages)
	if !ok {
		boundary, ok = runtime.CompactionPolicy{MaxMessages: 1, Keep: 1}.Plan(w.Messages)
	}
	if !ok {
		return fmt.Errorf("%w: %d messages before the answered one", errNothingToCompact, len(w.Messages))
	}
	res, err := a.st.Compact(ctx, thread, boundary, a.summarizer())
	if err != nil {
		return err
	}
	if res.Outcome == store.CompactPending || res.Outcome == store.CompactClaimLost || res.Compaction == nil {
		return errCompactionPending
	}
	a.log.Info("thread compacted to fit the context window", "boundary_seq", res.Compaction.BoundarySeq, "outcome", res.Outcome)
	a.view = &history.View{UpToSeq: a.view.UpToSeq, Compaction: res.Compaction}
	a.inv = a.invocation()
	return a.build(ctx)
}

// compactAfter applies Runner.Compaction to a reply run's thread once its reply is stored. A
// failure is logged, not returned: the run has succeeded.
func (a *attempt) compactAfter(ctx context.Context) {
	policy := a.r.Compaction
	if policy == nil {
		return
	}
	thread := a.inbound.ThreadID
	err := func() error {
		latest, err := a.st.LatestCompaction(ctx, thread)
		if err != nil {
			return err
		}
		q := history.Query{ThreadID: thread, Limit: history.NoLimit, ToolUses: true}
		if latest != nil {
			q.AfterSeq = latest.BoundarySeq
		}
		w, err := a.st.History(ctx, q)
		if err != nil {
			return err
		}
		boundary, ok := policy.Plan(w.Messages)
		if !ok {
			return nil
		}
		res, err := a.st.Compact(ctx, thread, boundary, a.summarizer())
		if err != nil {
			return err
		}
		a.log.Info("thread compacted", "boundary_seq", boundary, "outcome", res.Outcome)
		return nil
	}()
	if err != nil {
		a.log.Warn("compacting the thread after the run failed", "error", err)
	}
}
