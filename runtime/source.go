package runtime

import (
	"context"
	"time"
)

// HistorySource is where the ThreadHistory and ThreadSummary resolvers read a thread's past.
// The SQL store (runtime/store) implements it; a host with its own tables can implement it too.
// Implementations must be deterministic: the same stored rows give the same values, in the same
// order, on every call.
type HistorySource interface {
	// LatestCompaction returns the thread's newest completed compaction, or (nil, nil) when it
	// has none.
	LatestCompaction(ctx context.Context, threadID string) (*Compaction, error)
	// History returns the messages of q.ThreadID selected by q in the order the source stored
	// them (by Seq; never by SentAt, which the sender controls), with their tool uses when q.ToolUses is set. It runs a
	// bounded number of queries whatever the thread's length. An unknown thread yields an empty
	// History, not an error.
	History(ctx context.Context, q HistoryQuery) (*History, error)
}

// HistoryQuery selects the messages of a thread to replay.
type HistoryQuery struct {
	// ThreadID is the thread to read.
	ThreadID string
	// ExcludeMessageID is left out wherever it lies (the message being answered); "" excludes
	// nothing.
	ExcludeMessageID string
	// AfterSeq keeps only messages whose Seq is greater (a compaction's boundary); 0 keeps all.
	AfterSeq int64
	// UpToSeq keeps only messages whose Seq is at most UpToSeq (the part of a thread a new
	// compaction summarises); 0 keeps all.
	UpToSeq int64
	// Limit keeps only the most recent Limit messages of those selected; 0 or less keeps all.
	Limit int
	// ToolUses asks for each message's recorded tool uses.
	ToolUses bool
}

// History is the answer to a HistoryQuery: the window of messages, oldest first, and Omitted, how
// many messages the query selected (after AfterSeq, without the excluded one) that lie before the
// window because of Limit. Omitted is 0 without a limit.
type History struct {
	Messages []StoredMessage
	Omitted  int
}

// Direction says whether a stored message came in to the persona or went out from it.
type Direction string

// The two directions. Inbound messages replay as user turns, outbound as assistant turns.
const (
	DirectionInbound  Direction = "inbound"
	DirectionOutbound Direction = "outbound"
)

// StoredMessage is one message of a thread as a HistorySource holds it. Seq is its monotonic
// insertion key (the order in which the source received the thread's messages, which is the
// replay order); SentAt, the sender's Date header, is what the turn text shows; it is in UTC
// with microsecond precision. Attachments carry metadata only (Data nil). ToolUses holds the
// tool calls recorded for the run that answered this message, in recording order (see ToolUse).
type StoredMessage struct {
	Seq         int64
	MessageID   string
	Direction   Direction
	From        string
	To          []string
	Cc          []string
	SentAt      time.Time
	Subject     string
	Text        string
	HTML        string
	Attachments []Attachment
	ToolUses    []ToolUse
}

// ToolUse is one recorded tool call and its result (protege's ToolUse row, seed 003). RunID
// groups one run, TurnIndex is the tool-calling round within that run (from 0), Position the
// call's place within the round (from 0). Seq is the row's monotonic insertion key; a source
// returns a message's tool uses ordered by the rounds' recording order (the smallest Seq of each
// (RunID, TurnIndex) round), then TurnIndex, then Position — never by comparing RunIDs as text.
// Arguments and Result are the stored JSON texts, possibly clipped (then no longer valid JSON).
// HasResult is false when the source recorded the call but no result for it; the SQL store
// always records both.
type ToolUse struct {
	Seq        int64
	RunID      string
	TurnIndex  int
	Position   int
	ToolCallID string
	ToolName   string
	Arguments  string
	Result     string
	HasResult  bool
	Succeeded  bool
}

// Compaction is a completed summary of a thread up to and including its boundary message
// (silas's Compaction row, seed 004). BoundarySeq is that message's Seq; ThreadHistory replays
// only messages after it. Summary is the stored text, generated once and never recomputed.
type Compaction struct {
	ThreadID          string
	BoundarySeq       int64
	BoundaryMessageID string
	Summary           string
}
