package schedule

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// TestRunAgain: a failed, abandoned or missed fire runs again on request, as one more attempt of
// its run, with who asked and why recorded as a run event; a fire that has no run yet gets one
// (missed, then reopened). A request that cannot be met changes nothing and runs nothing.
func TestRunAgain(t *testing.T) {
	const daily = "daily=0 8 * * *@Europe/Berlin" // 06:00Z in summer
	day := func(n int) string { return fmt.Sprintf("2026-06-%02dT06:00:00Z", n) }
	dsns := map[store.Dialect]string{}
	for _, d := range dialects {
		dsns[d] = scratchDSN(t, d)
	}
	ok := step{res: FireResult{Text: "the digest", Finish: store.Finish{StopReason: "end_turn"}}}
	for i, tt := range []struct {
		name string
		opts []Option
		// steps are the runner's answers, in order; ticks the times of the Ticks before the
		// request (each a second after a fire), on day 1 to 4.
		steps   []step
		ticks   []int
		at      string
		by      string
		wantErr string
		errIs   error
		trail   []string
		calls   []string
		events  []string
		report  string
	}{
		{name: "a failed fire", steps: []step{{res: FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: "model: 401"}}}, ok},
			ticks: []int{1}, at: day(1), by: "ops@example.com",
			trail:  []string{"06-01T06:00Z succeeded"},
			calls:  []string{"06-01 06:00:01 attempt 1", "06-01 09:00:00 attempt 2"},
			events: []string{"reopened by ops@example.com (the key is fixed): was failed (model: 401)"},
			report: "recorded succeeded, text the digest"},
		{name: "an abandoned fire", steps: []step{{res: FireResult{Finish: store.Finish{Status: store.RunAbandoned, Reason: "scheduler stopped"}}}, ok},
			ticks: []int{1}, at: day(1), by: "ops@example.com",
			trail:  []string{"06-01T06:00Z succeeded"},
			calls:  []string{"06-01 06:00:01 attempt 1", "06-01 09:00:00 attempt 2"},
			events: []string{"reopened by ops@example.com (the key is fixed): was abandoned (scheduler stopped)"},
			report: "recorded succeeded, text the digest"},
		{name: "a fire recorded missed", steps: []step{ok}, ticks: []int{1, 4}, at: day(2), by: "ops@example.com",
			trail:  []string{"06-01T06:00Z succeeded", "06-02T06:00Z succeeded", "06-03T06:00Z skipped (missed)", "06-04T06:00Z succeeded"},
			calls:  []string{"06-01 06:00:01 attempt 1", "06-04 06:00:01 attempt 1", "06-04 09:00:00 attempt 1"},
			events: []string{"reopened by ops@example.com (the key is fixed): was skipped (missed)"},
			report: "recorded succeeded, text the digest"},
		{name: "a missed fire without a run", opts: []Option{WithMaxMissed(0)}, steps: []step{ok}, ticks: []int{1, 4}, at: day(2),
			by:     "ops@example.com",
			trail:  []string{"06-01T06:00Z succeeded", "06-02T06:00Z succeeded", "06-04T06:00Z succeeded"},
			calls:  []string{"06-01 06:00:01 attempt 1", "06-04 06:00:01 attempt 1", "06-04 09:00:00 attempt 1"},
			events: []string{"reopened by ops@example.com (the key is fixed): was skipped (missed)"},
			report: "recorded succeeded, text the digest"},
		{name: "a transient failure is retried from the request", opts: []Option{WithCatchUp(time.Minute)},
			steps: []step{{res: FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: "boom"}}}, {err: errors.New("model: 529")}, ok},
			ticks: []int{1}, at: day(1), by: "ops@example.com",
			trail:  []string{"06-01T06:00Z succeeded"},
			calls:  []string{"06-01 06:00:01 attempt 1", "06-01 09:00:00 attempt 2", "06-01 09:00:02 attempt 2"},
			events: []string{"reopened by ops@example.com (the key is fixed): was failed (boom)"},
			report: "recorded succeeded, text the digest"},
		{name: "a succeeded fire", steps: []step{ok}, ticks: []int{1}, at: day(1), by: "ops@example.com",
			errIs: store.ErrRunFinished, wantErr: "succeeded, and a succeeded run is not reopened",
			trail: []string{"06-01T06:00Z succeeded"}, calls: []string{"06-01 06:00:01 attempt 1"}},
		{name: "not a fire", steps: []step{ok}, ticks: []int{1}, at: "2026-06-01T06:30:00Z", by: "ops@example.com",
			wantErr: "schedule: run {p}/daily@2026-06-01T06:30:00Z again: 2026-06-01T06:30:00Z is not a fire of 0 8 * * * (Europe/Berlin) " +
				"(the fires around it are 2026-06-01T06:00:00Z and 2026-06-02T06:00:00Z)",
			trail: []string{"06-01T06:00Z succeeded"}, calls: []string{"06-01 06:00:01 attempt 1"}},
		{name: "a fire not due yet", steps: []step{ok}, ticks: []int{1}, at: day(2), by: "ops@example.com",
			wantErr: "schedule: run {p}/daily@2026-06-02T06:00:00Z again: the fire is not due until 2026-06-02T06:00:00Z",
			trail:   []string{"06-01T06:00Z succeeded"}, calls: []string{"06-01 06:00:01 attempt 1"}},
		{name: "no one asking", steps: []step{{res: FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: "boom"}}}},
			ticks: []int{1}, at: day(1), by: "",
			wantErr: "schedule: run {p}/daily@2026-06-01T06:00:00Z again: say who asks (by is empty)",
			trail:   []string{"06-01T06:00Z failed (boom)"}, calls: []string{"06-01 06:00:01 attempt 1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range dialects {
				t.Run(string(d), func(t *testing.T) {
					pname := fmt.Sprintf("again%d", i)
					clock := newFakeClock(utc(t, day(1)))
					st := openStore(t, dsns[d], clock)
					runner := &scripted{clock: clock, steps: tt.steps, layout: "01-02 15:04:05"}
					var got reports
					opts := append([]Option{WithLease(24 * time.Hour), withoutJitter(), WithResults(got.add)}, tt.opts...)
					s := newScheduler(t, st, []*runtime.Persona{persona(pname, daily)}, runner, clock, opts...)
					for _, n := range tt.ticks {
						clock.Set(utc(t, day(n)).Add(time.Second))
						if err := s.Tick(context.Background()); err != nil {
							t.Fatal(err)
						}
					}
					clock.Set(utc(t, day(tt.ticks[len(tt.ticks)-1])).Add(3 * time.Hour))
					at := utc(t, tt.at)
					var rep Report
					var err error
					clock.drive(t, clock.Now().Add(time.Hour), func() {
						rep, err = s.RunAgain(context.Background(), pname, "daily", at, tt.by, "the key is fixed")
					})
					wantErr := strings.ReplaceAll(tt.wantErr, "{p}", pname)
					switch {
					case wantErr == "" && err != nil:
						t.Fatalf("RunAgain = %v", err)
					case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
						t.Fatalf("RunAgain = %v, want an error saying %q", err, wantErr)
					case tt.errIs != nil && !errors.Is(err, tt.errIs):
						t.Fatalf("RunAgain = %v, want %v", err, tt.errIs)
					}
					diffTrail(t, trailOf(t, st, pname, "daily"), tt.trail)
					if lines(runner.calls) != lines(tt.calls) {
						t.Errorf("runner calls:\n%s\nwant:\n%s", lines(runner.calls), lines(tt.calls))
					}
					if err != nil {
						return
					}
					var line reports
					line.add(rep)
					if line.lines[0] != tt.report {
						t.Errorf("RunAgain's report: %s, want %s", line.lines[0], tt.report)
					}
					if got := events(t, st, RunKey(pname, "daily", at)); lines(got) != lines(tt.events) {
						t.Errorf("events:\n%s\nwant:\n%s", lines(got), lines(tt.events))
					}
				})
			}
		})
	}
}

// TestRunAgainRefusesARunningResponsibility: while a fire of the responsibility runs, neither it
// nor another of its fires runs again.
func TestRunAgainRefusesARunningResponsibility(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		clock := newFakeClock(utc(t, "2026-06-01T06:00:01Z"))
		st := openStore(t, dsn, clock)
		r := newRecorder()
		r.result = func(Fire) (FireResult, error) {
			return FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: "boom"}}, nil
		}
		p := persona("p", "daily=0 8 * * *@Europe/Berlin")
		s := newScheduler(t, st, []*runtime.Persona{p}, r, clock)
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Set(utc(t, "2026-06-02T06:00:01Z"))
		running := RunKey("p", "daily", utc(t, "2026-06-02T06:00:00Z"))
		started, release := r.holdFire(running)
		ticked := make(chan error)
		go func() { ticked <- s.Tick(ctx) }()
		<-started
		_, err := s.RunAgain(ctx, "p", "daily", utc(t, "2026-06-02T06:00:00Z"), "ops", "")
		if !errors.Is(err, store.ErrRunRunning) || !strings.Contains(err.Error(), "it runs on this scheduler now") {
			t.Errorf("RunAgain of the running fire = %v, want ErrRunRunning", err)
		}
		var busy *store.BusyError
		if _, err := s.RunAgain(ctx, "p", "daily", utc(t, "2026-06-01T06:00:00Z"), "ops", ""); !errors.As(err, &busy) || busy.Running.Key != running {
			t.Errorf("RunAgain of another fire while one runs = %v, want a *store.BusyError naming %s", err, running)
		}
		release()
		if err := <-ticked; err != nil {
			t.Fatal(err)
		}
		diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T06:00Z failed (boom)", "06-02T06:00Z failed (boom)"})
		if n := r.count(RunKey("p", "daily", utc(t, "2026-06-01T06:00:00Z"))); n != 1 {
			t.Errorf("the refused fire ran %d times, want once", n)
		}
		if _, err := s.RunAgain(ctx, "p", "nightly", utc(t, "2026-06-01T06:00:00Z"), "ops", ""); err == nil ||
			err.Error() != "schedule: run p/nightly@2026-06-01T06:00:00Z again: no enabled responsibility of that name is registered with this scheduler" {
			t.Errorf("RunAgain of an unknown responsibility = %v", err)
		}
	})
}

// events returns run key's events as "KIND by BY (REASON): was STATUS (REASON)" lines.
func events(t *testing.T, st *store.Store, key string) []string {
	t.Helper()
	evs, err := st.RunEvents(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s by %s (%s): was %s (%s)", e.Kind, e.By, e.Reason, e.PriorStatus, e.PriorReason))
	}
	return out
}

// TestSweepRunsAFireReopenedInTheStore: a fire reopened in the store without a holder (what
// `personagen fire run` and the console do) is run by the next pass of a scheduler that has
// its responsibility, however old the fire, as one more attempt; one reopened at an instant
// that is not a fire is abandoned.
func TestSweepRunsAFireReopenedInTheStore(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		const daily = "daily=0 8 * * *@Europe/Berlin" // 06:00Z in summer
		clock := newFakeClock(utc(t, "2026-06-01T06:00:01Z"))
		st := openStore(t, dsn, clock)
		runner := &scripted{clock: clock, steps: []step{{res: FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: "model: 401"}}},
			{res: FireResult{Text: "the digest", Finish: store.Finish{StopReason: "end_turn"}}}}, layout: "01-02 15:04:05"}
		s := newScheduler(t, st, []*runtime.Persona{persona("p", daily)}, runner, clock, WithLease(time.Hour), withoutJitter())
		tick := func() {
			t.Helper()
			var err error
			clock.drive(t, clock.Now().Add(time.Hour), func() { err = s.Tick(ctx) })
			if err != nil {
				t.Fatal(err)
			}
		}
		tick()
		for _, day := range []string{"2026-06-02T06:00:01Z", "2026-06-03T06:00:01Z"} {
			clock.Set(utc(t, day))
			tick()
		}
		key := RunKey("p", "daily", utc(t, "2026-06-01T06:00:00Z"))
		// Three days later, long past the catch-up window, an operator reopens it in the store.
		clock.Set(utc(t, "2026-06-04T05:00:00Z"))
		if _, _, err := st.ReopenRun(ctx, key, store.Reopen{By: "cli:ops", Reason: "the key is fixed"}); err != nil {
			t.Fatal(err)
		}
		tick()
		diffTrail(t, trailOf(t, st, "p", "daily"), []string{"06-01T06:00Z succeeded", "06-02T06:00Z succeeded", "06-03T06:00Z succeeded"})
		if want := "06-01 06:00:01 attempt 1\n06-02 06:00:01 attempt 1\n06-03 06:00:01 attempt 1\n06-04 05:00:00 attempt 2"; lines(runner.calls) != want {
			t.Errorf("runner calls:\n%s\nwant:\n%s", lines(runner.calls), want)
		}
		if got := events(t, st, key); lines(got) != "reopened by cli:ops (the key is fixed): was failed (model: 401)" {
			t.Errorf("events = %q", got)
		}
		// A mistyped instant: recorded and reopened in the store, abandoned by the sweep.
		bogus := RunKey("p", "daily", utc(t, "2026-06-02T06:30:00Z"))
		if _, _, err := st.StartRun(ctx, store.NewRun{Key: bogus, Kind: store.RunScheduled, Persona: "p", Responsibility: "daily",
			FireAt: utc(t, "2026-06-02T06:30:00Z"), Status: store.RunSkipped, Reason: ReasonMissed}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.ReopenRun(ctx, bogus, store.Reopen{By: "cli:ops"}); err != nil {
			t.Fatal(err)
		}
		tick()
		if r, err := st.Run(ctx, bogus); err != nil || r.Status != store.RunAbandoned || r.Reason != ReasonNotAFire {
			t.Errorf("the run at no fire = %+v, %v; want abandoned (%s)", r, err, ReasonNotAFire)
		}
		if len(runner.calls) != 4 {
			t.Errorf("the runner was called %d times, want 4", len(runner.calls))
		}
	})
}
