package agent_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

// instantClock is a schedule.Clock standing still whose waits end at once.
type instantClock struct{ now time.Time }

func (c instantClock) Now() time.Time { return c.now }
func (c instantClock) After(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// A model error stops the attempt with the run left running (FireResult.Finish.Status ""): the
// scheduler retries it, the retry resumes the recorded rounds without running their tools
// again, and the run's output reaches the host through WithResults.
func TestSchedulerRetriesAStoppedFireThroughTheRunner(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		box := newToolbox()
		p := persona(st, box.tools())
		now := time.Date(2026, 3, 6, 8, 0, 30, 0, time.UTC)
		d.clock.Advance(now.Sub(d.clock.Now()))
		failed := false
		m := &model{fail: func(n int) error {
			if n == 1 && !failed {
				failed = true
				return &chat.CallError{Provider: "model", StatusCode: 529, Transient: true, Err: errors.New("overloaded")}
			}
			return nil
		}}
		var mu sync.Mutex
		var reports []schedule.Report
		s, err := schedule.New(st, []*runtime.Persona{p}, runner(st, m, "ignored"),
			schedule.WithClock(instantClock{now}), schedule.WithHolder("scheduler-1"), schedule.WithLogger(quiet),
			schedule.WithResults(func(r schedule.Report) {
				mu.Lock()
				defer mu.Unlock()
				reports = append(reports, r)
			}))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		key := schedule.RunKey("support", "digest", now.Truncate(time.Hour))
		run, err := st.Run(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if run.Status != store.RunSucceeded || run.Attempt != 1 || run.Usage.InputTokens != 4600 {
			t.Errorf("run = %+v", run)
		}
		for k := range 3 {
			if n := box.ran("act", callID(k, "act")); n != 1 {
				t.Errorf("act of turn %d ran %d times", k, n)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if len(reports) != 2 {
			t.Fatalf("%d reports, want 2 (the stopped attempt, then the run's end)", len(reports))
		}
		first, last := reports[0], reports[1]
		if first.Recorded.Status != "" || first.RetryAt.IsZero() || first.Err == nil || !strings.Contains(first.Err.Error(), "status 529 (transient): overloaded") {
			t.Errorf("the stopped attempt's report = %+v", first)
		}
		if last.Recorded.Status != store.RunSucceeded || !strings.HasPrefix(last.Result.Text, "Dear Ada, I read: ") || last.Err != nil {
			t.Errorf("the run's report = %+v", last)
		}
	})
}

// RunFire says a fire the runner cannot run failed for good, and one whose model failed stopped
// (to be retried).
func TestRunFireSaysWhetherTheRunEnded(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		p := persona(st, newToolbox().tools())
		claim := func(key string) store.Run {
			r, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunScheduled, Persona: "support",
				Responsibility: "digest", FireAt: fireAt.Add(time.Duration(len(key)) * time.Hour), Holder: "s", LeaseFor: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
		resp, _ := p.Responsibility("digest")
		r := runner(st, &model{fail: func(int) error {
			return &chat.CallError{Provider: "model", StatusCode: 503, Transient: true, Err: errors.New("unavailable")}
		}}, "ignored")
		res, err := r.RunFire(ctx, schedule.Fire{Persona: p, Responsibility: resp, At: fireAt, Run: claim("a")})
		if err == nil || res.Finish.Status != "" {
			t.Errorf("a failing model: RunFire = %+v, %v; want status \"\" and the error", res, err)
		}
		if _, err := st.FinishRun(ctx, "a", "s", store.Finish{Status: store.RunFailed, Reason: "gave up"}); err != nil {
			t.Fatal(err)
		}
		other := *p
		other.Name = "other"
		res, err = r.RunFire(ctx, schedule.Fire{Persona: &other, Responsibility: resp, At: fireAt, Run: claim("bb")})
		if !errors.Is(err, agent.ErrInvalidJob) || res.Finish.Status != store.RunFailed || res.Finish.Reason != err.Error() {
			t.Errorf("a run of another persona: RunFire = %+v, %v; want failed with ErrInvalidJob", res, err)
		}
	})
}
