package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

var fireAt = time.Date(2026, 3, 6, 7, 0, 0, 0, time.UTC)

// A fire runs the responsibility chain with its tool rounds owned by the run; its output is the
// final answer, returned again (nothing runs) when the fire is carried out a second time.
func TestFireRunsAScheduledRun(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		box := newToolbox()
		m := &model{}
		p := persona(st, box.tools())
		res, err := runner(st, m, "w1").Fire(ctx, agent.Fire{Persona: p, Responsibility: "digest", At: fireAt})
		if err != nil {
			t.Fatal(err)
		}
		key := schedule.RunKey("support", "digest", fireAt)
		if res.Run.Key != key || key != "fire:support/digest@2026-03-06T07:00:00Z" || res.Run.Kind != store.RunScheduled ||
			res.Run.Status != store.RunSucceeded || !strings.HasPrefix(res.Text, "Dear Ada, I read: ") {
			t.Fatalf("fire = %+v, text %.40q", res.Run, res.Text)
		}
		if !strings.Contains(string(m.sent()[0]), "Write the morning digest.") {
			t.Errorf("the first request is not the responsibility chain's: %.200s", m.sent()[0])
		}
		rounds, err := st.Rounds(ctx, store.Owner{Type: store.OwnerRun, ID: res.Run.ID}, key)
		if err != nil || len(rounds) != 3 {
			t.Errorf("rounds owned by the run: %d, %v", len(rounds), err)
		}
		again, err := runner(st, m, "w2").Fire(ctx, agent.Fire{Persona: p, Responsibility: "digest", At: fireAt})
		if err != nil || !again.AlreadyFinished || again.Text != res.Text {
			t.Errorf("second fire = %+v, %v", again, err)
		}
		if _, err := runner(st, m, "w2").Fire(ctx, agent.Fire{Persona: p, Responsibility: "nope", At: fireAt}); !errors.Is(err, agent.ErrInvalidJob) {
			t.Errorf("unknown responsibility: %v", err)
		}
	})
}

// A run a scheduler claimed is worked on under the claim's holder and left for the scheduler
// to finish; after its replica died, the scheduler's takeover resumes it.
func TestFireOfAClaimedRun(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		box := newToolbox()
		p := persona(st, box.tools())
		key := schedule.RunKey("support", "digest", fireAt)
		claimed, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunScheduled, Persona: "support",
			Responsibility: "digest", FireAt: fireAt, Holder: "scheduler-a", LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		r := runner(st, &model{}, "ignored")
		agent.SetHook(r, func(point string) error {
			if point == "record:1" {
				return errCrash
			}
			return nil
		})
		if _, err := r.Fire(ctx, agent.Fire{Persona: p, Responsibility: "digest", Run: &claimed}); !errors.Is(err, errCrash) {
			t.Fatalf("first attempt: %v", err)
		}
		d.clock.Advance(2 * time.Minute)
		taken, err := st.TakeOverRun(ctx, key, "scheduler-b", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		m := &model{}
		res, err := runner(st, m, "ignored").Fire(ctx, agent.Fire{Persona: p, Responsibility: "digest", Run: &taken})
		if err != nil {
			t.Fatal(err)
		}
		if res.Replayed != 2 || len(m.sent()) != 2 || res.Finish.Status != store.RunSucceeded || res.Finish.StopReason != "end_turn" ||
			res.Finish.Usage.InputTokens != 1000+1100+1200+1300 {
			t.Errorf("resumed: replayed %d, %d model calls, finish %+v", res.Replayed, len(m.sent()), res.Finish)
		}
		if run, _ := st.Run(ctx, key); run.Status != store.RunRunning {
			t.Errorf("the runner finished a claimed run: %s", run.Status)
		}
		if _, err := st.FinishRun(ctx, key, "scheduler-b", res.Finish); err != nil {
			t.Errorf("the scheduler's FinishRun with Result.Finish: %v", err)
		}
		for k := range 3 {
			if n := box.ran("act", callID(k, "act")); n != 1 {
				t.Errorf("act of turn %d ran %d times", k, n)
			}
		}
	})
}

// fixedClock is a schedule.Clock standing still.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time                         { return c.now }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return make(chan time.Time) }

// The scheduler claims a due fire and hands it to the runner (a schedule.Runner), which runs it
// under the scheduler's lease; the scheduler records the outcome with the run's usage.
func TestSchedulerRunsFiresThroughTheRunner(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		box := newToolbox()
		p := persona(st, box.tools())
		now := time.Date(2026, 3, 6, 8, 0, 30, 0, time.UTC)
		d.clock.Advance(now.Sub(d.clock.Now()))
		s, err := schedule.New(st, []*runtime.Persona{p}, runner(st, &model{}, "ignored"),
			schedule.WithClock(fixedClock{now}), schedule.WithHolder("scheduler-1"), schedule.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		trail, err := st.Runs(ctx, store.RunQuery{Persona: "support", Responsibility: "digest"})
		if err != nil || len(trail) != 1 {
			t.Fatalf("trail = %+v, %v", trail, err)
		}
		run := trail[0]
		if run.Status != store.RunSucceeded || run.Key != schedule.RunKey("support", "digest", now.Truncate(time.Hour)) ||
			run.Usage.InputTokens != 4600 || run.StopReason != "end_turn" || run.Lease.Holder != "scheduler-1" {
			t.Errorf("run = %+v", run)
		}
		if turns, err := st.Turns(ctx, run.ID); err != nil || len(turns) != 4 || !strings.HasPrefix(turns[3].Text, "Dear Ada") {
			t.Errorf("the fire's output is its last model call: %d turns, %v", len(turns), err)
		}
	})
}
