package assembly

import (
	"context"
	"testing"
	"time"

	"github.com/personagen/personagen/bench/internal/cputime"
)

// measure runs build b.N times and reports, besides the standard metrics, cpu-ns/op: the CPU
// time (user + system, all threads: the garbage collector included) the process spent per
// op. On a shared machine it moves far less than the wall time, which also counts the time
// other processes held the CPU.
func measure(b *testing.B, build func() (int, error)) {
	b.ReportAllocs()
	cpu0, ok := cputime.Process()
	for b.Loop() {
		n, err := build()
		if err != nil || n != wantMessages {
			b.Fatalf("built %d messages (want %d): %v", n, wantMessages, err)
		}
	}
	if cpu1, ok1 := cputime.Process(); ok && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// wantMessages is the length of the assembled request (see TestFixtureExercisesTheReplayRules).
const wantMessages = 2 + HistoryMessages + ToolRounds*(1+CallsPerRound) + 1

// BenchmarkAssembly builds the same request from the same rows with the generated personagen
// pipeline, the hand-written baseline (baseline.go) and the two Go peers; each op is one whole
// request, row conversion included.
// Run: go test -run '^$' -bench Assembly -benchmem ./assembly/
func BenchmarkAssembly(b *testing.B) {
	ctx := context.Background()
	f := NewFixture()
	p, err := NewPersonagen(f)
	if err != nil {
		b.Fatal(err)
	}
	lc, eino, base := NewLangChainGo(f), NewEino(f), NewBaseline(f)
	b.Run("personagen", func(b *testing.B) {
		measure(b, func() (int, error) {
			req, err := p.Build(ctx)
			if err != nil {
				return 0, err
			}
			return len(req.Messages), nil
		})
	})
	b.Run("baseline", func(b *testing.B) {
		measure(b, func() (int, error) { msgs, err := base.Build(ctx); return len(msgs), err })
	})
	// ratio alternates the two, timing each op, so that a change of the machine's load hits
	// both sides of the ratio alike (the medians of the two separate benchmarks drift apart
	// when other processes come and go between them).
	b.Run("ratio", func(b *testing.B) {
		var ours, theirs time.Duration
		i := 0
		for b.Loop() {
			i++
			for k := range 2 {
				start := time.Now()
				if (i+k)%2 == 0 {
					if _, err := p.Build(ctx); err != nil {
						b.Fatal(err)
					}
					ours += time.Since(start)
				} else {
					if _, err := base.Build(ctx); err != nil {
						b.Fatal(err)
					}
					theirs += time.Since(start)
				}
			}
		}
		b.ReportMetric(float64(ours)/float64(theirs), "personagen/baseline")
	})
	b.Run("langchaingo", func(b *testing.B) {
		measure(b, func() (int, error) { msgs, err := lc.Build(ctx); return len(msgs), err })
	})
	b.Run("eino", func(b *testing.B) {
		measure(b, func() (int, error) { msgs, err := eino.Build(ctx); return len(msgs), err })
	})
}
