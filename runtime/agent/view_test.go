package agent_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
)

// A message that arrives while its thread's run is in progress is refused with ErrBusy, is not
// in that run's view, and is answered by the next run, which sees the first run's reply and its
// tool rounds.
func TestOneRunPerThreadAndTheNextSeesTheReply(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		late := store.Message{Message: history.Message{ThreadID: threadID, MessageID: "m3@example.com",
			Direction: history.Inbound, From: "Ada <ada@example.com>", To: []string{mailbox}, Subject: "Re: Order A-17",
			Date: time.Date(2026, 3, 6, 14, 55, 0, 0, time.UTC), Text: "Also: my new address is Main St 5."}, Mailbox: mailbox}
		m := &model{}
		r := runner(st, m, "w1")
		var busy error
		agent.SetHook(r, func(point string) error {
			if point != "started:1" {
				return nil
			}
			a, err := st.AppendMessage(ctx, late)
			if err != nil {
				return err
			}
			late.Seq = a.Seq
			_, busy = runner(st, &model{}, "w2").Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: late})
			return nil
		})
		first, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in})
		if err != nil {
			t.Fatal(err)
		}
		var be *store.BusyError
		if !errors.As(busy, &be) || !errors.Is(busy, store.ErrBusy) || be.Running.Key != first.Run.Key {
			t.Fatalf("the late message's reply during the run: %v, want a *store.BusyError naming %s", busy, first.Run.Key)
		}
		for _, req := range m.sent() {
			if bytes.Contains(req, []byte("new address")) {
				t.Fatalf("the first run's request holds the message that arrived during it:\n%s", req)
			}
		}

		m2 := &model{}
		second, err := runner(st, m2, "w2").Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: late})
		if err != nil {
			t.Fatal(err)
		}
		req := m2.sent()[0]
		// History: m1, r1, m2 with the first run's three rounds, the first run's reply; then m3.
		for _, want := range []string{"Where is my order A-17?", "It ships tomorrow.", "Please refund me", `"tool_call_id":"t2-act"`,
			"Dear Ada, I read: ", "new address"} {
			if !bytes.Contains(req, []byte(want)) {
				t.Errorf("the second run's first request lacks %q", want)
			}
		}
		if second.Reply.InReplyTo != "m3@example.com" || second.Run.ViewSeq != first.Reply.Seq {
			t.Errorf("second run: reply to %q, view up to %d (want the first reply, seq %d)", second.Reply.InReplyTo,
				second.Run.ViewSeq, first.Reply.Seq)
		}
	})
}

// A run resumed after a compaction completed reads its thread with the compaction it started
// with (none here): its next request is byte-identical to the uninterrupted run's.
func TestResumedRunKeepsItsCompaction(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		base := runBaseline(t, d)
		d = newDB(t, d.name)
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		r := runner(st, &model{}, "w1")
		agent.SetHook(r, func(point string) error {
			if point == "record:0" {
				return errCrash
			}
			return nil
		})
		if _, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in}); !errors.Is(err, errCrash) {
			t.Fatalf("first attempt: %v", err)
		}
		thread, _ := st.Thread(ctx, threadID)
		sum := runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) { return "Ada asked about A-17.", nil })
		if _, err := st.Compact(ctx, threadID, thread[0].Seq, sum); err != nil {
			t.Fatal(err)
		}
		d.clock.Advance(2 * time.Minute)
		m := &model{}
		if _, err := runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in}); err != nil {
			t.Fatal(err)
		}
		for _, req := range m.sent() {
			if n := roundsIn(t, req); !bytes.Equal(req, base.requests[n]) {
				t.Errorf("request with %d rounds differs from the uninterrupted run's", n)
			}
		}
		// The next run of the thread reads the new compaction.
		next := seedLate(t, st, "m4@example.com")
		m2 := &model{}
		if _, err := runner(st, m2, "w2").Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: next}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(m2.sent()[0], []byte("Ada asked about A-17.")) {
			t.Errorf("the next run does not read the new summary")
		}
	})
}

// seedLate appends another inbound message to the thread.
func seedLate(t testing.TB, st *store.Store, id string) store.Message {
	t.Helper()
	m := store.Message{Message: history.Message{ThreadID: threadID, MessageID: id, Direction: history.Inbound,
		From: "Ada <ada@example.com>", To: []string{mailbox}, Subject: "Re: Order A-17",
		Date: time.Date(2026, 3, 7, 9, 0, 0, 0, time.UTC), Text: "Any news?"}, Mailbox: mailbox}
	a, err := st.AppendMessage(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	m.Seq = a.Seq
	return m
}

// A worker whose run was taken over stops at its next write: it records no further model call
// and starts no further tool.
func TestLostLeaseStopsTheRun(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newToolbox()
		r := runner(st, &model{}, "w1")
		key := agent.ReplyKey("support", mailbox, in.MessageID)
		agent.SetHook(r, func(point string) error {
			if point == "model:1" {
				d.clock.Advance(2 * time.Minute)
				if _, err := st.TakeOverRun(ctx, key, "w-other", time.Minute); err != nil {
					t.Errorf("take over: %v", err)
				}
			}
			return nil
		})
		_, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, box.tools()), Message: in})
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("Reply = %v, want ErrLeaseLost", err)
		}
		if n := box.ran("act", callID(1, "act")); n != 0 {
			t.Errorf("act of turn 1 ran %d times after the lease was lost", n)
		}
		run, _ := st.Run(ctx, key)
		if run.Status != store.RunRunning || run.Lease.Holder != "w-other" {
			t.Errorf("run = %s under %q", run.Status, run.Lease.Holder)
		}
	})
}

// A message stored as not to be answered is recorded as a skipped run; nothing runs.
func TestNotToAnswerIsSkipped(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		in.MessageID, in.NotToAnswer = "auto@example.com", "auto-submitted: auto-replied"
		ap, err := st.AppendMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		m := &model{}
		res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: persona(st, nil), Message: store.Message{Message: history.Message{Seq: ap.Seq}}})
		if err != nil || res.Run.Status != store.RunSkipped || res.Run.Reason != "not to answer: auto-submitted: auto-replied" {
			t.Fatalf("Reply = %+v, %v", res, err)
		}
		if len(m.sent()) != 0 {
			t.Error("the model was called")
		}
	})
}
