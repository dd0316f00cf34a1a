package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

// fixedClock stands still at a time just after the fire, for the examples' output to be stable.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time                         { return c.now }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// The output of a fire reaches the host through WithResults, without wrapping the Runner; a
// failure the runner reports as final is recorded and can be run again on request.
func ExampleWithResults() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "schedule-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	clock := fixedClock{time.Date(2026, 3, 30, 6, 0, 1, 0, time.UTC)} // 08:00:01 in Berlin
	st, err := store.Open(ctx, filepath.Join(dir, "example.db"), store.WithClock(clock.Now))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		panic(err)
	}
	research := &runtime.Persona{Name: "research-assistant", Responsibilities: []runtime.Responsibility{
		{Name: "daily-digest", Schedule: "0 8 * * *", Timezone: "Europe/Berlin", Enabled: true}}}

	calls := 0
	runner := schedule.RunnerFunc(func(ctx context.Context, f schedule.Fire) (schedule.FireResult, error) {
		calls++
		if calls == 1 {
			// A permanent failure: the run ends failed, and is not retried.
			return schedule.FireResult{Finish: store.Finish{Status: store.RunFailed}}, errors.New("the search API refused the key")
		}
		return schedule.FireResult{Text: "3 new papers on retrieval", Finish: store.Finish{StopReason: "end_turn"}}, nil
	})
	s, err := schedule.New(st, []*runtime.Persona{research}, runner,
		schedule.WithClock(clock), schedule.WithLogger(slog.New(slog.DiscardHandler)),
		schedule.WithResults(func(r schedule.Report) {
			fmt.Printf("%s, attempt %d: %s %q\n", r.Fire.Run.Key, r.Fire.Run.Attempt, r.Recorded.Status, r.Result.Text)
		}))
	if err != nil {
		panic(err)
	}
	if err := s.Tick(ctx); err != nil {
		panic(err)
	}
	fire := time.Date(2026, 3, 30, 6, 0, 0, 0, time.UTC)
	if _, err := s.RunAgain(ctx, "research-assistant", "daily-digest", fire, "ops@example.com", "the key is rotated"); err != nil {
		panic(err)
	}
	events, err := st.RunEvents(ctx, schedule.RunKey("research-assistant", "daily-digest", fire))
	if err != nil {
		panic(err)
	}
	for _, e := range events {
		fmt.Printf("%s by %s (%s), was %s: %s\n", e.Kind, e.By, e.Reason, e.PriorStatus, e.PriorReason)
	}
	// Output:
	// fire:research-assistant/daily-digest@2026-03-30T06:00:00Z, attempt 1: failed ""
	// fire:research-assistant/daily-digest@2026-03-30T06:00:00Z, attempt 2: succeeded "3 new papers on retrieval"
	// reopened by ops@example.com (the key is rotated), was failed: the search API refused the key
}

// A daily 02:30 in Berlin across both changes of 2026: on 29 March the clocks skip from 02:00
// to 03:00, so the fire runs once at the end of the gap; on 25 October they repeat 02:00 to
// 03:00, and it runs once, at the first 02:30.
func ExampleParse() {
	c, err := schedule.Parse("30 2 * * *", "Europe/Berlin")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, days := range [][2]string{{"2026-03-27", "2026-03-30"}, {"2026-10-24", "2026-10-26"}} {
		from, _ := time.Parse(time.DateOnly, days[0])
		through, _ := time.Parse(time.DateOnly, days[1])
		for fire := range c.Fires(from, through) {
			fmt.Println(fire.Format("Mon 2006-01-02 15:04 MST"), "=", fire.UTC().Format("15:04 UTC"))
		}
	}
	// Output:
	// Fri 2026-03-27 02:30 CET = 01:30 UTC
	// Sat 2026-03-28 02:30 CET = 01:30 UTC
	// Sun 2026-03-29 03:00 CEST = 01:00 UTC
	// Sat 2026-10-24 02:30 CEST = 00:30 UTC
	// Sun 2026-10-25 02:30 CEST = 00:30 UTC
}

// A run key names one fire of one responsibility: the scheduler's claim, unique in the store.
func ExampleRunKey() {
	at := time.Date(2026, 3, 29, 8, 0, 0, 0, time.FixedZone("CEST", 2*60*60))
	fmt.Println(schedule.RunKey("research-assistant", "daily-digest", at))
	// Output:
	// fire:research-assistant/daily-digest@2026-03-29T06:00:00Z
}
