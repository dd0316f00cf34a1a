package store

import (
	"context"
	"fmt"
	"strings"
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
		if !strings.Contains(plan, "runs_running_responsibility") {
			t.Errorf("RunningFires does not read through runs_running_responsibility:\n%s", plan)
		}
	})
}

// explain returns the database's plan for query, one line per row.
func explain(t *testing.T, s *Store, query string, args ...any) string {
	t.Helper()
	prefix := "EXPLAIN "
	if s.Dialect() == DialectSQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	rows, err := s.DB().QueryContext(context.Background(), prefix+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var line []string
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			line = append(line, fmt.Sprintf("%s=%v", cols[i], v))
		}
		out = append(out, strings.Join(line, " "))
	}
	return strings.Join(out, "\n")
}
