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

// TestMalformedModelAnswerIsAFailedCall runs a reply through the Anthropic adapter against a
// server that first answers 200 with "{}" (JSON, but no message): the attempt stops with an
// error matching provider.ErrMalformedResponse, records no model call and stores no reply, and
// the run stays running; the redelivery gets a real message and replies with its text.
func TestMalformedModelAnswerIsAFailedCall(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		var mu sync.Mutex
		bodies := []string{`{}`, `{"id":"msg_2","type":"message","role":"assistant","model":"claude-test",` +
			`"content":[{"type":"text","text":"Dear Ada, your refund is on its way."}],"stop_reason":"end_turn",` +
			`"stop_sequence":null,"usage":{"input_tokens":900,"output_tokens":12}}`}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			mu.Lock()
			body := bodies[0]
			if len(bodies) > 1 {
				bodies = bodies[1:]
			}
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}))
		defer srv.Close()
		m := anthropic.New(option.WithoutEnvironmentDefaults(), option.WithBaseURL(srv.URL), option.WithAPIKey("k"), option.WithMaxRetries(0))
		p := persona(st, newToolbox().tools())

		res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if !errors.Is(err, provider.ErrMalformedResponse) {
			t.Fatalf("Reply err = %v, want provider.ErrMalformedResponse", err)
		}
		if res == nil || res.Run.Status != store.RunRunning || res.Reply != nil || res.Text != "" {
			t.Fatalf("Reply = %+v; want a running run without a reply", res)
		}
		if turns, err := st.Turns(ctx, res.Run.ID); err != nil || len(turns) != 0 {
			t.Errorf("recorded model calls = %+v, %v; want none", turns, err)
		}
		if thread, err := st.Thread(ctx, threadID); err != nil || len(thread) != 3 {
			t.Errorf("thread has %d messages (%v); want the 3 seeded, no reply", len(thread), err)
		}

		d.clock.Advance(2 * time.Minute) // the stopped attempt's lease runs out
		res, err = runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if err != nil {
			t.Fatalf("redelivery: %v", err)
		}
		if res.Run.Status != store.RunSucceeded || res.Text != "Dear Ada, your refund is on its way." || res.Reply == nil {
			t.Errorf("redelivery = status %s, text %q, reply %v", res.Run.Status, res.Text, res.Reply)
		}
		if len(res.Turns) != 1 || res.Turns[0].ResponseID != "msg_2" {
			t.Errorf("turns = %+v; want the one real answer", res.Turns)
		}
	})
}
