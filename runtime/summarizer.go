package runtime

import (
	"context"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// SummarizerFunc is a [history.Summarizer] written against rendered messages: its Summarize
// renders the messages a store's compaction hands it as a zero ThreadHistory replays them
// (each message's turn and its tool rounds, results clipped to 4,000 characters) and calls f
// with them. The host implements f with its own model call; the runtime never talks to a
// model. A host that wants another rendering implements history.Summarizer itself and renders
// with [ThreadHistory.AppendReplay].
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
	Messages            []chat.Message
	BoundarySeq         int64
	PreviousBoundarySeq int64
}
