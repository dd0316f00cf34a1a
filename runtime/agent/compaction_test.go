package agent_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// A request refused because it does not fit the context window compacts the thread (the
// summary written by the same model) and is sent once more; a second refusal fails the run.
func TestContextOverflowCompactsOnceAndRetries(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		m := &model{}
		m.fail = func(n int) error {
			if n == 0 && len(m.sent()) == 1 {
				return fmt.Errorf("prompt is too long: %w", chat.ErrContextWindow)
			}
			return nil
		}
		res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in})
		if err != nil {
			t.Fatal(err)
		}
		c, err := st.LatestCompaction(ctx, threadID)
		if err != nil || c == nil || c.Summary != "Summary: Ada ordered A-17, which was to ship." || c.BoundaryMessageID != "m1@example.com" {
			t.Fatalf("compaction = %+v, %v", c, err)
		}
		reqs := m.sent()
		// refused, summary, retry, then the rest of the run.
		if len(reqs) != 3+rounds || !bytes.Contains(reqs[2], []byte("Ada ordered A-17")) || bytes.Contains(reqs[2], []byte("Where is my order")) {
			t.Errorf("%d requests; the retry should read the summary instead of the first message", len(reqs))
		}
		if res.Usage.InputTokens != 1000+1100+1200+1300+300 {
			t.Errorf("usage %+v should include the summary's", res.Usage)
		}
		run, _ := st.Run(ctx, res.Run.Key)
		if run.CompactionSeq != 0 {
			t.Errorf("the run records the compaction it started with (none), got %d", run.CompactionSeq)
		}

		// Refused again after compacting: the run fails.
		always := &model{fail: func(int) error { return fmt.Errorf("too long: %w", chat.ErrContextWindow) }}
		next := seedLate(t, st, "m5@example.com")
		res, err = runner(st, always, "w1").Reply(ctx, agent.Inbound{Persona: persona(st, nil), Message: next})
		if !errors.Is(err, chat.ErrContextWindow) || res.Run.Status != store.RunFailed {
			t.Errorf("refused twice: %+v, %v; want a failed run and ErrContextWindow", res.Run, err)
		}
	})
}

// Runner.Compaction compacts the thread after the reply is stored, with the same model.
func TestCompactionPolicyAppliesAfterTheRun(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		r := runner(st, &model{}, "w1")
		r.Compaction = &runtime.CompactionPolicy{MaxMessages: 3, Keep: 2}
		res, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in})
		if err != nil {
			t.Fatal(err)
		}
		c, err := st.LatestCompaction(ctx, threadID)
		// Four messages (m1, r1, m2, the reply), two kept: the boundary is r1.
		if err != nil || c == nil || c.BoundaryMessageID != "r1@acme.test" {
			t.Fatalf("compaction = %+v, %v", c, err)
		}
		run, _ := st.Run(ctx, res.Run.Key)
		if run.Usage.InputTokens != 1000+1100+1200+1300+300 {
			t.Errorf("stored usage %+v should include the summary's", run.Usage)
		}
	})
}
