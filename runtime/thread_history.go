package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// NoLimit, as ThreadHistory.Limit, replays the whole thread; as ThreadHistory.ReplayResultLimit,
// replays every tool result unclipped. It is [history.NoLimit]: one convention for every limit.
const NoLimit = history.NoLimit

// defaultReplayResultLimit is the number of characters (runes) a replayed tool result is clipped
// to when ThreadHistory.ReplayResultLimit is 0.
const defaultReplayResultLimit = 4000

// ErrNoHistorySource is returned (wrapped) by ThreadHistory and ThreadSummary when their Source
// is nil during a reply run.
var ErrNoHistorySource = errors.New("no history source")

// errInvalidHistoryOption is the cause ThreadHistory reports for a Limit or ReplayResultLimit
// below NoLimit, and ThreadSummary for an invalid Role.
var errInvalidHistoryOption = errors.New("invalid history option")

// ThreadHistory is the thread_history resolver: it replays the earlier messages of the inbound
// message's thread, and the tool rounds recorded for them, as conversation turns.
//
// It needs inv.Inbound: in a scheduled run (no Inbound), or for an Inbound with an empty
// ThreadID, it contributes nothing. The message being answered (inv.Inbound.MessageID) is left
// out; it arrives as the request's trailing user message. When it is stored (inv.Inbound.Seq >
// 0), only the messages the source received before it are replayed: one that arrived while the
// run was pending belongs to a later run. With inv.View set, the run's fixed view is replayed
// instead: the messages up to View.UpToSeq, inbound ones only up to Inbound.Seq, so the replies
// of earlier runs stored after Inbound arrived are in it and later arrivals are not.
//
// The replay is the most recent Limit messages, in the order the source received them (never
// by their Date headers, which the senders' clocks set), rendered by [ThreadHistory.AppendReplay]:
// one turn per message (inbound as a user message, outbound as an assistant message), each
// followed by its tool rounds unless SkipToolCalls is set.
//
// With a ThreadSummary for the same Source earlier in the chain that emitted a summary, only
// messages after that compaction's boundary are replayed (the same row the summary used, read
// once per Invocation), and when more of them lie before the window than Limit lets through, one
// user message says how many were left out. Without a ThreadSummary in the chain the
// compaction is ignored and the window is taken from the whole thread: a boundary without its
// summary would drop messages silently.
//
// The zero value of every option is its default. The output always satisfies Validate.
type ThreadHistory struct {
	// Source reads the thread; required in reply runs.
	Source history.Source
	// Limit is the number of most recent messages replayed: 0 = history.DefaultLimit (50),
	// NoLimit (-1) = the whole thread; below -1 is an error. A history.Query's Limit means the
	// same, and Resolve passes it on as it is.
	Limit int
	// SkipToolCalls leaves the tool rounds out (the zero value includes them).
	SkipToolCalls bool
	// ReplayResultLimit clips each replayed tool result to this many characters (runes):
	// 0 = 4,000, NoLimit (-1) = unclipped; below -1 is an error.
	ReplayResultLimit int
	// Step makes the window's start advance in steps of Step messages instead of one message
	// at a time, so that the replay's first messages — and with them a provider's cached prefix
	// — stay the same for several turns once the thread is longer than the window: of the n
	// messages the window selects from, it replays those from index s on, s the smallest
	// multiple of Step with n-s <= Limit (between Limit-Step+1 and Limit messages). 0 and 1
	// slide one message at a time (the most recent Limit); a Step above Limit, or a Step with
	// Limit NoLimit, is an error.
	Step int
}

// Resolve appends the thread's replay to dst (see ThreadHistory). It returns an error wrapping
// ErrNoHistorySource when Source is nil in a reply run, an error naming the option for a Limit
// or ReplayResultLimit below NoLimit, and the Source's errors wrapped with the thread id; dst is
// then returned unchanged.
func (h *ThreadHistory) Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error) {
	if inv == nil || inv.Inbound == nil || inv.Inbound.ThreadID == "" {
		return dst, nil
	}
	if h.Limit < NoLimit {
		return dst, fmt.Errorf("thread history: %w: limit %d (use a positive number, 0 for %d, or %d for the whole thread)",
			errInvalidHistoryOption, h.Limit, history.DefaultLimit, NoLimit)
	}
	if h.ReplayResultLimit < NoLimit {
		return dst, fmt.Errorf("thread history: %w: replay result limit %d (use a positive number, 0 for %d, or %d for unclipped)",
			errInvalidHistoryOption, h.ReplayResultLimit, defaultReplayResultLimit, NoLimit)
	}
	limit := h.Limit
	if limit == 0 {
		limit = history.DefaultLimit
	}
	if h.Step < 0 || h.Step > 1 && (limit == NoLimit || h.Step > limit) {
		return dst, fmt.Errorf("thread history: %w: step %d (use a number from 1 to the limit, %d, with a limit that is not the whole thread)",
			errInvalidHistoryOption, h.Step, limit)
	}
	if h.Source == nil {
		return dst, fmt.Errorf("thread history: %w", ErrNoHistorySource)
	}
	thread := inv.Inbound.ThreadID
	q := history.Query{
		ThreadID:         thread,
		ExcludeMessageID: inv.Inbound.MessageID,
		Limit:            h.Limit,
		ToolUses:         !h.SkipToolCalls,
	}
	switch {
	case inv.View != nil:
		q.UpToSeq, q.InboundUpToSeq = inv.View.UpToSeq, inv.Inbound.Seq
	case inv.Inbound.Seq > 0:
		q.UpToSeq = inv.Inbound.Seq - 1
	}
	comp := inv.snap.summarized(h.Source, thread)
	if comp != nil {
		// The omitted note needs the count; without a summary nothing shows it, and counting
		// would read the thread past the window.
		q.AfterSeq, q.CountOmitted = comp.BoundarySeq, true
	}
	stepped := h.Step > 1
	if stepped {
		q.CountOmitted = true // the window's start is counted from the first selected message
	}
	w, err := h.Source.History(ctx, q)
	if err != nil {
		return dst, fmt.Errorf("thread history of %q: %w", thread, err)
	}
	if w == nil {
		return dst, nil
	}
	msgs, omitted := w.Messages, w.Omitted
	if stepped && omitted > 0 {
		// omitted messages lie before the window; the stepped start is the next multiple of
		// Step at or after it.
		start := (omitted + h.Step - 1) / h.Step * h.Step
		drop := min(start-omitted, len(msgs))
		msgs, omitted = msgs[drop:], omitted+drop
	}
	if comp != nil && omitted > 0 {
		dst = append(dst, chat.UserMessage(omittedNote(omitted)))
	}
	if k := previousTurn(msgs); k > 0 {
		dst = h.AppendReplay(dst, msgs[:k])
		inv.snap.noteTurn(len(dst))
		return h.AppendReplay(dst, msgs[k:]), nil
	}
	return h.AppendReplay(dst, msgs), nil
}

// previousTurn returns the index in msgs of the first message of the thread's previous turn —
// the last inbound message before the last outbound one, which the run that sent that reply
// answered, so the request of that run replayed exactly msgs[:k] — or 0 when there is none
// before it (no outbound message, or no inbound message before it).
func previousTurn(msgs []history.Message) int {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Direction == history.Outbound {
			last = i
			break
		}
	}
	for i := last - 1; i >= 0; i-- {
		if msgs[i].Direction == history.Inbound {
			return i
		}
	}
	return 0
}

// omittedNote returns the text of the user message ThreadHistory emits after a summary when n
// messages lie between the compaction boundary and the replayed window.
func omittedNote(n int) string {
	if n == 1 {
		return "[1 earlier message of this thread, newer than the summary above and older than the messages below, is left out.]"
	}
	return fmt.Sprintf("[%d earlier messages of this thread, newer than the summary above and older than the messages below, are left out.]", n)
}
