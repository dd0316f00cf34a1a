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
// replayOrder returns uses in replay order (see sortToolUses): uses itself when it already is
// (the order a SQL source gives), otherwise a sorted copy in *scratch, valid until the next call.
func replayOrder(uses []history.ToolUse, scratch *[]history.ToolUse) []history.ToolUse {
	if inReplayOrder(uses) {
		return uses
	}
	*scratch = append((*scratch)[:0], uses...)
	sortToolUses(*scratch)
	return *scratch
}

// inReplayOrder reports, in one pass and without allocating, whether sortToolUses would leave
// uses as they are: each round contiguous, its uses by Position (then Seq), and each round
// after the one before it by smallest Seq, then TurnIndex (rounds tying on both stay in the
// order they come in, as the sort keeps them). It answers false, making the caller sort, for
// more than eight rounds.
func inReplayOrder(uses []history.ToolUse) bool {
	var seen [8]*history.ToolUse // the first use of each round met so far
	n := 0
	var prevMin, curMin int64 // the smallest Seq of the previous round and of the current one
	var prevTurn, curTurn int
	before := func() bool { return prevMin < curMin || prevMin == curMin && prevTurn <= curTurn }
	for i := range uses {
		u := &uses[i]
		if i > 0 && sameRound(uses[i-1], *u) {
			if p := &uses[i-1]; u.Position < p.Position || u.Position == p.Position && u.Seq < p.Seq {
				return false
			}
			curMin = min(curMin, u.Seq)
			continue
		}
		if n > 1 && !before() {
			return false
		}
		for _, f := range seen[:n] {
			if sameRound(*f, *u) {
				return false // the round was split
			}
		}
		if n == len(seen) {
			return false
		}
		seen[n] = u
		n++
		prevMin, prevTurn = curMin, curTurn
		curMin, curTurn = u.Seq, u.TurnIndex
	}
	return n < 2 || before()
}

func sameRound(a, b history.ToolUse) bool { return a.RunID == b.RunID && a.TurnIndex == b.TurnIndex }
