package schedule

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// TestFinishedRunIsNeverOverlap: another replica ("ghost", a store of its own on its own clock)
// runs the 08:00 fire of a minutely responsibility, and its record reaches the database late, as
// a SQLite status write waiting for the write lock does. A fire is skipped as overlap only when
// the record shows the run was running at the fire's instant; a run that ended before the fire
// lets it run, however late its record came; a record that came after the next fire was due
// leaves the fire missed, not overlap.
func TestFinishedRunIsNeverOverlap(t *testing.T) {
	type action struct {
		tick   string // the scheduler ticks at this time, or
		finish string // the ghost records its run ended at this time (its clock)
	}
	dsns := map[store.Dialect]string{}
	for _, d := range dialects {
		dsns[d] = scratchDSN(t, d)
	}
	for i, tt := range []struct {
		name    string
		lease   time.Duration
		actions []action
		trail   []string
		ran     []string
	}{
		{"ended before the fire, recorded after it", 10 * time.Minute,
			[]action{{tick: "08:01:00.5"}, {finish: "08:00:00.3"}, {tick: "08:01:00.8"}},
			[]string{"06-01T08:00Z succeeded", "06-01T08:01Z succeeded"}, []string{"08:01"}},
		{"running at the fire's instant", 10 * time.Minute,
			[]action{{tick: "08:01:00.5"}, {finish: "08:01:00.3"}, {tick: "08:01:00.8"}, {tick: "08:02:00.5"}},
			[]string{"06-01T08:00Z succeeded", "06-01T08:01Z skipped (overlap)", "06-01T08:02Z succeeded"}, []string{"08:02"}},
		{"running when the next fires are due", 10 * time.Minute,
			[]action{{tick: "08:01:00.5"}, {tick: "08:02:00.5"}, {finish: "08:02:10"}, {tick: "08:02:20"}, {tick: "08:03:00.5"}},
			[]string{"06-01T08:00Z succeeded", "06-01T08:01Z skipped (overlap)", "06-01T08:02Z skipped (overlap)", "06-01T08:03Z succeeded"},
			[]string{"08:03"}},
		{"ended before the fire, recorded after the next was due", 10 * time.Minute,
			[]action{{tick: "08:01:00.5"}, {finish: "08:00:00.3"}, {tick: "08:02:00.5"}},
			[]string{"06-01T08:00Z succeeded", "06-01T08:01Z skipped (missed)", "06-01T08:02Z succeeded"}, []string{"08:02"}},
		{"its replica died", 30 * time.Second,
			[]action{{tick: "08:00:20"}, {tick: "08:01:00.5"}},
			[]string{"06-01T08:00Z abandoned (lease expired)", "06-01T08:01Z succeeded"}, []string{"08:01"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range dialects {
				t.Run(string(d), func(t *testing.T) {
					dsn := dsns[d]
					ctx := context.Background()
					at := func(hms string) time.Time { return utc(t, "2026-06-01T"+hms+"Z") }
					p := persona(fmt.Sprintf("p%d", i), "minutely=* * * * *@UTC")
					ghostClock := newFakeClock(at("08:00:00.1"))
					ghost := openStore(t, dsn, ghostClock)
					prev, _, err := ghost.StartRun(ctx, store.NewRun{Key: RunKey(p.Name, "minutely", at("08:00:00")), Kind: store.RunScheduled,
						Persona: p.Name, Responsibility: "minutely", FireAt: at("08:00:00"), Holder: "ghost", LeaseFor: tt.lease})
					if err != nil {
						t.Fatal(err)
					}
					clock := newFakeClock(at("08:00:00.2"))
					st := openStore(t, dsn, clock)
					r := newRecorder()
					s := newScheduler(t, st, []*runtime.Persona{p}, r, clock, WithHolder("replica"))
					for _, a := range tt.actions {
						if a.finish != "" {
							ghostClock.Set(at(a.finish))
							if _, err := ghost.FinishRun(ctx, prev.Key, "ghost", store.Finish{Status: store.RunSucceeded}); err != nil {
								t.Fatal(err)
							}
							continue
						}
						clock.Set(at(a.tick))
						if err := s.Tick(ctx); err != nil {
							t.Fatal(err)
						}
					}
					diffTrail(t, trailOf(t, st, p.Name, "minutely"), tt.trail)
					var ran []string
					r.mu.Lock()
					for key, n := range r.ran {
						for range n {
							ran = append(ran, key[len(key)-9:len(key)-4])
						}
					}
					r.mu.Unlock()
					slices.Sort(ran)
					if lines(ran) != lines(tt.ran) {
						t.Errorf("ran %q, want %q", ran, tt.ran)
					}
				})
			}
		})
	}
}

// steppingClock is a fake clock every reading of which is step after the one before: the time
// a pass's work takes, counted in clock readings.
type steppingClock struct {
	*fakeClock
	step time.Duration
}

func (c steppingClock) Now() time.Time {
	c.fakeClock.mu.Lock()
	defer c.fakeClock.mu.Unlock()
	c.fakeClock.now = c.fakeClock.now.Add(c.step)
	return c.fakeClock.now
}

// TestCatchUpNeverMakesAnOnTimeFireLate: after an hour and a half of downtime, the first pass of a
// replica claims every due fire before it records the backlog of missed ones, so an on-time
// fire is claimed as soon as the pass begins, however long the backlog. Here every reading of
// the clock takes 200 ms, so recording 89 missed fires one by one (a clock reading each) before
// the claims would make the fires behind them more than half a minute late.
func TestCatchUpNeverMakesAnOnTimeFireLate(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		at := func(hms string) time.Time { return utc(t, "2026-06-01T"+hms+"Z") }
		backlog := persona("backlog", "minutely=* * * * *@UTC")
		onTime := persona("on-time", "minutely=* * * * *@UTC")
		ps := []*runtime.Persona{backlog, onTime}
		clock := newFakeClock(at("08:00:01"))
		st := openStore(t, dsn, clock)
		r := newRecorder()
		if err := newScheduler(t, st, ps, r, clock).Tick(ctx); err != nil {
			t.Fatal(err)
		}
		// Every replica was down from 08:00:01 until 09:30:30.
		clock.Set(at("09:30:30"))
		stepping := steppingClock{clock, 200 * time.Millisecond}
		logs := newLogCapture(slog.LevelWarn)
		s, err := New(openStore(t, dsn, stepping), ps, r, WithClock(stepping), WithLogger(slog.New(logs)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		runs, err := st.Runs(ctx, store.RunQuery{Kind: store.RunScheduled})
		if err != nil {
			t.Fatal(err)
		}
		var claims, missed []store.Run
		for _, run := range runs[2:] { // the two 08:00 fires before the downtime
			if run.Status == store.RunSkipped {
				missed = append(missed, run)
			} else {
				claims = append(claims, run)
			}
		}
		if len(claims) != 2 || len(missed) != 2*89 {
			t.Fatalf("%d fires claimed and %d recorded after the downtime, want 2 and 178", len(claims), len(missed))
		}
		for _, c := range claims {
			if c.Status != store.RunSucceeded || !c.FireAt.Equal(at("09:30:00")) {
				t.Errorf("claimed %s: %s, want the 09:30 fire succeeded", c.Key, c.Status)
			}
			if late := c.StartedAt.Sub(c.FireAt); late > 35*time.Second {
				t.Errorf("%s started %v after its fire, want at most 35s (the 30s of downtime into the minute and a few clock readings)", c.Key, late)
			}
			if c.ID > missed[0].ID {
				t.Errorf("%s was claimed after the backlog was recorded (run id %d, the first missed %d)", c.Key, c.ID, missed[0].ID)
			}
		}
		for _, m := range missed {
			if m.Reason != ReasonMissed || !m.FireAt.After(at("08:00:00")) || !m.FireAt.Before(at("09:30:00")) {
				t.Errorf("backlog %s: %s (%s)", m.Key, m.Status, m.Reason)
			}
		}
		want := []string{"WARN schedule: fires missed persona=backlog responsibility=minutely count=89 first=2026-06-01T08:01:00Z last=2026-06-01T09:29:00Z",
			"WARN schedule: fires missed persona=on-time responsibility=minutely count=89 first=2026-06-01T08:01:00Z last=2026-06-01T09:29:00Z"}
		got := logs.lines("persona", "responsibility", "count", "first", "last")
		slices.Sort(got)
		if lines(got) != lines(want) {
			t.Errorf("logs:\n%s\nwant:\n%s", lines(got), lines(want))
		}
	})
}
