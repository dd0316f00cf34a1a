package store

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// skewed returns a local clock d ahead of the machine's (behind for a negative d).
func skewed(d time.Duration) func() time.Time { return func() time.Time { return time.Now().Add(d) } }

// clockSlack is how far behind the machine's clock the store's may read in these tests: the
// measurement's error and drift bound (well under a millisecond here) and the scheduling noise
// of a shared machine. The skews tested are 30 seconds and more.
const clockSlack = 2 * time.Second

// TestStoreClockFollowsTheDatabase: whatever the local clock says, the store's clock is the
// database's (here the machine's, which MariaDB and SQLite both read), never ahead of it, and the
// measured offset undoes the skew.
func TestStoreClockFollowsTheDatabase(t *testing.T) {
	for _, tt := range []struct {
		name string
		skew time.Duration
	}{
		{"local clock right", 0},
		{"local clock 30s ahead", 30 * time.Second},
		{"local clock 30s behind", -30 * time.Second},
		{"local clock a day ahead", 24 * time.Hour},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
				t.Run(string(d), func(t *testing.T) {
					s, err := Open(context.Background(), scratchDSN(t, d), WithLocalClock(skewed(tt.skew)))
					if err != nil {
						t.Fatal(err)
					}
					defer s.Close()
					for range 3 {
						before := time.Now()
						now := s.Now()
						after := time.Now()
						if now.After(after) || now.Before(before.Add(-clockSlack)) {
							t.Errorf("store clock %v, machine clock %v to %v: want at most %v behind, never ahead",
								now.Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), clockSlack)
						}
						if now.Location() != time.UTC {
							t.Errorf("Now() is in %v, want UTC", now.Location())
						}
					}
					m, ok := s.Clock()
					if !ok {
						t.Fatal("Clock() = false for a store without WithClock")
					}
					if off := m.Offset + tt.skew; off > clockSlack || off < -clockSlack {
						t.Errorf("measured offset %v for a local clock %v ahead, want about %v", m.Offset, tt.skew, -tt.skew)
					}
					if m.Error <= 0 || m.Error > MaxClockError {
						t.Errorf("measurement error %v, want in (0, %v]", m.Error, MaxClockError)
					}
				})
			}
		})
	}
}

// TestSkewedStoreJudgesLeasesOnTheDatabaseClock: a store whose local clock is 30 seconds ahead
// neither takes over nor abandons a live lease of 10 seconds, and one 30 seconds behind does
// not stamp a lease that others see expired at once.
func TestSkewedStoreJudgesLeasesOnTheDatabaseClock(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			dsn := migratedDSN(t, d)
			right := openMigrated(t, dsn)
			ahead := openMigrated(t, dsn, WithLocalClock(skewed(30*time.Second)))
			behind := openMigrated(t, dsn, WithLocalClock(skewed(-30*time.Second)))
			const lease = 10 * time.Second
			start := func(s *Store, key, holder string) Run {
				t.Helper()
				r, _, err := s.StartRun(ctx, NewRun{Key: key, Kind: RunScheduled, Persona: "p", Responsibility: key,
					FireAt: fireAt, Holder: holder, LeaseFor: lease})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			live := start(right, "held-by-right", "right")
			if _, err := ahead.TakeOverRun(ctx, live.Key, "ahead", lease); !errors.Is(err, ErrLeaseHeld) {
				t.Errorf("the replica 30s ahead took over a live lease: TakeOverRun = %v, want ErrLeaseHeld", err)
			}
			if _, err := ahead.AbandonRun(ctx, live.Key, "lease expired"); !errors.Is(err, ErrLeaseHeld) {
				t.Errorf("the replica 30s ahead abandoned a live lease: AbandonRun = %v, want ErrLeaseHeld", err)
			}
			late := start(behind, "held-by-behind", "behind")
			if _, err := right.TakeOverRun(ctx, late.Key, "right", lease); !errors.Is(err, ErrLeaseHeld) {
				t.Errorf("the lease of the replica 30s behind was taken over at once: TakeOverRun = %v, want ErrLeaseHeld", err)
			}
			early := start(ahead, "held-by-ahead", "ahead")
			for _, r := range []Run{live, late, early} {
				stored, err := right.Run(ctx, r.Key)
				if err != nil {
					t.Fatal(err)
				}
				if stored.Status != RunRunning || stored.Attempt != 1 {
					t.Errorf("%s: %s, attempt %d; want running, attempt 1", r.Key, stored.Status, stored.Attempt)
				}
				if until := time.Until(stored.Lease.Expires); until > lease || until < lease-clockSlack {
					t.Errorf("%s: lease expires in %v, want about %v", r.Key, until, lease)
				}
			}
		})
	}
}

// TestStoreClockRefusesAnUnmeasurableDatabase: when every round trip of the measurement takes
// longer than twice MaxClockError, Open refuses the database and says why.
func TestStoreClockRefusesAnUnmeasurableDatabase(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			// Every reading of this local clock is 3 seconds after the one before: each round
			// trip takes 3 seconds on it.
			var calls atomic.Int64
			base := time.Now()
			slow := func() time.Time { return base.Add(time.Duration(calls.Add(1)) * 3 * time.Second) }
			s, err := Open(context.Background(), scratchDSN(t, d), WithLocalClock(slow))
			if err == nil {
				s.Close()
				t.Fatal("Open accepted a database whose clock it could not read to within MaxClockError")
			}
			want := "store: the " + string(d) + " database's clock could not be read to within 1s: the shortest of 3 round trips took 3s"
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Open error = %q, want it to start %q", err, want)
			}
		})
	}
}

// TestStoreClockIsMeasuredAgain: the store measures the database's clock again every
// clockSync, so a local clock that jumps after Open is corrected once more.
func TestStoreClockIsMeasuredAgain(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			var jump atomic.Int64
			local := func() time.Time { return time.Now().Add(time.Duration(jump.Load())) }
			s, err := Open(context.Background(), scratchDSN(t, d), WithLocalClock(local), withClockSync(20*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			jump.Store(int64(time.Hour)) // the local clock jumps an hour ahead
			deadline := time.Now().Add(30 * time.Second)
			for s.Now().After(time.Now()) {
				if time.Now().After(deadline) {
					t.Fatalf("the store's clock still reads %v ahead 30s after the local clock jumped", s.Now().Sub(time.Now()))
				}
				time.Sleep(10 * time.Millisecond)
			}
			if m, _ := s.Clock(); m.Offset > -time.Hour+clockSlack || m.Offset < -time.Hour-clockSlack {
				t.Errorf("offset after the jump %v, want about -1h", m.Offset)
			}
		})
	}
}

// TestWithClockIsAuthoritative: a store given a clock reads it as it is and measures nothing.
func TestWithClockIsAuthoritative(t *testing.T) {
	fake := time.Date(2031, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 3600))
	s := newTestStore(t, DialectSQLite, WithClock(func() time.Time { return fake }), WithLocalClock(skewed(time.Hour)))
	if got := s.Now(); !got.Equal(fake) || got.Location() != time.UTC {
		t.Errorf("Now() = %v, want %v in UTC", got, fake.UTC())
	}
	if _, ok := s.Clock(); ok {
		t.Error("Clock() = true for a store with WithClock")
	}
}

// TestOpenDBMeasuresTheClock: a store on a pool the host opened follows the database's clock
// as well.
func TestOpenDBMeasuresTheClock(t *testing.T) {
	s := newTestStore(t, DialectSQLite)
	o, err := OpenDB(s.DB(), WithLocalClock(skewed(time.Hour)), WithOptimizeInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer o.stopClock() // closing o would close s's pool
	if m, ok := o.Clock(); !ok || m.Offset > -time.Hour+clockSlack || m.Offset < -time.Hour-clockSlack {
		t.Errorf("OpenDB's clock measurement = %+v, %v; want an offset of about -1h", m, ok)
	}
}

// withClockSync sets how often the store measures the database's clock again.
func withClockSync(d time.Duration) Option { return func(s *Store) { s.clockSync = d } }
