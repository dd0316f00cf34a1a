package history

import (
	"context"
	"errors"
	"fmt"
)

// Source is where a persona's thread-history resolvers read a thread's past. Implementations
// must follow the rules in the package documentation (order by Seq, windowing, determinism) and
// are checked by runtime/historytest.
type Source interface {
	// LatestCompaction returns the thread's completed compaction with the greatest
	// BoundarySeq, or (nil, nil) when it has none.
	LatestCompaction(ctx context.Context, threadID string) (*Compaction, error)
	// History returns the window of the thread's messages that q selects (see [Query] and
	// [Window]), oldest first by Seq, with their tool uses when q.ToolUses is set. It runs a
	// bounded number of queries whatever the thread's length. An unknown thread gives an empty
	// Window, not an error; a query that fails [Query.Check] gives that error (wrapping
	// [ErrInvalidQuery]).
	History(ctx context.Context, q Query) (*Window, error)
}

// DefaultLimit is the number of messages a window holds when a Limit is 0: in a [Query] and in
// the thread_history resolver alike.
const DefaultLimit = 50

// NoLimit, as a Limit, selects every message: in a [Query] and in the thread_history resolver
// alike (there it also means "unclipped" for the replayed tool results).
const NoLimit = -1

// ErrInvalidQuery is returned (wrapped) by [Query.Check] and by every Source for a query that
// breaks the rules of [Query].
var ErrInvalidQuery = errors.New("invalid history query")

// Query selects the messages of a thread to replay.
type Query struct {
	// ThreadID is the thread to read; required.
	ThreadID string
	// ExcludeMessageID is left out wherever it lies (the message being answered); "" excludes
	// nothing.
	ExcludeMessageID string
	// AfterSeq keeps only messages whose Seq is greater (a compaction's boundary); 0 keeps all.
	// Negative is invalid.
	AfterSeq int64
	// UpToSeq keeps only messages whose Seq is at most UpToSeq (the part of a thread a new
	// compaction summarises); 0 keeps all. Negative is invalid.
	UpToSeq int64
	// InboundUpToSeq keeps only inbound messages whose Seq is at most InboundUpToSeq, while
	// outbound messages are bounded by UpToSeq alone: a reply run's view of its thread holds
	// what arrived before the message it answers and the replies that earlier runs stored since
	// (see View). 0 keeps all. Negative is invalid.
	InboundUpToSeq int64
	// Limit is how many of the most recent selected messages the window holds: 0 means
	// DefaultLimit (50), NoLimit (-1) means all of them. Below -1 is invalid.
	Limit int
	// ToolUses asks for each message's recorded tool uses.
	ToolUses bool
	// CountOmitted asks for Window.Omitted. Without it a Source may leave Omitted 0: counting
	// what lies before a window reads the thread past the window, so a reader asks only when it
	// shows the count (the thread_history resolver does after a compaction's summary).
	CountOmitted bool
}

// Check reports whether q is well formed: a ThreadID is set, AfterSeq, UpToSeq and
// InboundUpToSeq are not negative, and Limit is at least NoLimit. It returns nil or an error
// wrapping [ErrInvalidQuery] that names the field.
func (q Query) Check() error {
	switch {
	case q.ThreadID == "":
		return fmt.Errorf("%w: no thread id", ErrInvalidQuery)
	case q.AfterSeq < 0:
		return fmt.Errorf("%w: AfterSeq %d is negative (0 keeps every message)", ErrInvalidQuery, q.AfterSeq)
	case q.UpToSeq < 0:
		return fmt.Errorf("%w: UpToSeq %d is negative (0 keeps every message)", ErrInvalidQuery, q.UpToSeq)
	case q.InboundUpToSeq < 0:
		return fmt.Errorf("%w: InboundUpToSeq %d is negative (0 keeps every message)", ErrInvalidQuery, q.InboundUpToSeq)
	case q.Limit < NoLimit:
		return fmt.Errorf("%w: Limit %d (use a positive number, 0 for %d, or NoLimit (%d) for all)",
			ErrInvalidQuery, q.Limit, DefaultLimit, NoLimit)
	}
	return nil
}

// MaxMessages returns how many messages the window of q may hold, and false when it is
// unbounded (Limit is NoLimit): Limit itself, or DefaultLimit for 0. It is meaningful only for
// a query that passes Check.
func (q Query) MaxMessages() (int, bool) {
	switch q.Limit {
	case 0:
		return DefaultLimit, true
	case NoLimit:
		return 0, false
	}
	return q.Limit, true
}

// Window is the answer to a [Query]: Messages, the selected messages that fit the limit,
// oldest first by Seq; and Omitted, when the Query set CountOmitted, how many selected messages
// (after AfterSeq, up to UpToSeq and InboundUpToSeq, without the excluded one) lie before the
// window because of the limit (0 when every selected message fits, and may be 0 without
// CountOmitted).
type Window struct {
	Messages []Message
	Omitted  int
}

// View is a reply run's fixed view of the thread it answers, so that every attempt of the run —
// the first one and any resumed after a crash — reads the same messages and assembles the same
// request. UpToSeq is the Seq of the thread's newest message when the run started: the run reads
// the messages stored up to it, of which inbound ones only up to the message it answers (later
// arrivals belong to later runs), and outbound ones all (the replies of earlier runs, stored after
// the answered message arrived). Compaction is the compaction the run started with (nil: none,
// even if one completed since).
type View struct {
	UpToSeq    int64
	Compaction *Compaction
}
