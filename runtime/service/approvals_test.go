package service

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// approvalDesk is the desk whose refund needs approval, with a notification hook that records
// the calls it was told about.
type approvalDesk struct {
	*desk
	mu      sync.Mutex
	noticed []string // call ids
}

func newApprovalDesk(rule runtime.ApprovalRule) *approvalDesk {
	d := &approvalDesk{desk: newDesk()}
	d.persona.ToolRules = map[string]runtime.ToolRule{"refund": {Approval: &rule}}
	return d
}

func (d *approvalDesk) notify(ctx context.Context, a store.Approval) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.noticed = append(d.noticed, a.CallID)
	return nil
}

func (d *approvalDesk) notices() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.noticed...)
}

// runsOf returns the reply runs, oldest first.
func runsOf(t *testing.T, st *store.Store) []store.Run {
	t.Helper()
	runs, err := st.Runs(context.Background(), store.RunQuery{Kind: store.RunReply})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// TestAWaitingRunHoldsNothingAndResumesOnAnotherReplica: a refund that needs approval pauses
// its run; the service holds no worker and does not retry it (the thread's work waits until the
// deadline, a later message of the thread waits with it), the hook is told once. The replica
// stops; the refund is approved from outside; another replica resumes the run, runs the refund
// once, then answers the later message.
func TestAWaitingRunHoldsNothingAndResumesOnAnotherReplica(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newApprovalDesk(runtime.ApprovalRule{})
		sender := &memSender{}
		cfg := config(st, d.desk, sender, "w1", nil)
		cfg.NotifyApproval = d.notify
		svc, stop := start(t, cfg)
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Refund", "Please refund my order.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the run to wait", func() bool { r := runsOf(t, st); return len(r) == 1 && r[0].Status == store.RunWaiting })
		waitFor(t, "the notice", func() bool { return len(d.notices()) == 1 })
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q2@cust.example", "q1@cust.example", "Re: Refund", "Any news?")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * cfg.PollInterval) // ten polls: nothing may happen
		pending, err := st.PendingReplies(ctx, "support", 10)
		if err != nil || len(pending) != 1 || pending[0].Holder != "" || time.Until(pending[0].AvailableAt) < 71*time.Hour ||
			pending[0].Attempts != 0 || pending[0].LastError != "" {
			t.Fatalf("the waiting thread's work = %+v, %v; want it given back until the deadline, not counted as a failure", pending, err)
		}
		if runs := runsOf(t, st); len(runs) != 1 || d.refunds.Load() != 0 || d.calls.Load() != 1 {
			t.Fatalf("while waiting: %d runs, %d refunds, %d model calls; want 1, 0, 1", len(runs), d.refunds.Load(), d.calls.Load())
		}
		stop()

		waiting, err := st.Approvals(ctx, store.ApprovalQuery{Status: store.ApprovalWaiting, Persona: "support"})
		if err != nil || len(waiting) != 1 || waiting[0].Arguments != `{"order":"A-17"}` || waiting[0].Input != `{"order":"A-17"}` {
			t.Fatalf("waiting approvals = %+v, %v", waiting, err)
		}
		operator := openStore(t, dsn)
		if _, _, err := operator.Approve(ctx, waiting[0].RunKey, waiting[0].CallID, "ann@acme.example", ""); err != nil {
			t.Fatal(err)
		}
		cfg2 := config(openStore(t, dsn), d.desk, sender, "w2", nil)
		cfg2.NotifyApproval = d.notify
		start(t, cfg2)
		waitFor(t, "all work done", func() bool { return settled(t, st) })
		runs := runsOf(t, st)
		if len(runs) != 2 || runs[0].Status != store.RunSucceeded || runs[1].Status != store.RunSucceeded {
			t.Fatalf("runs = %+v", runs)
		}
		if d.refunds.Load() != 1 || len(d.notices()) != 1 {
			t.Errorf("%d refunds, %d notices; want 1 each", d.refunds.Load(), len(d.notices()))
		}
		if got := replies(t, st); got["q1@cust.example"] != 1 || got["q2@cust.example"] != 1 {
			t.Errorf("replies = %v", got)
		}
		first, err := st.ReplyOf(ctx, runs[0].Key)
		if err != nil || first.Text != "Done: refunded A-17" {
			t.Errorf("the first reply = %q, %v", first.Text, err)
		}
	})
}

// TestADecisionWhoseWakeWasLostAndATimeoutAreServiceWork: a denial recorded without making the
// thread's work available (a decider that died after its commit) and a call nobody decides for
// three days (a fake store clock) are both found by the approval loop: the run resumes, the
// model reads the denial or the timeout, and the refund never runs.
func TestADecisionWhoseWakeWasLostAndATimeoutAreServiceWork(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Now())
		st, err := store.Open(ctx, dsn, store.WithClock(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		d := newApprovalDesk(runtime.ApprovalRule{})
		sender := &memSender{}
		start(t, config(st, d.desk, sender, "w1", nil))
		svc, _ := start(t, config(st, d.desk, sender, "w2", nil)) // a second replica
		for _, id := range []string{"deny@cust.example", "late@cust.example"} {
			if _, err := svc.Deliver(ctx, bytes.NewReader(email(id, "", "Refund "+id, "Please refund my order.")), Envelope{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "both runs to wait", func() bool {
			r := runsOf(t, st)
			return len(r) == 2 && r[0].Status == store.RunWaiting && r[1].Status == store.RunWaiting
		})
		runs := runsOf(t, st)
		deny := runs[0]
		if m, _ := st.MessageBySeq(ctx, deny.MessageSeq); m.MessageID != "deny@cust.example" {
			deny = runs[1]
		}
		if _, err := st.DB().ExecContext(ctx, st.DB().Rebind(`UPDATE run_approvals SET status = 'denied', decided_by = 'ann',
			decided_at = expires_at, note = 'not eligible' WHERE run_id = ?`), deny.ID); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the denied run to finish", func() bool { r, _ := st.Run(ctx, deny.Key); return r.Status == store.RunSucceeded })
		clock.Advance(72 * time.Hour)
		waitFor(t, "all work done", func() bool { return settled(t, st) })
		for _, r := range runsOf(t, st) {
			rep, err := st.ReplyOf(ctx, r.Key)
			if err != nil {
				t.Fatalf("run %s has no reply: %v", r.Key, err)
			}
			want := "Done: [expired] This call of refund needed a person's approval, and no decision came within 3 days, so it did not run."
			if r.Key == deny.Key {
				want = "Done: [denied] A person reviewed this call of refund and denied it, so it did not run. The reason given: not eligible"
			}
			if rep.Text != want {
				t.Errorf("reply = %q\nwant    %q", rep.Text, want)
			}
		}
		if d.refunds.Load() != 0 {
			t.Errorf("%d refunds ran, want 0", d.refunds.Load())
		}
		if n := len(sender.counts()); n != 2 {
			t.Errorf("sent %v, want two replies", sender.counts())
		}
	})
}
