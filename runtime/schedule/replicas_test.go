package schedule

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// replicas are four schedulers of the same personas, each over a store of its own (its own
// connection pool) on one database, sharing one fake clock (the stores' clocks too).
type replicas struct {
	clock  *fakeClock
	stores []*store.Store
	scheds []*Scheduler
	runner *recorder
}

func newReplicas(t *testing.T, dsn string, n int, clock *fakeClock, r *recorder, personas []*runtime.Persona, opts ...Option) *replicas {
	t.Helper()
	rs := &replicas{clock: clock, runner: r}
	for i := range n {
		st := openStore(t, dsn, clock)
		rs.stores = append(rs.stores, st)
		rs.scheds = append(rs.scheds, newScheduler(t, st, personas, r, clock,
			append([]Option{WithHolder(fmt.Sprintf("replica-%d", i))}, opts...)...))
	}
	return rs
}

// tickAll moves the clock to at and ticks every scheduler but the skipped ones at once; it
// returns when all those Ticks have.
func (rs *replicas) tickAll(t *testing.T, at time.Time, skip ...int) {
	t.Helper()
	rs.clock.Set(at)
	var wg sync.WaitGroup
	errs := make([]error, len(rs.scheds))
	for i, s := range rs.scheds {
		if slices.Contains(skip, i) {
			continue
		}
		wg.Go(func() { errs[i] = s.Tick(context.Background()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("tick at %v: %v", at, err)
	}
}

// holderIndex returns which replica holds run key.
func (rs *replicas) holderIndex(t *testing.T, key string) int {
	t.Helper()
	run, err := rs.stores[0].Run(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range rs.scheds {
		if s.Holder() == run.Lease.Holder {
			return i
		}
	}
	t.Fatalf("run %s is held by %q, no replica", key, run.Lease.Holder)
	return -1
}

// simulatedDays are the three days the replicas run through: the spring-forward and the
// fall-back day of Europe/Berlin in 2026, and an ordinary day.
var simulatedDays = []string{"2026-03-29", "2026-10-25", "2026-06-15"}

// dayPersona is the persona of one simulated day: a daily time inside both DST changes, a
// half-hourly schedule in the same zone, an hourly one in a zone that does not change that
// day, and an interval.
func dayPersona(day string) *runtime.Persona {
	return persona("assistant-"+day,
		"nightly=30 2 * * *@Europe/Berlin",
		"half-hourly=*/30 * * * *@Europe/Berlin",
		"hourly=0 * * * *@America/New_York",
		"every-50m=@every 50m@UTC")
}

// dayWindow is a simulated day: Berlin's 23:00 the evening before to 01:00 the morning after.
func dayWindow(t *testing.T, day string) (from, through time.Time) {
	berlin := mustZone(t, "Europe/Berlin")
	d, err := time.ParseInLocation(time.DateOnly, day, berlin)
	if err != nil {
		t.Fatal(err)
	}
	return d.Add(-time.Hour), time.Date(d.Year(), d.Month(), d.Day()+1, 1, 0, 0, 0, berlin)
}

// TestReplicasRunEveryFireOnce: four replicas tick together a second after every fire of three
// simulated days, including both DST changes; every fire runs exactly once, on one replica, and
// the trail holds exactly those fires, succeeded.
func TestReplicasRunEveryFireOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		for _, day := range simulatedDays {
			from, through := dayWindow(t, day)
			p := dayPersona(day)
			clock := newFakeClock(from)
			rs := newReplicas(t, dsn, 4, clock, newRecorder(), []*runtime.Persona{p})
			want := map[string][]time.Time{}
			steps := []time.Time{from}
			for _, r := range p.Responsibilities {
				c := MustParse(r.Schedule, r.Timezone)
				if prev, _ := c.Prev(from); from.Sub(prev) <= DefaultCatchUp {
					want[r.Name] = append(want[r.Name], prev)
				}
				for f := range c.Fires(from, through) {
					want[r.Name] = append(want[r.Name], f)
					steps = append(steps, f.Add(time.Second))
				}
			}
			slices.SortFunc(steps, func(a, b time.Time) int { return a.Compare(b) })
			for _, at := range slices.Compact(steps) {
				rs.tickAll(t, at)
			}
			total := 0
			for _, r := range p.Responsibilities {
				var wantTrail []string
				for _, f := range want[r.Name] {
					key := RunKey(p.Name, r.Name, f)
					if n := rs.runner.count(key); n != 1 {
						t.Errorf("%s ran %d times, want once", key, n)
					}
					wantTrail = append(wantTrail, f.UTC().Format("01-02T15:04Z")+" succeeded")
				}
				total += len(want[r.Name])
				diffTrail(t, trailOf(t, rs.stores[0], p.Name, r.Name), wantTrail)
			}
			rs.runner.mu.Lock()
			if ran := len(rs.runner.ran); ran != total {
				t.Errorf("%s: %d fires ran, want %d", day, ran, total)
			}
			rs.runner.mu.Unlock()
			// The DST days' nightly fire: once, at the end of the gap / at the first 02:30.
			nightly := trailOf(t, rs.stores[0], p.Name, "nightly")
			switch day {
			case "2026-03-29":
				diffTrail(t, nightly, []string{"03-29T01:00Z succeeded"})
			case "2026-10-25":
				diffTrail(t, nightly, []string{"10-25T00:30Z succeeded"})
			}
		}
	})
}

// TestReplicaKilledMidRunIsTakenOver: the replica running a fire dies (its connections go, it
// renews nothing); once the lease expired another replica takes the run over and finishes it,
// as attempt 2. A dead run whose fire is no longer the latest is abandoned instead, and the
// latest fire runs.
func TestReplicaKilledMidRunIsTakenOver(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		lease := 10 * time.Minute
		for _, tt := range []struct {
			name, back string
			want       []string
			attempts   int
		}{
			{"taken over", "2026-06-01T08:12:00Z", []string{"06-01T08:00Z succeeded"}, 2},
			{"superseded", "2026-06-01T09:00:01Z", []string{"06-01T08:00Z abandoned (lease expired)", "06-01T09:00Z succeeded"}, 1},
		} {
			t.Run(tt.name, func(t *testing.T) {
				p := persona("p-"+strings.ReplaceAll(tt.name, " ", "-"), "hourly=0 * * * *@UTC")
				clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
				rs := newReplicas(t, dsn, 4, clock, newRecorder(), []*runtime.Persona{p}, WithLease(lease))
				key := RunKey(p.Name, "hourly", utc(t, "2026-06-01T08:00:00Z"))
				started, release := rs.runner.holdFire(key)
				var wg sync.WaitGroup
				defer func() { release(); wg.Wait() }()
				for _, s := range rs.scheds {
					wg.Go(func() { s.Tick(ctx) })
				}
				<-started
				dead := rs.holderIndex(t, key)
				rs.stores[dead].Close() // the replica dies: no renewal, no finish
				// Ticks before the lease expires leave the run alone.
				for at := utc(t, "2026-06-01T08:02:00Z"); at.Before(utc(t, tt.back)) && at.Before(utc(t, "2026-06-01T08:10:01Z")); at = at.Add(2 * time.Minute) {
					rs.tickAll(t, at, dead)
				}
				if run, _ := rs.stores[(dead+1)%4].Run(ctx, key); run.Status != store.RunRunning || run.Attempt != 1 {
					t.Fatalf("before the lease expired the run is %s, attempt %d", run.Status, run.Attempt)
				}
				rs.tickAll(t, utc(t, tt.back), dead)
				live := rs.stores[(dead+1)%4]
				diffTrail(t, trailOf(t, live, p.Name, "hourly"), tt.want)
				run, err := live.Run(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if run.Attempt != tt.attempts || (tt.attempts == 2 && run.Lease.Holder == rs.scheds[dead].Holder()) {
					t.Errorf("run = attempt %d held by %q (dead: %q)", run.Attempt, run.Lease.Holder, rs.scheds[dead].Holder())
				}
				if want := 1 + tt.attempts - 1; rs.runner.count(key) != want {
					t.Errorf("the fire ran %d times, want %d (the dead replica, then the takeover)", rs.runner.count(key), want)
				}
			})
		}
	})
}

// TestDowntimeRunsTheLastMissedFireOnce: every replica is down for an hour; four fresh ones come
// up together, run the latest missed fire once and record the ones before it missed.
func TestDowntimeRunsTheLastMissedFireOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		p := persona("p", "ten=*/10 * * * *@UTC")
		clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
		r := newRecorder()
		before := newReplicas(t, dsn, 4, clock, r, []*runtime.Persona{p})
		for _, at := range []string{"2026-06-01T08:00:01Z", "2026-06-01T08:10:01Z", "2026-06-01T08:20:01Z"} {
			before.tickAll(t, utc(t, at))
		}
		after := newReplicas(t, dsn, 4, clock, r, []*runtime.Persona{p})
		after.tickAll(t, utc(t, "2026-06-01T09:05:00Z"))
		after.tickAll(t, utc(t, "2026-06-01T09:06:00Z"))
		diffTrail(t, trailOf(t, after.stores[0], "p", "ten"), []string{
			"06-01T08:00Z succeeded", "06-01T08:10Z succeeded", "06-01T08:20Z succeeded",
			"06-01T08:30Z skipped (missed)", "06-01T08:40Z skipped (missed)", "06-01T08:50Z skipped (missed)",
			"06-01T09:00Z succeeded",
		})
		if n := r.count(RunKey("p", "ten", utc(t, "2026-06-01T09:00:00Z"))); n != 1 {
			t.Errorf("the latest missed fire ran %d times, want once", n)
		}
	})
}

// TestRunOutlastingTheIntervalSkipsOverlappingFires: a run that lasts six and a half intervals
// keeps its lease by renewing it, the fires during it are recorded skipped (overlap) by
// whichever replica comes first, and the fire after it runs.
func TestRunOutlastingTheIntervalSkipsOverlappingFires(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		p := persona("p", "ten=*/10 * * * *@UTC")
		clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
		var logs bytes.Buffer
		var logMu sync.Mutex
		logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
		defer func() {
			if t.Failed() {
				t.Logf("logs:\n%s", logs.String())
			}
		}()
		// Without renewal the lease would expire at 09:00:01, before the run ends at 09:05. The
		// clock moves a sixth of a lease at a time, the renewals come every third.
		rs := newReplicas(t, dsn, 4, clock, newRecorder(), []*runtime.Persona{p}, WithLease(time.Hour), WithLogger(logger))
		key := RunKey("p", "ten", utc(t, "2026-06-01T08:00:00Z"))
		started, release := rs.runner.holdFire(key)
		var wg sync.WaitGroup
		for _, s := range rs.scheds {
			wg.Go(func() { s.Tick(ctx) })
		}
		<-started
		want := []string{"06-01T08:00Z succeeded"}
		for at := utc(t, "2026-06-01T08:10:01Z"); at.Before(utc(t, "2026-06-01T09:05:00Z")); at = at.Add(10 * time.Minute) {
			rs.tickAll(t, at)
			want = append(want, at.Format("01-02T15:04Z")+" skipped (overlap)")
		}
		clock.Set(utc(t, "2026-06-01T09:05:00Z"))
		release()
		wg.Wait()
		rs.tickAll(t, utc(t, "2026-06-01T09:10:01Z"))
		diffTrail(t, trailOf(t, rs.stores[0], "p", "ten"), append(want, "06-01T09:10Z succeeded"))
		run, err := rs.stores[0].Run(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !run.FinishedAt.Equal(utc(t, "2026-06-01T09:05:00Z")) || run.Attempt != 1 {
			t.Errorf("the long run: finished %v, attempt %d", run.FinishedAt, run.Attempt)
		}
	})
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
