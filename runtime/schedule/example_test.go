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
