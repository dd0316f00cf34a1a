package runtime

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/personagen/personagen/runtime/history"
)

// SummaryPreamble opens the message ThreadSummary emits, followed by a blank line and the stored
// summary. Like silas's compaction_preamble (seed 004) it is a fixed text, a pure function of
// nothing, so a compacted thread replays byte-identically.
const SummaryPreamble = "[The older part of this thread was condensed into the summary below so that it fits " +
	"in the context. It covers every message before the ones that follow it.]"

// ErrSummaryAfterHistory is returned (wrapped) by ThreadSummary when a ThreadHistory for the same
// source and thread already ran in the same Invocation: that history ignored the compaction, so
// the summary would repeat what it replayed. Put thread_summary before thread_history.
var ErrSummaryAfterHistory = errors.New("thread summary must come before thread history")

// ThreadSummary is the thread_summary resolver (silas's compaction preamble, seed 004): when the
// inbound message's thread has a completed compaction, it emits one message, of role Role,
// holding SummaryPreamble, a blank line, and the compaction's Summary. It contributes nothing in
// a scheduled run, for an empty ThreadID, or when the thread has no completed compaction.
//
// The compaction row is read once per Invocation and shared with a later ThreadHistory on the
// same Source, which then replays only the messages after the row's boundary; both therefore see
// the same row even when a compaction completes while the run is assembling its request.
type ThreadSummary struct {
	// Source reads the thread's compaction; required in reply runs.
	Source history.Source
	// Role of the emitted message; "" = RoleUser. RoleTool is refused (a tool message needs a call).
	Role Role
}

// Resolve appends the summary message to dst (see ThreadSummary). It returns an error wrapping
// ErrNoHistorySource when Source is nil in a reply run, ErrInvalidHistoryOption for an invalid
// Role, ErrSummaryAfterHistory when a ThreadHistory on the same Source and thread ran before it
// in this Invocation, and the Source's errors wrapped with the thread id.
func (s *ThreadSummary) Resolve(ctx context.Context, inv *Invocation, dst []Message) ([]Message, error) {
	if inv == nil || inv.Inbound == nil || inv.Inbound.ThreadID == "" {
		return dst, nil
	}
	role := s.Role
	if role == "" {
		role = RoleUser
	}
	if !role.Valid() || role == RoleTool {
		return dst, fmt.Errorf("thread summary: %w: role %q (use user, system or assistant; a tool message needs a call)", ErrInvalidHistoryOption, s.Role)
	}
	if s.Source == nil {
		return dst, fmt.Errorf("thread summary: %w", ErrNoHistorySource)
	}
	comp, err := loadCompaction(ctx, inv, s.Source, inv.Inbound.ThreadID)
	if err != nil {
		return dst, err
	}
	if comp == nil {
		return dst, nil
	}
	return append(dst, Message{Role: role, Text: SummaryText(comp.Summary)}), nil
}

// SummaryText returns the text of the message ThreadSummary emits for a stored summary:
// SummaryPreamble, a blank line, then summary.
func SummaryText(summary string) string { return SummaryPreamble + "\n\n" + summary }

// OmittedNote returns the text of the user message ThreadHistory emits after a summary when n
// messages lie between the compaction boundary and the replayed window:
// "[3 earlier messages of this thread, newer than the summary above and older than the messages
// below, are left out.]" ("1 earlier message ... is left out" for one).
func OmittedNote(n int) string {
	if n == 1 {
		return "[1 earlier message of this thread, newer than the summary above and older than the messages below, is left out.]"
	}
	return fmt.Sprintf("[%d earlier messages of this thread, newer than the summary above and older than the messages below, are left out.]", n)
}

// loadCompaction reads the thread's latest completed compaction through inv's snapshot, so that
// every resolver of the run sees the same row (nil when there is none).
func loadCompaction(ctx context.Context, inv *Invocation, src history.Source, thread string) (*history.Compaction, error) {
	key := compactionKey(src, thread)
	if _, ranFirst := inv.snap.peek(historyRanKey{key}); ranFirst {
		if _, loaded := inv.snap.peek(key); !loaded {
			return nil, fmt.Errorf("thread summary of %q: %w", thread, ErrSummaryAfterHistory)
		}
	}
	v, err := inv.snap.load(key, func() (any, error) {
		c, err := src.LatestCompaction(ctx, thread)
		if err != nil {
			return nil, fmt.Errorf("thread summary of %q: latest compaction: %w", thread, err)
		}
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	c, _ := v.(*history.Compaction)
	return c, nil
}

// compactionSnapshotKey names one thread's compaction row of one source in an Invocation's
// snapshot.
type compactionSnapshotKey struct {
	src    any
	thread string
}

// historyRanKey marks that a ThreadHistory read a thread without a summary before it.
type historyRanKey struct{ compactionSnapshotKey }

// compactionKey returns the snapshot key of (src, thread). A source whose dynamic type cannot
// be a map key (a struct value holding a slice, say) is keyed by its thread only.
func compactionKey(src history.Source, thread string) compactionSnapshotKey {
	if v := reflect.ValueOf(src); !v.IsValid() || !v.Comparable() {
		return compactionSnapshotKey{thread: thread}
	}
	return compactionSnapshotKey{src: src, thread: thread}
}

// SummarizerFunc is a [history.Summarizer] written against rendered messages: its Summarize
// renders the messages a store's compaction hands it as a zero ThreadHistory replays them
// (each message's turn and its tool rounds, results clipped to 4,000 characters) and calls f
// with them. The host implements f with its own model call; the runtime never talks to a
// model. A host that wants another rendering implements history.Summarizer itself and renders
// with (*ThreadHistory).AppendReplay.
type SummarizerFunc func(ctx context.Context, in SummaryInput) (string, error)

// Summarize renders in.Messages (see SummarizerFunc) and returns f's result.
func (f SummarizerFunc) Summarize(ctx context.Context, in history.SummaryInput) (string, error) {
	var h ThreadHistory
	return f(ctx, SummaryInput{
		ThreadID:            in.ThreadID,
		Previous:            in.Previous,
		Messages:            h.AppendReplay(nil, in.Messages),
		BoundarySeq:         in.BoundarySeq,
		PreviousBoundarySeq: in.PreviousBoundarySeq,
	})
}

// SummaryInput is what a SummarizerFunc summarises: the ThreadID, Previous, the summary of the
// thread's earlier compaction ("" for the first one; a new summary must cover it too, which makes
// compaction recursive), and Messages, the thread's messages after the previous boundary up to
// and including the new one, rendered as ThreadHistory replays them (turns and tool rounds).
// BoundarySeq and PreviousBoundarySeq (0 for none) delimit those messages.
type SummaryInput struct {
	ThreadID            string
	Previous            string
	Messages            []Message
	BoundarySeq         int64
	PreviousBoundarySeq int64
}
