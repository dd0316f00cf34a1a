package runtime

import (
	"cmp"
	"slices"

	"github.com/personagen/personagen/runtime/history"
)

// sortToolUses sorts one message's tool uses in place into replay order: rounds (uses sharing
// RunID and TurnIndex) by the smallest Seq of each round — the order they were recorded —, then
// by TurnIndex, and within a round by Position, then Seq. Run ids are only compared for
// equality, never as text, and timestamps play no part. The uses of one round always end up
// adjacent: rounds whose smallest Seq and TurnIndex tie (possible only when a source repeats
// Seqs) keep the order of their first appearance. Uses whose keys are all equal keep their
// relative order (the sort is stable). Sources hand tool uses over in any order; this is the
// one place that orders them.
func sortToolUses(uses []history.ToolUse) {
	if len(uses) < 2 {
		return
	}
	type roundKey struct {
		run  string
		turn int
	}
	type roundOrder struct {
		first   int64 // the round's smallest Seq
		ordinal int   // the round's first appearance in uses, for sources with repeated Seqs
	}
	rounds := make(map[roundKey]roundOrder, 4)
	for _, u := range uses {
		k := roundKey{u.RunID, u.TurnIndex}
		if r, ok := rounds[k]; !ok {
			rounds[k] = roundOrder{first: u.Seq, ordinal: len(rounds)}
		} else if u.Seq < r.first {
			rounds[k] = roundOrder{first: u.Seq, ordinal: r.ordinal}
		}
	}
	slices.SortStableFunc(uses, func(a, b history.ToolUse) int {
		ra, rb := rounds[roundKey{a.RunID, a.TurnIndex}], rounds[roundKey{b.RunID, b.TurnIndex}]
		return cmp.Or(
			cmp.Compare(ra.first, rb.first),
			cmp.Compare(a.TurnIndex, b.TurnIndex),
			cmp.Compare(ra.ordinal, rb.ordinal),
			cmp.Compare(a.Position, b.Position),
			cmp.Compare(a.Seq, b.Seq),
		)
	})
}

// sameRound reports whether two tool uses belong to one round.
func sameRound(a, b history.ToolUse) bool { return a.RunID == b.RunID && a.TurnIndex == b.TurnIndex }
