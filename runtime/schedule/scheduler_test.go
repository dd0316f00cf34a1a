package schedule

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

func TestRunKey(t *testing.T) {
	at := time.Date(2026, 3, 29, 8, 0, 0, 0, mustZone(t, "Europe/Berlin"))
	if got, want := RunKey("research-assistant", "daily-digest", at), "fire:research-assistant/daily-digest@2026-03-29T06:00:00Z"; got != want {
		t.Errorf("RunKey = %q, want %q", got, want)
	}
	long := strings.Repeat("p", 180)
	k := RunKey(long, "daily", at)
	if len(k) > store.MaxNameChars || !strings.HasPrefix(k, "fire:") || !strings.HasSuffix(k, "@2026-03-29T06:00:00Z") {
		t.Errorf("RunKey of a long name = %q (%d characters)", k, len(k))
	}
	if a, b := RunKey("a/b", "c", at), RunKey("a", "b/c", at); a == b {
		t.Errorf("RunKey(a/b, c) = RunKey(a, b/c) = %q", a)
	}
	if a, b := RunKey("a", "b", at), RunKey("a", "b", at.Add(time.Second)); a == b {
		t.Errorf("two fires share key %q", a)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	c, err := Parse("0 0 * * *", name)
	if err != nil {
		t.Fatal(err)
	}
	return c.Location()
}

func TestNewRefuses(t *testing.T) {
	st := openStore(t, scratchDSN(t, store.DialectSQLite), SystemClock())
	r := newRecorder()
	ok := persona("p", "daily=0 8 * * *@Europe/Berlin")
	tests := []struct {
		name     string
		st       *store.Store
		personas []*runtime.Persona
		runner   Runner
		opts     []Option
		want     string
	}{
		{"no store", nil, []*runtime.Persona{ok}, r, nil, "schedule: New needs a store and a runner"},
		{"no runner", st, []*runtime.Persona{ok}, nil, nil, "schedule: New needs a store and a runner"},
		{"nil persona", st, []*runtime.Persona{nil}, r, nil, "schedule: persona 0 has no name"},
		{"twice", st, []*runtime.Persona{ok, ok}, r, nil, `schedule: persona "p" is registered twice`},
		{"two responsibilities named alike", st, []*runtime.Persona{persona("p", "d=0 8 * * *@", "d=0 9 * * *@")}, r, nil,
			`schedule: persona "p" has two responsibilities named "d"`},
		{"bad schedule", st, []*runtime.Persona{persona("p", "d=0 25 * * *@UTC")}, r, nil,
			`schedule: persona "p", responsibility "d": schedule "0 25 * * *" is not a valid 5-field cron expression (minute hour day-of-month month day-of-week): end of range (25) above maximum (23): 25`},
		{"bad zone", st, []*runtime.Persona{persona("p", "d=0 8 * * *@Mars/Olympus")}, r, nil,
			`schedule: persona "p", responsibility "d": schedule "0 8 * * *": `},
		{"catch-up", st, []*runtime.Persona{ok}, r, []Option{WithCatchUp(0)}, "schedule: catch-up window 0s: it must be positive"},
		{"lease", st, []*runtime.Persona{ok}, r, []Option{WithLease(time.Millisecond)}, "schedule: lease 1ms: it must be at least 1s"},
		{"missed", st, []*runtime.Persona{ok}, r, []Option{WithMaxMissed(-1)}, "schedule: max missed -1: it must not be negative"},
		{"attempts", st, []*runtime.Persona{ok}, r, []Option{WithMaxAttempts(0)}, "schedule: max attempts 0: it must be at least 1"},
		{"clock", st, []*runtime.Persona{ok}, r, []Option{WithClock(nil)}, "schedule: WithClock(nil)"},
	}
	for _, tt := range tests {
		var runner Runner
		if tt.runner != nil {
			runner = tt.runner
		}
		_, err := New(tt.st, tt.personas, runner, tt.opts...)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: New = %v, want %s", tt.name, err, tt.want)
		}
	}
	// A disabled responsibility is not parsed: it never fires.
	p := persona("p", "d=not a schedule@")
	p.Responsibilities[0].Enabled = false
	if _, err := New(st, []*runtime.Persona{p}, r); err != nil {
		t.Errorf("New with a disabled, unparsable responsibility = %v", err)
	}
}

// TestTickRunsTheDueFireOnce: a fire runs once, its run records the runner's usage, and ticks
// before the next fire claim nothing.
func TestTickRunsTheDueFireOnce(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		clock := newFakeClock(utc(t, "2026-03-29T06:00:02Z"))
		st := openStore(t, dsn, clock)
		r := newRecorder()
		p := persona("research-assistant", "daily-digest=0 8 * * *@Europe/Berlin")
		s := newScheduler(t, st, []*runtime.Persona{p}, r, clock)
		ctx := context.Background()
		for range 3 {
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Hour)
		}
		key := "fire:research-assistant/daily-digest@2026-03-29T06:00:00Z"
		if n := r.count(key); n != 1 {
			t.Errorf("ran %s %d times, want 1", key, n)
		}
		run, err := st.Run(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.RunSucceeded || run.StopReason != "end_turn" || run.Usage.InputTokens != 10 ||
			!run.StartedAt.Equal(utc(t, "2026-03-29T06:00:02Z")) || run.Lease.Holder != s.Holder() || run.Attempt != 1 {
			t.Errorf("run = %+v", run)
		}
		diffTrail(t, trailOf(t, st, p.Name, "daily-digest"), []string{"03-29T06:00Z succeeded"})
	})
}

// TestDisabledAndUnregisteredClaimNothing: a disabled responsibility, and a persona the
// scheduler does not know, are never claimed, and a dead run of an unknown persona is not
// touched.
func TestDisabledAndUnregisteredClaimNothing(t *testing.T) {
	clock := newFakeClock(utc(t, "2026-06-01T08:00:30Z"))
	st := openStore(t, scratchDSN(t, store.DialectSQLite), clock)
	ctx := context.Background()
	// A run of a persona no scheduler registers, whose replica died.
	gone, _, err := st.StartRun(ctx, store.NewRun{Key: "fire:gone/daily@2026-06-01T07:00:00Z", Kind: store.RunScheduled,
		Persona: "gone", Responsibility: "daily", FireAt: utc(t, "2026-06-01T07:00:00Z"), Holder: "dead", LeaseFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p := persona("p", "on=0 * * * *@UTC", "off=0 * * * *@UTC")
	p.Responsibilities[1].Enabled = false
	r := newRecorder()
	s := newScheduler(t, st, []*runtime.Persona{p}, r, clock)
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "on"), []string{"06-01T08:00Z succeeded"})
	diffTrail(t, trailOf(t, st, "p", "off"), nil)
	if run, _ := st.Run(ctx, gone.Key); run.Status != store.RunRunning {
		t.Errorf("the unregistered persona's run is %s, want it left running", run.Status)
	}
}

// TestFirstTickStartsWithTheLatestFire: with no trail, the latest fire runs when it is inside
// the catch-up window, and nothing older is recorded.
func TestFirstTickStartsWithTheLatestFire(t *testing.T) {
	dsn := scratchDSN(t, store.DialectSQLite)
	ctx := context.Background()
	for _, tt := range []struct {
		name, now string
		want      []string
	}{
		{"inside the window", "2026-06-01T08:40:00Z", []string{"06-01T08:00Z succeeded"}},
		{"outside the window", "2026-06-01T09:30:00Z", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock(utc(t, tt.now))
			st := openStore(t, dsn, clock)
			p := persona("p-"+strings.ReplaceAll(tt.name, " ", "-"), "daily=0 8 * * *@UTC")
			s := newScheduler(t, st, []*runtime.Persona{p}, newRecorder(), clock)
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			diffTrail(t, trailOf(t, st, p.Name, "daily"), tt.want)
			clock.Set(utc(t, "2026-06-02T08:00:05Z"))
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			diffTrail(t, trailOf(t, st, p.Name, "daily"), append(tt.want, "06-02T08:00Z succeeded"))
		})
	}
}

// TestMissedFiresAfterDowntime: after downtime the latest missed fire runs when it is inside
// the catch-up window and is recorded missed otherwise; the fires before it are recorded missed,
// at most WithMaxMissed of them, the most recent.
func TestMissedFiresAfterDowntime(t *testing.T) {
	dsn := scratchDSN(t, store.DialectSQLite)
	ctx := context.Background()
	for _, tt := range []struct {
		name, back string
		opts       []Option
		want       []string
	}{
		{"the latest runs", "2026-06-01T12:10:00Z", nil, []string{
			"06-01T08:00Z succeeded", "06-01T09:00Z skipped (missed)", "06-01T10:00Z skipped (missed)",
			"06-01T11:00Z skipped (missed)", "06-01T12:00Z succeeded"}},
		{"the latest is too late", "2026-06-01T12:50:00Z", []Option{WithCatchUp(30 * time.Minute)}, []string{
			"06-01T08:00Z succeeded", "06-01T09:00Z skipped (missed)", "06-01T10:00Z skipped (missed)",
			"06-01T11:00Z skipped (missed)", "06-01T12:00Z skipped (missed)"}},
		{"at most two recorded", "2026-06-01T12:10:00Z", []Option{WithMaxMissed(2)}, []string{
			"06-01T08:00Z succeeded", "06-01T10:00Z skipped (missed)", "06-01T11:00Z skipped (missed)",
			"06-01T12:00Z succeeded"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
			st := openStore(t, dsn, clock)
			p := persona("p-"+strings.ReplaceAll(tt.name, " ", "-"), "hourly=0 * * * *@UTC")
			r := newRecorder()
			if err := newScheduler(t, st, []*runtime.Persona{p}, r, clock, tt.opts...).Tick(ctx); err != nil {
				t.Fatal(err)
			}
			// Every replica was down; a new one comes up.
			clock.Set(utc(t, tt.back))
			if err := newScheduler(t, st, []*runtime.Persona{p}, r, clock, tt.opts...).Tick(ctx); err != nil {
				t.Fatal(err)
			}
			diffTrail(t, trailOf(t, st, p.Name, "hourly"), tt.want)
		})
	}
}

// TestStartFiresAndStopWaits: the loop claims a fire when the clock reaches it, and Stop waits
// for the run in progress, which finishes.
func TestStartFiresAndStopWaits(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		clock := newFakeClock(utc(t, "2026-06-01T07:59:59Z"))
		st := openStore(t, dsn, clock)
		r := newRecorder()
		p := persona("p", "daily=0 8 * * *@UTC")
		s := newScheduler(t, st, []*runtime.Persona{p}, r, clock)
		key := RunKey("p", "daily", utc(t, "2026-06-01T08:00:00Z"))
		started, release := r.holdFire(key)
		ctx := context.Background()
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err == nil || err.Error() != "schedule: the scheduler is already started" {
			t.Errorf("second Start = %v", err)
		}
		clock.Set(utc(t, "2026-06-01T08:00:00.5Z"))
		<-started
		stopped := make(chan error)
		go func() { stopped <- s.Stop(ctx) }()
		select {
		case err := <-stopped:
			t.Fatalf("Stop returned %v with a run in progress", err)
		case <-time.After(50 * time.Millisecond):
		}
		release()
		if err := <-stopped; err != nil {
			t.Fatalf("Stop = %v", err)
		}
		diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T08:00Z succeeded"})
		if err := s.Stop(ctx); err == nil || err.Error() != "schedule: the scheduler is not started" {
			t.Errorf("second Stop = %v", err)
		}
	})
}

// TestStopAtItsDeadlineGivesTheRunBack: a run that outlasts Stop's deadline is cancelled and
// given back — by the scheduler when the runner returns, or by Stop itself a second later when
// the runner ignores its context — never recorded abandoned: it stays running with its lease
// released, and a second scheduler on the store resumes the same run at once, as attempt 2.
func TestStopAtItsDeadlineGivesTheRunBack(t *testing.T) {
	dsn := scratchDSN(t, store.DialectSQLite)
	for _, ignoresCtx := range []bool{false, true} {
		name := map[bool]string{false: "the runner returns", true: "the runner ignores its context"}[ignoresCtx]
		t.Run(name, func(t *testing.T) {
			clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
			st := openStore(t, dsn, clock)
			p := persona(fmt.Sprintf("p-%v", ignoresCtx), "daily=0 8 * * *@UTC")
			started, hold := make(chan struct{}), make(chan struct{})
			defer close(hold)
			runner := RunnerFunc(func(ctx context.Context, f Fire) (FireResult, error) {
				close(started)
				if ignoresCtx {
					<-hold
					return FireResult{}, nil
				}
				<-ctx.Done()
				return FireResult{Finish: store.Finish{Class: store.FailureShutdown}}, ctx.Err()
			})
			s := newScheduler(t, st, []*runtime.Persona{p}, runner, clock, WithHolder("first"))
			if err := s.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			<-started
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			err := s.Stop(ctx)
			if got, want := fmt.Sprint(err), "schedule: stop: 1 run interrupted and given back unless ended: context deadline exceeded"; got != want {
				t.Errorf("Stop = %s, want %s", got, want)
			}
			diffTrail(t, trailOf(t, st, p.Name, "daily"), []string{"06-01T08:00Z running (scheduler stopped)"})

			r := newRecorder()
			second := newScheduler(t, openStore(t, dsn, clock), []*runtime.Persona{p}, r, clock, WithHolder("second"))
			if err := second.Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
			key := RunKey(p.Name, "daily", utc(t, "2026-06-01T08:00:00Z"))
			diffTrail(t, trailOf(t, st, p.Name, "daily"), []string{"06-01T08:00Z succeeded"})
			if got, want := fmt.Sprint(r.ran, r.holders), fmt.Sprintf("map[%s:1] map[%s:[second]]", key, key); got != want {
				t.Errorf("the second scheduler ran %s, want %s", got, want)
			}
			run, err := st.Run(context.Background(), key)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprintf("attempt %d, faults %d, holder %s", run.Attempt, run.Faults, run.Lease.Holder),
				"attempt 2, faults 0, holder second"; got != want {
				t.Errorf("the resumed run: %s, want %s", got, want)
			}
		})
	}
}

// TestTickCancelledGivesItsRunsBack: a host that cancels Tick (it is shutting down) leaves its
// run given back, not abandoned, and the same scheduler's next Tick (after a restart, say)
// resumes it as attempt 2.
func TestTickCancelledGivesItsRunsBack(t *testing.T) {
	clock := newFakeClock(utc(t, "2026-06-01T08:00:01Z"))
	st := openStore(t, scratchDSN(t, store.DialectSQLite), clock)
	r := newRecorder()
	key := RunKey("p", "daily", utc(t, "2026-06-01T08:00:00Z"))
	started, release := r.holdFire(key)
	defer release()
	s := newScheduler(t, st, []*runtime.Persona{persona("p", "daily=0 8 * * *@UTC")}, r, clock)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T08:00Z running (scheduler stopped)"})
	if err := s.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T08:00Z succeeded"})
	run, err := st.Run(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("ran %d times, attempt %d", r.count(key), run.Attempt), "ran 2 times, attempt 2"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}
