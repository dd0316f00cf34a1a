package schedule

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// TestAFireThatWaitsForApprovalIsLeftToItsResumer: a runner that pauses its fire for approval
// (it records the pause under the scheduler's lease and returns store.ErrWaiting) leaves
// nothing for the scheduler to finish, and the responsibility's next fire, due while the run
// waits, is skipped as overlap; the waiting run is not swept as a dead replica's.
func TestAFireThatWaitsForApprovalIsLeftToItsResumer(t *testing.T) {
	eachDialect(t, func(t *testing.T, dsn string) {
		clock := newFakeClock(utc(t, "2026-03-29T06:00:02Z"))
		st := openStore(t, dsn, clock)
		r := newRecorder()
		r.result = func(f Fire) (FireResult, error) {
			ctx := context.Background()
			turn := store.Turn{RunID: f.Run.ID, Text: "Refunding.", StopReason: "tool_use",
				ToolCalls:        []chat.ToolCall{{ID: "c1", Name: "refund", Input: json.RawMessage(`{}`)}},
				ApprovalRequests: []store.ApprovalRequest{{Position: 0}}}
			if _, err := st.StartTurn(ctx, f.Run.Lease.Holder, turn); err != nil {
				return FireResult{}, err
			}
			run, err := st.WaitRun(ctx, f.Run.Key, f.Run.Lease.Holder)
			if err != nil {
				return FireResult{}, err
			}
			return FireResult{Finish: store.Finish{Status: store.RunWaiting}}, fmt.Errorf("runner: %w", &store.WaitingError{Run: run})
		}
		p := persona("research-assistant", "daily-digest=0 8 * * *@Europe/Berlin")
		s := newScheduler(t, st, []*runtime.Persona{p}, r, clock)
		ctx := context.Background()
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		clock.Advance(24 * time.Hour)
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		diffTrail(t, trailOf(t, st, p.Name, "daily-digest"), []string{
			"03-29T06:00Z waiting (waiting for approval)",
			"03-30T06:00Z skipped (" + ReasonOverlap + ")",
		})
		if n := r.count("fire:research-assistant/daily-digest@2026-03-29T06:00:00Z"); n != 1 {
			t.Errorf("the waiting fire ran %d times, want 1", n)
		}
	})
}
