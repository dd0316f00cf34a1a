package store

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

const (
	benchThread   = "bench-thread"
	benchMessages = 1000
	benchUses     = 2000 // 500 inbound messages x 2 rounds x 2 parallel calls
)

// seedBenchThread writes a thread of benchMessages messages (every other one inbound, every
// fifth with an attachment) and benchUses tool uses with multi-row inserts.
func seedBenchThread(b *testing.B, s *Store) {
	b.Helper()
	ctx := context.Background()
	d := s.dialect
	const batch = 100
	body := strings.Repeat("Some words of a realistic email body. ", 20)
	for start := 0; start < benchMessages; start += batch {
		var rows []string
		var args []any
		for i := start; i < start+batch; i++ {
			dir := "inbound"
			if i%2 == 1 {
				dir = "outbound"
			}
			var start, atts any // the thread's first row stands for it; every fifth message has an attachment
			if i == 0 {
				start = benchThread
			}
			if i%5 == 0 {
				atts = `[{"id":"att-` + itoa(i) + `","filename":"file.pdf","content_type":"application/pdf","size":1234}]`
			}
			rows = append(rows, "("+placeholders(12)+")")
			args = append(args, benchThread, start, benchThread+"-"+itoa(i), dir, "ada@example.com", `["support@acme.test"]`, `[]`,
				"Subject "+itoa(i), d.timeArg(h0.Add(time.Duration(i)*time.Second)), body, "", atts)
		}
		if _, err := s.DB().ExecContext(ctx, d.rebind(`INSERT INTO messages (thread_id, thread_start, message_id, direction,
			sender, recipients, cc, subject, sent_at, text_body, html_body, attachments) VALUES `+strings.Join(rows, ", ")), args...); err != nil {
			b.Fatal(err)
		}
	}
	seqs := threadSeqs(b, s, benchThread)
	var uses []string
	var useArgs []any
	result := `{"items":[` + strings.Repeat(`{"title":"a result","url":"https://example.com/x"},`, 30) + `{}]}`
	for i, seq := range seqs {
		if i%2 == 1 {
			continue
		}
		for turn := range 2 {
			for pos := range 2 {
				uses = append(uses, "("+placeholders(12)+")")
				useArgs = append(useArgs, "message", seq, benchThread, "bench", "run-"+itoa(i), turn, pos,
					"call-"+itoa(turn)+"-"+itoa(pos), "search", `{"q":"query `+itoa(i)+`"}`, result, true)
			}
		}
	}
	for start := 0; start < len(uses); start += 200 {
		end := min(start+200, len(uses))
		if _, err := s.DB().ExecContext(ctx, d.rebind(`INSERT INTO tool_uses (owner_type, owner_id, thread_id, persona,
			run_id, turn_index, position, tool_call_id, tool_name, arguments, result, succeeded) VALUES `+
			strings.Join(uses[start:end], ", ")), useArgs[start*12:end*12]...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReplay replays a 1,000-message thread with 2,000 tool uses (ThreadSummary +
// ThreadHistory with NoLimit, through the Store) on SQLite and MariaDB. "baseline" only selects
// the same rows (messages with their attachments column, tool uses of the thread) into structs; "replay" reports
// queries/op and x-baseline, its time divided by the baseline's, measured next to each replay.
func BenchmarkReplay(b *testing.B) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		b.Run(string(d), func(b *testing.B) {
			dsn := scratchDSN(b, d)
			s := openMigrated(b, dsn)
			seedBenchThread(b, s)
			cs, queries := countingStore(b, s, dsn)
			ctx := context.Background()
			baseline := func(b *testing.B) {
				var msgs []messageRow
				if err := cs.DB().SelectContext(ctx, &msgs, cs.dialect.rebind(`SELECT seq, message_id, direction, sender,
					recipients, cc, subject, sent_at, text_body, html_body, attachments FROM messages WHERE thread_id = ?
					ORDER BY seq`), benchThread); err != nil {
					b.Fatal(err)
				}
				var uses []historyToolUseRow
				if err := cs.DB().SelectContext(ctx, &uses, cs.dialect.rebind(`SELECT seq, owner_id, run_id, turn_index,
					position, tool_call_id, tool_name, arguments, result, succeeded FROM tool_uses
					WHERE thread_id = ? ORDER BY owner_id, seq`), benchThread); err != nil {
					b.Fatal(err)
				}
				if len(msgs) != benchMessages || len(uses) != benchUses {
					b.Fatalf("baseline read %d messages and %d tool uses", len(msgs), len(uses))
				}
			}
			b.Run("baseline", func(b *testing.B) {
				q0 := queries.Load()
				for range b.N {
					baseline(b)
				}
				b.ReportMetric(float64(queries.Load()-q0)/float64(b.N), "queries/op")
			})
			b.Run("replay", func(b *testing.B) {
				chain := runtime.NewChain(
					runtime.Step{Kind: "thread_summary", Resolver: &runtime.ThreadSummary{Source: cs}},
					runtime.Step{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: cs, Limit: runtime.NoLimit}},
				)
				var buf []chat.Message
				var queryCount int64
				var baseTime time.Duration
				b.ResetTimer()
				for range b.N {
					// The baseline runs next to each replay, off the clock, so that a change in
					// the machine's load hits both sides of the ratio alike.
					b.StopTimer()
					t := time.Now()
					baseline(b)
					baseTime += time.Since(t)
					q0 := queries.Load()
					b.StartTimer()
					inv := &runtime.Invocation{Inbound: &history.Message{ThreadID: benchThread, MessageID: "current"}}
					out, err := chain.Resolve(ctx, inv, buf[:0])
					if err != nil {
						b.Fatal(err)
					}
					if len(out) != benchMessages+benchUses+benchUses/2 {
						b.Fatalf("replay has %d messages", len(out))
					}
					buf = out
					queryCount += queries.Load() - q0
				}
				b.ReportMetric(float64(queryCount)/float64(b.N), "queries/op")
				b.ReportMetric(float64(b.Elapsed())/float64(baseTime), "x-baseline")
			})
		})
	}
}
