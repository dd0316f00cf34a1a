package schedule

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// BenchmarkClaim measures claiming fires with n schedulers contending, each over its own
// one-connection store: every scheduler tries every fire, one wins it. ns/op is per fire (so
// claims/s is 1e9 ÷ ns/op), and on MySQL roundtrips/claim counts the statements the winner's
// claim sent (the server's Questions counter of its session), roundtrips/fire those of all n
// contenders. "insert" is the scheduler's claim (one INSERT; the losers' INSERT fails on the
// unique key and they read the stored run); "lock_then_insert" is the usual alternative, a
// transaction that locks the fire with SELECT ... FOR UPDATE and inserts when it is free,
// retried on deadlock (MySQL only).
func BenchmarkClaim(b *testing.B) {
	for _, d := range dialects {
		b.Run(string(d), func(b *testing.B) {
			dsn := scratchDSN(b, d)
			claims := []string{"insert"}
			if d == store.DialectMySQL {
				claims = append(claims, "lock_then_insert")
			}
			for _, claim := range claims {
				for _, n := range []int{1, 4, 16} {
					b.Run(fmt.Sprintf("%s/%d_schedulers", claim, n), func(b *testing.B) {
						benchClaims(b, dsn, d, claim, n)
					})
				}
			}
		})
	}
}

var benchRound atomic.Int64

func benchClaims(b *testing.B, dsn string, d store.Dialect, claim string, n int) {
	round := benchRound.Add(1)
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var scheds []*Scheduler
	for i := range n {
		st := openStore(b, dsn, SystemClock())
		st.DB().SetMaxOpenConns(1) // one session, so its statement counter is the claims'
		st.DB().SetMaxIdleConns(1)
		s, err := New(st, nil, RunnerFunc(func(context.Context, Fire) (FireResult, error) { return FireResult{}, nil }),
			WithHolder(fmt.Sprintf("bench-%d-%d", round, i)), WithLogger(quietLogger))
		if err != nil {
			b.Fatal(err)
		}
		scheds = append(scheds, s)
	}
	p := &runtime.Persona{Name: fmt.Sprintf("bench-%d", round)}
	// One responsibility per fire, so a won fire (left running) never makes the next one busy.
	jobs := make([]*job, b.N)
	for i := range jobs {
		jobs[i] = &job{persona: p, resp: runtime.Responsibility{Name: fmt.Sprintf("r%d", i)}}
	}
	ctx := context.Background()
	before := make([]int64, n)
	for i, s := range scheds {
		before[i] = questions(b, s.store)
	}
	var wins, winnerTrips atomic.Int64
	var failed atomic.Value
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, s := range scheds {
		wg.Go(func() {
			for i, j := range jobs {
				at := base.Add(time.Duration(i) * time.Minute)
				var q0 int64
				if n == 1 {
					q0 = questions(b, s.store)
				}
				won, err := claimWith(ctx, s, claim, j, at)
				if err != nil {
					failed.Store(err)
					return
				}
				if won {
					wins.Add(1)
					if n == 1 {
						winnerTrips.Add(questions(b, s.store) - q0 - 1)
					}
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if int(wins.Load()) != b.N {
		b.Fatalf("%d fires won, want exactly one winner for each of %d", wins.Load(), b.N)
	}
	if d != store.DialectMySQL {
		return
	}
	var total int64
	for i, s := range scheds {
		total += questions(b, s.store) - before[i] - 1
	}
	if n == 1 {
		total -= 2 * int64(b.N) // the per-claim counter reads
		b.ReportMetric(float64(winnerTrips.Load())/float64(b.N), "roundtrips/claim")
	}
	b.ReportMetric(float64(total)/float64(b.N), "roundtrips/fire")
}

// claimWith claims j's fire at the way claim names and reports whether s won it.
func claimWith(ctx context.Context, s *Scheduler, claim string, j *job, at time.Time) (bool, error) {
	nr := s.newRun(j, at)
	if claim == "insert" {
		_, outcome, err := s.store.StartRun(ctx, nr)
		return outcome == store.Stored, err
	}
	for {
		won, err := lockThenInsert(ctx, s.store, nr)
		var me *mysql.MySQLError
		// deadlock, lock wait timeout, max_statement_time exceeded (see lockThenInsert)
		if errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205 || me.Number == 1969) {
			continue
		}
		return won, err
	}
}

// lockThenInsert is the transactional claim: lock the fire's row (or the gap where it would
// be), insert it when it is absent, commit.
func lockThenInsert(ctx context.Context, st *store.Store, nr store.NewRun) (bool, error) {
	tx, err := st.DB().BeginTxx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT COUNT(*) FROM runs WHERE persona = ? AND responsibility = ? AND fire_at = ? FOR UPDATE`,
		nr.Persona, nr.Responsibility, nr.FireAt); err != nil {
		return false, err
	}
	if n > 0 {
		return false, tx.Commit()
	}
	now := time.Now().UTC().Truncate(time.Microsecond)
	// With 16 claimers, MariaDB 10.11 now and then leaves this INSERT waiting for its own gap
	// lock (the SELECT's) past innodb_lock_wait_timeout, for good; max_statement_time ends the
	// wait like a lock wait timeout, and the claim is tried again.
	if _, err := tx.ExecContext(ctx, `SET STATEMENT max_statement_time = 10 FOR INSERT INTO runs (run_key, kind, persona, responsibility, fire_at, status, reason,
		lease_holder, lease_expires_at, attempt, started_at) VALUES (?, 'scheduled', ?, ?, ?, 'running', '', ?, ?, 1, ?)`,
		nr.Key, nr.Persona, nr.Responsibility, nr.FireAt, nr.Holder, now.Add(nr.LeaseFor), now); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// questions returns the Questions counter of st's one MySQL session (0 on SQLite); reading it
// is itself one statement.
func questions(b *testing.B, st *store.Store) int64 {
	if st.Dialect() != store.DialectMySQL {
		return 0
	}
	var name string
	var v int64
	if err := st.DB().QueryRowContext(context.Background(), "SHOW SESSION STATUS LIKE 'Questions'").Scan(&name, &v); err != nil {
		b.Fatal(err)
	}
	return v
}
