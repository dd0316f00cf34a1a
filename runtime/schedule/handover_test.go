package schedule

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// fireLog is a Runner that notes every Fire it is called with, as a line, and returns what
// result returns (success when nil).
type fireLog struct {
	mu     sync.Mutex
	lines  []string
	result func(ctx context.Context, f Fire) (FireResult, error)
}

func (l *fireLog) RunFire(ctx context.Context, f Fire) (FireResult, error) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf("%s at %s: run %d, attempt %d, holder %s", f.Run.Key,
		f.At.Format("15:04Z"), f.Run.ID, f.Run.Attempt, f.Run.Lease.Holder))
	result := l.result
	l.mu.Unlock()
	if result != nil {
		return result(ctx, f)
	}
	return FireResult{Text: "done"}, nil
}

func (l *fireLog) calls() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lines(l.lines)
}

// TestStopHandsTheFireToAnotherReplica: a fire still running at Stop's deadline is given back,
// and the next pass of another replica's scheduler resumes that same run — its key, its ID,
// attempt 2 under the new holder — long before its lease would have expired; the fire has one
// run, which succeeds, and no abandoned record.
func TestStopHandsTheFireToAnotherReplica(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
		p := persona("p", "daily=0 8 * * *@UTC")
		started := make(chan struct{})
		cutOff := &fireLog{result: func(ctx context.Context, f Fire) (FireResult, error) {
			close(started)
			<-ctx.Done()
			return FireResult{Finish: store.Finish{Class: store.FailureShutdown}}, ctx.Err()
		}}
		var reports reports
		first := newScheduler(t, openStore(t, dsn, clock), []*runtime.Persona{p}, cutOff, clock, WithHolder("first"),
			WithResults(reports.add))
		if err := first.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		if err := first.Stop(ctx); err == nil {
			t.Fatal("Stop = nil with a run cut off")
		}
		st := openStore(t, dsn, clock)
		diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T08:00Z running (scheduler stopped)"})
		key := RunKey("p", "daily", utc(t, "2026-06-01T08:00:00Z"))
		run, err := st.Run(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		id := run.ID

		resumed := &fireLog{}
		second := newScheduler(t, st, []*runtime.Persona{p}, resumed, clock, WithHolder("second"), WithResults(reports.add))
		clock.Set(utc(t, "2026-06-01T08:00:02Z")) // a second later; the lease (a minute) runs until 08:01:01
		if err := second.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("%s at 08:00Z: run %d, attempt 1, holder first", key, id)
		if got := cutOff.calls(); got != want {
			t.Errorf("the first scheduler's runner:\n%s\nwant:\n%s", got, want)
		}
		want = fmt.Sprintf("%s at 08:00Z: run %d, attempt 2, holder second", key, id)
		if got := resumed.calls(); got != want {
			t.Errorf("the second scheduler's runner:\n%s\nwant:\n%s", got, want)
		}
		diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T08:00Z succeeded"})
		if got, want := lines(reports.lines), "not recorded, given back, error context canceled\nrecorded succeeded, text done"; got != want {
			t.Errorf("reports:\n%s\nwant:\n%s", got, want)
		}
	})
}

// TestGivenBackFireOlderThanCatchUpIsAbandoned: a fire given back by a stopping scheduler that
// no scheduler resumed within the catch-up window (the whole fleet was down) is abandoned
// (scheduler stopped) by the next pass, and the latest fire runs instead: it was not running
// while it waited, so it overlaps nothing.
func TestGivenBackFireOlderThanCatchUpIsAbandoned(t *testing.T) {
	clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
	dsn := scratchDSN(t, store.DialectSQLite)
	st := openStore(t, dsn, clock)
	p := persona("p", "daily=0 8 * * *@UTC")
	r := newRecorder()
	key := RunKey("p", "daily", utc(t, "2026-06-01T08:00:00Z"))
	giveBack(t, st, p, r, clock, key)
	diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T08:00Z running (scheduler stopped)"})

	clock.Set(utc(t, "2026-06-02T08:00:05Z"))
	if err := newScheduler(t, openStore(t, dsn, clock), []*runtime.Persona{p}, r, clock).Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T08:00Z abandoned (scheduler stopped)", "06-02T08:00Z succeeded"})
	next := RunKey("p", "daily", utc(t, "2026-06-02T08:00:00Z"))
	if got, want := fmt.Sprint(r.ran), fmt.Sprintf("map[%s:1 %s:1]", key, next); got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
}

// TestGivenBackFireResumesAfterTheNextFireIsDue: a given-back fire is resumed inside its
// catch-up window even when the responsibility's next fire came due meanwhile; that fire
// waits for it and, as the resumed run was still running at its instant, is skipped (overlap).
func TestGivenBackFireResumesAfterTheNextFireIsDue(t *testing.T) {
	clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
	dsn := scratchDSN(t, store.DialectSQLite)
	st := openStore(t, dsn, clock)
	p := persona("p", "hourly=0 * * * *@UTC")
	r := newRecorder()
	key := RunKey("p", "hourly", utc(t, "2026-06-01T08:00:00Z"))
	giveBack(t, st, p, r, clock, key)

	clock.Set(utc(t, "2026-06-01T09:00:00.5Z"))
	second := newScheduler(t, openStore(t, dsn, clock), []*runtime.Persona{p}, r, clock, WithHolder("second"))
	if err := second.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "hourly"), []string{"06-01T08:00Z succeeded"})
	if err := second.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "hourly"), []string{"06-01T08:00Z succeeded", "06-01T09:00Z skipped (overlap)"})
	if got, want := fmt.Sprint(r.ran, r.holders), fmt.Sprintf("map[%s:2] map[%s:[%s second]]", key, key, r.holders[key][0]); got != want {
		t.Errorf("ran %s, want %s", got, want)
	}
}

// giveBack runs one Tick of a scheduler on st whose context is cancelled as soon as the fire of
// key starts, so that the scheduler gives the fire back; the runner is held until the test ends.
func giveBack(t *testing.T, st *store.Store, p *runtime.Persona, r *recorder, clock *fakeClock, key string) {
	t.Helper()
	started, release := r.holdFire(key)
	t.Cleanup(release)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if err := newScheduler(t, st, []*runtime.Persona{p}, r, clock).Tick(ctx); err != nil {
		t.Fatal(err)
	}
}
