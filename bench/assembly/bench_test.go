package assembly

import (
	"context"
	"testing"
)

// wantMessages is the length of the assembled request (see TestFixtureExercisesTheReplayRules).
const wantMessages = 2 + HistoryMessages + ToolRounds*(1+CallsPerRound) + 1

// BenchmarkAssembly builds the same request from the same rows with the generated personagen
// pipeline and with the two Go peers; each op is one whole request, row conversion included.
// Run: go test -run '^$' -bench Assembly -benchmem ./assembly/
func BenchmarkAssembly(b *testing.B) {
	ctx := context.Background()
	f := NewFixture()
	p, err := NewPersonagen(f)
	if err != nil {
		b.Fatal(err)
	}
	lc, eino := NewLangChainGo(f), NewEino(f)
	b.Run("personagen", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			req, err := p.Build(ctx)
			if err != nil || len(req.Messages) != wantMessages {
				b.Fatal(err)
			}
		}
	})
	b.Run("langchaingo", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, err := lc.Build(ctx)
			if err != nil || len(msgs) != wantMessages {
				b.Fatal(err)
			}
		}
	})
	b.Run("eino", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			msgs, err := eino.Build(ctx)
			if err != nil || len(msgs) != wantMessages {
				b.Fatal(err)
			}
		}
	})
}
