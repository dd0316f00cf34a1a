package store

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/personagen/personagen/runtime/store/storetest"
)

// tripCase is one call whose round trips checkTrips counts: run makes the call, want is its
// cost.
type tripCase struct {
	name string
	run  func() error
	want int64
}

// checkTrips runs each case in order, counting its round trips alone in trips, and fails the
// test on a case's error or on a count other than its want.
func checkTrips(t *testing.T, trips *atomic.Int64, cases []tripCase) {
	t.Helper()
	for _, c := range cases {
		trips.Store(0)
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := trips.Load(); got != c.want {
			t.Errorf("%s: %d round trips, want %d", c.name, got, c.want)
		}
	}
}

// newTripCountingMySQLStore returns a migrated store on a MySQL scratch database whose connections
// count round trips into the returned counter.
func newTripCountingMySQLStore(tb testing.TB) (*Store, *atomic.Int64) {
	tb.Helper()
	p, err := parseDSN(migratedDSN(tb, DialectMySQL))
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := mysql.NewConnector(p.mysql)
	if err != nil {
		tb.Fatal(err)
	}
	trips := new(atomic.Int64)
	s, err := OpenDB(sqlx.NewDb(sql.OpenDB(storetest.CountTrips(conn, trips, nil)), "mysql"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return s, trips
}

// findOrCreateRound is the baseline RecordRound is measured against: recording a round as an
// ORM's find-or-create does it, one SELECT then one INSERT per call inside one transaction,
// 2N+2 round trips for N calls.
func findOrCreateRound(ctx context.Context, s *Store, r Round) error {
	rows, err := s.roundRows(r)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(tx *sqlx.Tx) error {
		for _, row := range rows {
			var seq int64
			err := tx.GetContext(ctx, &seq, `SELECT seq FROM tool_uses WHERE owner_type = ? AND owner_id = ?
				AND run_id = ? AND turn_index = ? AND position = ?`, string(r.Owner.Type), r.Owner.ID, r.RunID, r.TurnIndex, row.Position)
			if err == nil {
				continue
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO tool_uses (owner_type, owner_id, thread_id, persona, run_id,
				turn_index, position, tool_call_id, tool_name, arguments, result, succeeded)
				VALUES (?, ?, (SELECT thread_id FROM messages WHERE seq = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				string(r.Owner.Type), r.Owner.ID, r.Owner.ID, row.Persona, r.RunID, r.TurnIndex, row.Position,
				row.ToolCallID, row.ToolName, row.Arguments, row.Result, row.Succeeded); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkRecordRound records rounds of 8 calls on MariaDB/MySQL: RecordRound (one multi-row
// INSERT) against the find-then-insert-per-row baseline, reporting round trips per round and,
// in the "ratio" sub-benchmark, baseline time divided by RecordRound time (both pay the
// commit's fsync). Run: go test -run '^$' -bench RecordRound ./runtime/store/
func BenchmarkRecordRound(b *testing.B) {
	const calls = 8
	ctx := context.Background()
	s, trips := newTripCountingMySQLStore(b)
	src := Owner{OwnerMessage, mustAppendB(b, s, msg("bench", "bench-in", baseTime))}
	turn := 0
	next := func() Round { turn++; return testRound(src, "bench-run", turn, calls) }
	record := func(b *testing.B) time.Duration {
		start := time.Now()
		if out, err := s.RecordRound(ctx, next()); err != nil || out != Stored {
			b.Fatalf("RecordRound = %v, %v", out, err)
		}
		return time.Since(start)
	}
	baseline := func(b *testing.B) time.Duration {
		start := time.Now()
		if err := findOrCreateRound(ctx, s, next()); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for _, c := range []struct {
		name string
		run  func(*testing.B) time.Duration
	}{{"multi_row_insert", record}, {"find_or_create", baseline}} {
		b.Run(c.name, func(b *testing.B) {
			trips.Store(0)
			for b.Loop() {
				c.run(b)
			}
			b.ReportMetric(float64(trips.Load())/float64(b.N), "roundtrips/op")
		})
	}
	b.Run("ratio", func(b *testing.B) {
		var mine, theirs time.Duration
		i := 0
		for b.Loop() { // alternate which goes first, so neither always follows the other's fsync
			if i++; i%2 == 0 {
				mine += record(b)
				theirs += baseline(b)
			} else {
				theirs += baseline(b)
				mine += record(b)
			}
		}
		b.ReportMetric(float64(theirs)/float64(mine), "baseline/recordround")
	})
}

func mustAppendB(b *testing.B, s *Store, m Message) int64 {
	a, err := s.AppendMessage(context.Background(), m)
	if err != nil {
		b.Fatal(err)
	}
	return a.Seq
}

// TestRecordRoundCostsThreeRoundTrips pins the round-trip count the benchmark reports: BEGIN,
// one INSERT, COMMIT for a new round of 8 calls, against 2N+2 for the baseline; a retry of a
// stored round adds the rollback and one read.
func TestRecordRoundCostsThreeRoundTrips(t *testing.T) {
	s, trips := newTripCountingMySQLStore(t)
	ctx := context.Background()
	src := Owner{OwnerMessage, mustAppend(t, s, msg("t", "m", baseTime))}
	r := testRound(src, "run", 0, 8)
	checkTrips(t, trips, []tripCase{
		{"new round", func() error { _, err := s.RecordRound(ctx, r); return err }, 3},
		{"retry of a stored round", func() error { _, err := s.RecordRound(ctx, r); return err }, 4},
		{"find-or-create baseline", func() error { return findOrCreateRound(ctx, s, testRound(src, "run", 1, 8)) }, 2*8 + 2},
	})
}
