package schedule

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// These tests run on the real clock: a replica's local clock is 30 seconds ahead
// (store.WithLocalClock), its scheduler on its default clock, which follows the store's — the
// database's. (The database's clock is this machine's.)

// skewedStore opens a store on dsn whose local clock is skew ahead of this machine's.
func skewedStore(t *testing.T, dsn string, skew time.Duration) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn, store.WithLocalClock(func() time.Time { return time.Now().Add(skew) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestSkewedReplicaRunsNoFireEarly: a replica 30 seconds ahead claims a fire only once it is due
// on the database's clock, and never records a fire that is not due yet (run, missed or
// skipped).
func TestSkewedReplicaRunsNoFireEarly(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := skewedStore(t, dsn, 30*time.Second)
		var mu sync.Mutex
		var early []string
		calls := 0
		runner := RunnerFunc(func(ctx context.Context, f Fire) (FireResult, error) {
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			calls++
			if now.Before(f.At) {
				early = append(early, f.Run.Key+" ran "+f.At.Sub(now).String()+" early")
			}
			return FireResult{}, nil
		})
		s, err := New(st, []*runtime.Persona{persona("p", "second=@every 1s@UTC", "minute=* * * * *@UTC")}, runner,
			WithLogger(quietLogger))
		if err != nil {
			t.Fatal(err)
		}
		if d := s.clock.Now().Sub(time.Now()); d > 0 || d < -time.Second {
			t.Errorf("the scheduler's default clock reads %v from this machine's, want it to follow the store's", d)
		}
		for range 3 {
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(700 * time.Millisecond)
		}
		end := time.Now()
		runs, err := st.Runs(ctx, store.RunQuery{Persona: "p"})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.FireAt.After(end) {
				t.Errorf("%s is recorded %s (%s) %v before it is due", r.Key, r.Status, r.Reason, r.FireAt.Sub(end))
			}
		}
		mu.Lock()
		defer mu.Unlock()
		for _, e := range early {
			t.Error(e)
		}
		if calls < 3 {
			t.Errorf("%d fires ran in three ticks, want at least 3", calls)
		}
	})
}

// TestSkewedReplicaTakesNoLiveLeaseOver: while a replica on the right clock runs a fire under a
// 10-second lease it renews, a replica 30 seconds ahead neither takes the run over nor abandons
// it.
func TestSkewedReplicaTakesNoLiveLeaseOver(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		p := persona("p", "hourly=0 * * * *@UTC")
		right, ahead := newRecorder(), newRecorder()
		rightStore := skewedStore(t, dsn, 0)
		aheadStore := skewedStore(t, dsn, 30*time.Second)
		sRight, err := New(rightStore, []*runtime.Persona{p}, right, WithHolder("right"), WithLease(10*time.Second), WithLogger(quietLogger))
		if err != nil {
			t.Fatal(err)
		}
		sAhead, err := New(aheadStore, []*runtime.Persona{p}, ahead, WithHolder("ahead"), WithLease(10*time.Second), WithLogger(quietLogger))
		if err != nil {
			t.Fatal(err)
		}
		latest, _ := MustParse("0 * * * *", "UTC").Prev(time.Now())
		key := RunKey("p", "hourly", latest)
		started, release := right.holdFire(key)
		ticked := make(chan error, 1)
		go func() { ticked <- sRight.Tick(ctx) }()
		<-started
		for range 2 {
			if err := sAhead.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
		}
		release()
		if err := <-ticked; err != nil {
			t.Fatal(err)
		}
		run, err := rightStore.Run(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.RunSucceeded || run.Attempt != 1 || run.Lease.Holder != "right" {
			t.Errorf("the run is %s, attempt %d, held by %q; want succeeded, attempt 1, by right", run.Status, run.Attempt, run.Lease.Holder)
		}
		if n := ahead.count(key); n != 0 {
			t.Errorf("the replica 30s ahead ran the live run %d times", n)
		}
	})
}
