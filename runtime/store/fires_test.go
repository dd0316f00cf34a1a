package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRunningFires: only running scheduled runs of the named personas, oldest first, read
// through the running-responsibility index whatever the size of the trail.
func TestRunningFires(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		fire := time.Date(2026, 6, 1, 8, 0, 0, 0, time.UTC)
		start := func(persona, resp string, i int, status RunStatus) Run {
			t.Helper()
			r, _, err := s.StartRun(ctx, NewRun{Key: fmt.Sprintf("fire:%s/%s@%d", persona, resp, i), Kind: RunScheduled,
				Persona: persona, Responsibility: resp, FireAt: fire.Add(time.Duration(i) * time.Minute),
				Holder: "h", Status: status, Reason: "overlap"})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		for i := range 200 { // a trail to not scan
			start("a", "hourly", i, RunSkipped)
		}
		a := start("a", "hourly", 200, RunRunning)
		b := start("b", "daily", 0, RunRunning)
		start("c", "daily", 0, RunRunning) // not asked for
		got, err := s.RunningFires(ctx, []string{"b", "a", "nobody"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Key != a.Key || got[1].Key != b.Key || got[0].Status != RunRunning {
			t.Errorf("RunningFires = %+v, want %s then %s", got, a.Key, b.Key)
		}
		if none, err := s.RunningFires(ctx, nil); err != nil || len(none) != 0 {
			t.Errorf("RunningFires(none) = %v, %v", none, err)
		}
		plan := explain(t, s, s.runningFiresQuery(2), "a", "b")
		if len(plan.Steps) != 1 || plan.Steps[0].Index != "runs_running_responsibility" || plan.Sorts ||
			plan.Steps[0].Rows > 2 {
			t.Errorf("RunningFires does not read just the running runs through runs_running_responsibility:\n%s", plan.Raw)
		}
	})
}
