package store

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkAppendMessage appends messages from 8 concurrent writers (4 per CPU on the
// benchmark's 2), all to one thread ("one_thread") or each to its own ("distinct_threads"), on
// MariaDB and SQLite. An op is one append; appends/s is the rate all writers reach together.
// On one thread each append waits for the previous one's commit (the lock on the thread's first
// row, which keeps seq order equal to commit order): one log flush each; distinct threads commit
// side by side and share flushes. On SQLite every write holds the database's lock, so both serialise.
func BenchmarkAppendMessage(b *testing.B) {
	for _, d := range []Dialect{DialectMySQL, DialectSQLite} {
		b.Run(string(d), func(b *testing.B) {
			s := newTestStore(b, d, WithOptimizeInterval(0))
			ctx := context.Background()
			var n, writer atomic.Int64
			for _, mode := range []string{"one_thread", "distinct_threads"} {
				b.Run(mode, func(b *testing.B) {
					b.SetParallelism(4)
					b.RunParallel(func(pb *testing.PB) {
						thread := "one"
						if mode == "distinct_threads" {
							thread = fmt.Sprintf("writer-%d", writer.Add(1))
						}
						for pb.Next() {
							id := fmt.Sprintf("m-%d", n.Add(1))
							if _, err := s.AppendMessage(ctx, msg(thread, id, h0)); err != nil {
								b.Error(err)
								return
							}
						}
					})
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
				})
			}
		})
	}
}
