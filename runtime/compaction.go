package runtime

import (
	"slices"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/history"
)

// defaultCompactionKeep is the number of most recent messages CompactionPolicy.Plan leaves out
// of a new compaction when Keep is 0.
const defaultCompactionKeep = 10

// CompactionPolicy is a ready-made trigger policy for compaction; when to compact is the host's
// decision, and this helper is one reasonable answer. The host reads the messages after the
// thread's latest compaction (history.Source.History with AfterSeq = its BoundarySeq, Limit
// history.NoLimit, ToolUses set) after a run finished, asks Plan for a boundary, and passes it
// to its store's Compact (e.g. (*store.Store).Compact) with its summarizer.
type CompactionPolicy struct {
	// MaxMessages triggers a compaction when more messages than this lie after the latest
	// compaction; 0 disables the count trigger.
	MaxMessages int
	// MaxChars triggers a compaction when the replay of those messages (turn texts, tool call
	// inputs and tool results as ThreadHistory renders them with its defaults) holds more
	// characters than this — a rough token estimate is MaxChars/4; 0 disables the size trigger.
	MaxChars int
	// Keep is how many of the most recently stored messages (the greatest Seqs) stay out of the
	// new compaction, replayed verbatim: 0 = 10; a value below 1 is treated as
	// 1, so the newest message — whose run may still be recording tool rounds — is never
	// summarised.
	Keep int
}

// Plan reports whether msgs (a thread's messages after its latest compaction, as a
// history.Source returns them) should be compacted now, and if so the boundary to pass to
// Compact. The Keep messages with the greatest Seq — the most recently stored, whatever their
// Date or their order in msgs — are kept; the boundary is the greatest Seq of the others, so it
// is always older (in order of arrival) than every kept message, and Compact summarises exactly
// the messages with Seq up to it while every kept message is replayed after the summary. It
// returns (0, false) when no trigger fires or when no more than Keep messages are given. Plan is
// a pure function of its inputs.
func (p CompactionPolicy) Plan(msgs []history.Message) (boundarySeq int64, ok bool) {
	keep := p.Keep
	switch {
	case keep == 0:
		keep = defaultCompactionKeep
	case keep < 1:
		keep = 1
	}
	if len(msgs) <= keep {
		return 0, false
	}
	fire := p.MaxMessages > 0 && len(msgs) > p.MaxMessages
	if !fire && p.MaxChars > 0 {
		fire = replayChars(msgs) > p.MaxChars
	}
	if !fire {
		return 0, false
	}
	seqs := make([]int64, len(msgs))
	for i, m := range msgs {
		seqs[i] = m.Seq
	}
	slices.Sort(seqs)
	boundarySeq = seqs[len(seqs)-keep-1] // the greatest Seq below the Keep greatest
	return boundarySeq, boundarySeq > 0
}

// replayChars returns the number of characters (runes) of the replay of msgs as a zero
// ThreadHistory renders it: every message's text, every tool call's name and input, every tool
// result (clipped to 4,000 characters). It is the size CompactionPolicy.MaxChars measures.
func replayChars(msgs []history.Message) int {
	var h ThreadHistory
	n := 0
	for _, m := range h.AppendReplay(nil, msgs) {
		n += utf8.RuneCountInString(m.Text)
		for _, c := range m.ToolCalls {
			n += utf8.RuneCountInString(c.Name) + utf8.RuneCount(c.Input)
		}
	}
	return n
}
