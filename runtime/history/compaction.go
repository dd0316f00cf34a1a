package history

import "context"

// Compaction is a completed summary of a thread up to and including its boundary message.
// BoundarySeq is that message's Seq; a replay after it shows only messages after the boundary.
// Summary is the stored text, generated once and never recomputed.
type Compaction struct {
	ThreadID          string
	BoundarySeq       int64
	BoundaryMessageID string
	Summary           string
}

// Summarizer writes the summary of a stretch of a thread; a store's compaction calls it once
// per boundary, outside any transaction, with the data of the messages to summarise. It
// returns the summary text, which must not be blank, or an error. Hosts usually implement it
// with package runtime's SummarizerFunc, which hands their model call the messages rendered as
// the replay renders them.
type Summarizer interface {
	Summarize(ctx context.Context, in SummaryInput) (string, error)
}

// SummaryInput is what a [Summarizer] summarises: ThreadID; Previous, the summary of the
// thread's previous compaction ("" for the first: a new summary must cover it too, which makes
// compaction recursive); and Messages, the thread's messages after PreviousBoundarySeq (0 for
// none) up to and including BoundarySeq, oldest first, each with all its tool uses.
type SummaryInput struct {
	ThreadID            string
	Previous            string
	Messages            []Message
	BoundarySeq         int64
	PreviousBoundarySeq int64
}
