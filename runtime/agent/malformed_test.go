package agent_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/store"
)

// TestMalformedModelAnswerFailsTheRun runs a reply through the Anthropic adapter against a
// server that answers 200 with "{}" (JSON, but no message): the error matches
// provider.ErrMalformedResponse, the run is failed with class invalid_answer and the adapter's
// reason, no model call is recorded and no reply stored; a redelivery calls the model no more,
// and the thread's next message is answered.
func TestMalformedModelAnswerFailsTheRun(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		var mu sync.Mutex
		calls := 0
		bodies := []string{`{}`, `{"id":"msg_2","type":"message","role":"assistant","model":"claude-test",` +
			`"content":[{"type":"text","text":"Dear Ada, we are on it."}],"stop_reason":"end_turn",` +
			`"stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":12}}`}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			body := bodies[min(calls, len(bodies)-1)]
			calls++
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}))
		defer srv.Close()
		m := anthropic.New(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
		p := persona(st, newToolbox().tools())

		res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		var rerr *agent.RunError
		if !errors.Is(err, provider.ErrMalformedResponse) || !errors.As(err, &rerr) || !rerr.Final || rerr.Class != store.FailureInvalidAnswer {
			t.Fatalf("Reply err = %v, want a final invalid_answer RunError wrapping provider.ErrMalformedResponse", err)
		}
		const reason = `anthropic: status 200 (permanent): malformed model answer: the body is not a Messages API message ("type" is missing, not "message"); body "{}"`
		run, _ := st.Run(ctx, res.Run.Key)
		if run.Status != store.RunFailed || run.FailureClass != store.FailureInvalidAnswer || run.Reason != reason || res.Reply != nil {
			t.Fatalf("run = %s, %s, %q; want failed, invalid_answer, %q", run.Status, run.FailureClass, run.Reason, reason)
		}
		if turns, err := st.Turns(ctx, res.Run.ID); err != nil || len(turns) != 0 {
			t.Errorf("recorded model calls = %+v, %v; want none", turns, err)
		}
		d.clock.Advance(2 * time.Minute)
		if _, err := runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in}); !errors.Is(err, store.ErrRunFinished) {
			t.Errorf("redelivery: %v, want ErrRunFinished", err)
		}
		if calls != 1 {
			t.Errorf("%d model calls, want 1", calls)
		}
		next := appendNext(t, st)
		res, err = runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: next})
		if err != nil || res.Run.Status != store.RunSucceeded || res.Text != "Dear Ada, we are on it." {
			t.Errorf("the thread's next message: %v (%+v)", err, res)
		}
	})
}
