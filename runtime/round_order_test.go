package runtime_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

// usesFrom builds tool uses from fuzz bytes: four bytes a use (Seq, run, turn, position), with
// few distinct values so that ties and split rounds are common.
func usesFrom(data []byte) []history.ToolUse {
	var uses []history.ToolUse
	for i := 0; i+3 < len(data) && len(uses) < 40; i += 4 {
		uses = append(uses, history.ToolUse{Seq: int64(data[i] % 6), RunID: string(rune('p' + data[i+1]%3)),
			TurnIndex: int(data[i+2] % 3), Position: int(data[i+3] % 4)})
	}
	return uses
}

// rounds counts the distinct (RunID, TurnIndex) of uses.
func rounds(uses []history.ToolUse) int {
	type key struct {
		run  string
		turn int
	}
	seen := map[key]bool{}
	for _, u := range uses {
		seen[key{u.RunID, u.TurnIndex}] = true
	}
	return len(seen)
}

// The replay skips sorting a message's tool uses when they already are in replay order, so
// that check must agree with the sort exactly: true when sorting leaves the uses as they are
// (for up to eight rounds; beyond, it may answer false and let the sort run), false otherwise,
// and true for every sorted list of up to eight rounds.
func FuzzInReplayOrderMatchesTheSort(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 1, 0, 0, 1, 2, 1, 0, 0, 3, 1, 1, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1}) // a round split by another with equal Seqs
	f.Add([]byte{2, 0, 1, 0, 2, 1, 0, 0})             // equal Seqs, TurnIndex decides
	f.Add([]byte{3, 0, 0, 1, 2, 0, 0, 0})             // a round whose second use has the smaller Seq
	f.Add([]byte{0, 0, 0, 2, 1, 0, 0, 2, 2, 0, 0, 1}) // equal Positions, Seq decides
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		b := make([]byte, 4*(1+r.IntN(12)))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		uses := usesFrom(data)
		sorted := slices.Clone(uses)
		runtime.SortToolUses(sorted)
		unchanged := slices.Equal(sorted, uses)
		got := runtime.InReplayOrder(uses)
		if got && !unchanged {
			t.Fatalf("InReplayOrder(%v) = true, but sorting gives %v", uses, sorted)
		}
		if !got && unchanged && rounds(uses) <= 8 {
			t.Fatalf("InReplayOrder(%v) = false, but the uses are sorted", uses)
		}
		if rounds(sorted) <= 8 && !runtime.InReplayOrder(sorted) {
			t.Fatalf("InReplayOrder(%v) = false for a sorted list", sorted)
		}
	})
}
