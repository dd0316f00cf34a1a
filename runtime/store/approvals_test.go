package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// approvalTurn is turn 0 of run with a lookup and a refund call, the refund waiting for approval
// for timeout (0: the default).
func approvalTurn(run Run, timeout time.Duration, onTimeout runtime.TimeoutAction) Turn {
	return Turn{RunID: run.ID, TurnIndex: 0, Text: "Checking, then refunding.",
		ToolCalls: []chat.ToolCall{
			{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"INV-1"}`)},
			{ID: "c2", Name: "refund", Input: json.RawMessage(`{ "amount" : 120, "note": "<late>" }`)},
		},
		StopReason: "tool_use",
		ApprovalRequests: []ApprovalRequest{{Position: 1, Input: json.RawMessage(`{"amount":120,"note":"<late>","currency":""}`),
			Timeout: timeout, OnTimeout: onTimeout}},
	}
}

// waitingReply stores a message, starts its run under "w1", records the approval turn and
// pauses the run; it returns the run as stored and the message's seq.
func waitingReply(t *testing.T, s *Store, thread string, timeout time.Duration, onTimeout runtime.TimeoutAction) (Run, int64) {
	t.Helper()
	ctx := context.Background()
	seq := mustAppend(t, s, msg(thread, thread+"-m1", baseTime))
	run := startReply(t, s, "p", thread, seq)
	if out, err := s.StartTurn(ctx, "w1", approvalTurn(run, timeout, onTimeout)); err != nil || out != Stored {
		t.Fatalf("StartTurn = %v, %v", out, err)
	}
	waiting, err := s.WaitRun(ctx, run.Key, "w1")
	if err != nil {
		t.Fatalf("WaitRun: %v", err)
	}
	return waiting, seq
}

// TestApprovalWaitsIsDecidedAndResumesOnce walks a call through waiting, approval and resume:
// the approval is recorded with the turn, with the arguments byte for byte and the decoded
// input; the paused run holds no lease but keeps its thread; deciding twice the same way is
// harmless and the other way an error; the decision makes the thread's work available; one of
// two resumers wins; the approved call starts once.
func TestApprovalWaitsIsDecidedAndResumesOnce(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run, seq := waitingReply(t, s, "t1", 0, "")
		now := dbNow(clock.Now())
		if run.Status != RunWaiting || run.Lease.Holder != "" || !run.Lease.Expires.Equal(now) || run.Reason != "waiting for approval" {
			t.Fatalf("paused run = %+v", run)
		}
		turns, err := s.Turns(ctx, run.ID)
		if err != nil || len(turns) != 1 || len(turns[0].Approvals) != 1 {
			t.Fatalf("Turns = %+v, %v", turns, err)
		}
		a := turns[0].Approvals[0]
		want := Approval{ID: a.ID, RunID: run.ID, RunKey: run.Key, RunKind: RunReply, RunStatus: RunWaiting, Persona: "p",
			ThreadID: "t1", MessageSeq: seq, TurnIndex: 0, Position: 1, CallID: "c2", ToolName: "refund",
			Arguments: `{ "amount" : 120, "note": "<late>" }`, Input: `{"amount":120,"note":"<late>","currency":""}`,
			Status: ApprovalWaiting, OnTimeout: runtime.TimeoutDeny, RequestedAt: now, ExpiresAt: now.Add(72 * time.Hour)}
		if a != want {
			t.Fatalf("approval =\n%+v\nwant\n%+v", a, want)
		}

		// The thread stays the run's; nobody holds it; nothing finishes it before it resumes.
		next := mustAppend(t, s, msg("t1", "t1-m2", baseTime.Add(time.Hour)))
		_, _, err = s.StartRun(ctx, NewRun{Key: "p/t1/next", Kind: RunReply, Persona: "p", ThreadID: "t1", MessageSeq: next, Holder: "w2"})
		var busy *BusyError
		if !errors.As(err, &busy) || busy.Running.Key != run.Key || busy.Resumable {
			t.Fatalf("StartRun on the waiting run's thread: %v", err)
		}
		if msg := busy.Error(); msg != fmt.Sprintf(`store: persona "p" already has run %q waiting on thread "t1" (waiting for approval since %s)`,
			run.Key, now.Format(time.RFC3339Nano)) {
			t.Errorf("BusyError = %s", msg)
		}
		if _, err := s.RenewLease(ctx, run.Key, "w1", 0); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("RenewLease of a waiting run: %v, want ErrLeaseLost", err)
		}
		if _, err := s.FinishRun(ctx, run.Key, "w1", Finish{Status: RunSucceeded}); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("FinishRun of a waiting run: %v, want ErrLeaseLost", err)
		}
		_, err = s.ResumeWaiting(ctx, run.Key, "w2", 0)
		var we *WaitingError
		if !errors.As(err, &we) || !errors.Is(err, ErrWaiting) || len(we.Pending) != 1 || !we.Until.Equal(want.ExpiresAt) {
			t.Fatalf("ResumeWaiting before the decision: %v", err)
		}
		if got, want := we.Error(), fmt.Sprintf(`store: run %q waits for approval of refund (call c2) until %s at the latest`,
			run.Key, want.ExpiresAt.Format(time.RFC3339Nano)); got != want {
			t.Errorf("WaitingError = %s\nwant          %s", got, want)
		}
		if due, err := s.DueWaits(ctx, []string{"p"}); err != nil || len(due) != 0 {
			t.Errorf("DueWaits before the decision = %+v, %v", due, err)
		}
		// A claimed thread is released until the deadline, as a service does with a waiting run.
		if _, ok, err := s.ClaimReply(ctx, ReplyClaim{Mailboxes: []string{""}, Holder: "svc"}); err != nil || !ok {
			t.Fatalf("ClaimReply: %v, %v", ok, err)
		}
		if _, err := s.ReleaseReply(ctx, "", "t1", "svc", want.ExpiresAt, "", false); err != nil {
			t.Fatal(err)
		}

		clock.Advance(30 * time.Hour)
		decided, out, err := s.Approve(ctx, run.Key, "c2", "ann@acme.example", "ok, within policy")
		if err != nil || out != Stored || decided.Status != ApprovalApproved || decided.DecidedBy != "ann@acme.example" ||
			!decided.DecidedAt.Equal(dbNow(clock.Now())) || decided.Note != "ok, within policy" {
			t.Fatalf("Approve = %+v, %v, %v", decided, out, err)
		}
		if again, out, err := s.Approve(ctx, run.Key, "c2", "bob", "me too"); err != nil || out != AlreadyStored || again.DecidedBy != "ann@acme.example" {
			t.Errorf("Approve again = %+v, %v, %v; want the first decision, already stored", again, out, err)
		}
		_, _, err = s.Deny(ctx, run.Key, "c2", "bob", "no")
		if !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), `it was approved by "ann@acme.example" at `) {
			t.Errorf("Deny after the approval: %v, want ErrConflict naming the approval", err)
		}
		// The decision made the thread's work available at once, and the run resumable.
		pending, err := s.PendingReplies(ctx, "", 10)
		if err != nil || len(pending) != 1 || !pending[0].AvailableAt.IsZero() {
			t.Errorf("pending work after the decision = %+v, %v; want available at once", pending, err)
		}
		if due, err := s.DueWaits(ctx, []string{"p", "q"}); err != nil || len(due) != 1 || due[0].Key != run.Key {
			t.Errorf("DueWaits after the decision = %+v, %v", due, err)
		}

		var wg sync.WaitGroup
		errs := make([]error, 4)
		for i := range errs {
			wg.Go(func() { _, errs[i] = s.ResumeWaiting(ctx, run.Key, fmt.Sprintf("r%d", i), time.Minute) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrLeaseHeld):
				t.Errorf("losing resumer: %v, want ErrLeaseHeld", err)
			}
		}
		resumed, err := s.Run(ctx, run.Key)
		if won != 1 || err != nil || resumed.Status != RunRunning || resumed.Attempt != 2 || resumed.Faults != 0 || resumed.Reason != "" {
			t.Fatalf("%d resumers won; run = %+v, %v", won, resumed, err)
		}
		holder := resumed.Lease.Holder
		if err := s.StartApprovedCall(ctx, "w1", run.ID, 0, 1); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("StartApprovedCall by the old holder: %v, want ErrLeaseLost", err)
		}
		if err := s.StartApprovedCall(ctx, holder, run.ID, 0, 0); !errors.Is(err, ErrConflict) {
			t.Errorf("StartApprovedCall of a call that needs no approval: %v, want ErrConflict", err)
		}
		if err := s.StartApprovedCall(ctx, holder, run.ID, 0, 1); err != nil {
			t.Fatal(err)
		}
		if err := s.StartApprovedCall(ctx, holder, run.ID, 0, 1); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "was started at") {
			t.Errorf("StartApprovedCall twice: %v, want ErrConflict", err)
		}
		list, err := s.ApprovalsOf(ctx, run.ID, 0)
		if err != nil || len(list) != 1 || !list[0].StartedAt.Equal(dbNow(clock.Now())) || list[0].RunStatus != RunRunning {
			t.Errorf("ApprovalsOf after the start = %+v, %v", list, err)
		}
	}, WithClock(clock.Now))
}

// TestApprovalExpiresAtItsDeadline: a call nobody decides reads as expired once its deadline
// passed (three days of a fake clock), cannot be decided any more, and leaves its run resumable;
// an expired call whose rule approves at the timeout starts like an approved one.
func TestApprovalExpiresAtItsDeadline(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		denyRun, _ := waitingReply(t, s, "t1", 0, "")
		approveRun, _ := waitingReply(t, s, "t2", 48*time.Hour, runtime.TimeoutApprove)
		if list, err := s.Approvals(ctx, ApprovalQuery{Status: ApprovalWaiting}); err != nil || len(list) != 2 {
			t.Fatalf("waiting approvals = %+v, %v", list, err)
		}

		clock.Advance(48 * time.Hour)
		if due, err := s.DueWaits(ctx, []string{"p"}); err != nil || len(due) != 1 || due[0].Key != approveRun.Key {
			t.Fatalf("DueWaits after two days = %+v, %v; want the run whose call timed out", due, err)
		}
		clock.Advance(24*time.Hour + time.Microsecond)
		waiting, err := s.Approvals(ctx, ApprovalQuery{Status: ApprovalWaiting})
		if err != nil || len(waiting) != 0 {
			t.Errorf("waiting approvals after three days = %+v, %v", waiting, err)
		}
		expired, err := s.Approvals(ctx, ApprovalQuery{Status: ApprovalExpired})
		if err != nil || len(expired) != 2 || expired[0].RunKey != denyRun.Key || !expired[0].DecidedAt.Equal(expired[0].ExpiresAt) ||
			expired[0].Timeout() != 72*time.Hour || expired[1].Timeout() != 48*time.Hour {
			t.Fatalf("expired approvals = %+v, %v", expired, err)
		}
		_, _, err = s.Approve(ctx, denyRun.Key, "c2", "ann", "")
		if !errors.Is(err, ErrConflict) || !strings.HasSuffix(err.Error(), "it expired at "+expired[0].ExpiresAt.Format(time.RFC3339Nano)+
			": no decision came within 72h0m0s") {
			t.Errorf("Approve after the deadline: %v", err)
		}
		for _, r := range []Run{denyRun, approveRun} {
			resumed, err := s.ResumeWaiting(ctx, r.Key, "w2", 0)
			if err != nil || resumed.Status != RunRunning {
				t.Fatalf("ResumeWaiting %s = %+v, %v", r.Key, resumed, err)
			}
		}
		if n := countRows(t, s, "run_approvals", "status = 'expired' AND notice_at IS NULL"); n != 2 {
			t.Errorf("%d approvals recorded expired, want 2", n)
		}
		if err := s.StartApprovedCall(ctx, "w2", denyRun.ID, 0, 1); !errors.Is(err, ErrConflict) {
			t.Errorf("StartApprovedCall of a call that expired denied: %v, want ErrConflict", err)
		}
		if err := s.StartApprovedCall(ctx, "w2", approveRun.ID, 0, 1); err != nil {
			t.Errorf("StartApprovedCall of a call that expired approved: %v", err)
		}
	}, WithClock(clock.Now))
}

// TestWaitRunGoesOnWhenEveryCallIsDecided: a decision that comes before the run pauses leaves
// nothing to wait for; WaitRun says so and the run stays running under its holder.
func TestWaitRunGoesOnWhenEveryCallIsDecided(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t1", "m1", baseTime))
		run := startReply(t, s, "p", "t1", seq)
		if _, err := s.StartTurn(ctx, "w1", approvalTurn(run, 0, "")); err != nil {
			t.Fatal(err)
		}
		if _, out, err := s.Deny(ctx, run.Key, "c2", "ann", "not eligible"); err != nil || out != Stored {
			t.Fatalf("Deny = %v, %v", out, err)
		}
		if _, err := s.WaitRun(ctx, run.Key, "w1"); !errors.Is(err, ErrNotWaiting) {
			t.Errorf("WaitRun after the decision: %v, want ErrNotWaiting", err)
		}
		if _, err := s.WaitRun(ctx, run.Key, "w2"); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("WaitRun by another holder: %v, want ErrLeaseLost", err)
		}
		if r, err := s.Run(ctx, run.Key); err != nil || r.Status != RunRunning || r.Lease.Holder != "w1" {
			t.Errorf("run = %+v, %v", r, err)
		}
	})
}

// TestRacingDecisionsHaveOneWinner: eight deciders on their own connections approve and deny
// one call at once; exactly one decision is stored, the others read it back as already stored
// (the same decision) or as a conflict (the other one).
func TestRacingDecisionsHaveOneWinner(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			dsn := migratedDSN(t, d)
			s := openMigrated(t, dsn)
			run, _ := waitingReply(t, s, "t1", 0, "")
			var wg sync.WaitGroup
			outs := make([]Outcome, 8)
			errs := make([]error, 8)
			for i := range 8 {
				other := openMigrated(t, dsn)
				wg.Go(func() {
					decide := other.Approve
					if i%2 == 1 {
						decide = other.Deny
					}
					_, outs[i], errs[i] = decide(ctx, run.Key, "c2", fmt.Sprintf("op%d", i), "")
				})
			}
			wg.Wait()
			final, err := s.Approvals(ctx, ApprovalQuery{RunKey: run.Key})
			if err != nil || len(final) != 1 {
				t.Fatal(final, err)
			}
			stored := 0
			for i := range 8 {
				approves := i%2 == 0
				same := approves == (final[0].Status == ApprovalApproved)
				switch {
				case errs[i] == nil && outs[i] == Stored:
					stored++
					if final[0].DecidedBy != fmt.Sprintf("op%d", i) {
						t.Errorf("decider %d stored, but the decision is %q's", i, final[0].DecidedBy)
					}
				case errs[i] == nil && outs[i] == AlreadyStored && same:
				case errors.Is(errs[i], ErrConflict) && !same:
				default:
					t.Errorf("decider %d (approve %v) = %v, %v; decision %s", i, approves, outs[i], errs[i], final[0].Status)
				}
			}
			if stored != 1 {
				t.Errorf("%d decisions stored, want 1", stored)
			}
		})
	}
}

// TestDecideRefusesBadInputAndUndecidableCalls names the field or the reason for each refusal.
func TestDecideRefusesBadInputAndUndecidableCalls(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run, _ := waitingReply(t, s, "t1", 0, "")
		for _, c := range []struct {
			name, key, call, by, note string
			status                    ApprovalStatus
			want                      error
			text                      string
		}{
			{"no decider", run.Key, "c2", "", "", ApprovalApproved, ErrInvalid, "decider (by) is empty"},
			{"a long note", run.Key, "c2", "ann", strings.Repeat("x", MaxApprovalNoteBytes+1), ApprovalDenied, ErrInvalid, "note has 4097 bytes"},
			{"a note of bad UTF-8", run.Key, "c2", "ann", "\xff", ApprovalDenied, ErrInvalid, "note is not valid UTF-8"},
			{"no decision", run.Key, "c2", "ann", "", ApprovalExpired, ErrInvalid, `decision "expired"`},
			{"no call id", run.Key, "", "ann", "", ApprovalApproved, ErrInvalid, "call id is empty"},
			{"a call that needed no approval", run.Key, "c1", "ann", "", ApprovalApproved, ErrApprovalNotFound, ""},
			{"an unknown run", "nope", "c2", "ann", "", ApprovalApproved, ErrRunNotFound, ""},
		} {
			t.Run(c.name, func(t *testing.T) {
				_, _, err := s.Decide(ctx, c.key, c.call, c.status, c.by, c.note)
				if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
					t.Errorf("Decide = %v, want %v saying %q", err, c.want, c.text)
				}
			})
		}
		// A run that ended while its call waited (an operator abandoned it) cannot be decided for.
		if _, err := s.db.Exec(s.dialect.rebind(`UPDATE runs SET status = 'abandoned' WHERE id = ?`), run.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Approve(ctx, run.Key, "c2", "ann", ""); !errors.Is(err, ErrRunFinished) {
			t.Errorf("Approve for an abandoned run: %v, want ErrRunFinished", err)
		}
		if list, err := s.Approvals(ctx, ApprovalQuery{Status: ApprovalWaiting}); err != nil || len(list) != 0 {
			t.Errorf("waiting approvals of an abandoned run are listed: %+v, %v", list, err)
		}
	})
}

// TestStartTurnRefusesBadApprovalRequests before writing the turn.
func TestStartTurnRefusesBadApprovalRequests(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run := startReply(t, s, "p", "t1", mustAppend(t, s, msg("t1", "m1", baseTime)))
		for _, c := range []struct {
			name string
			req  ApprovalRequest
			text string
		}{
			{"a position outside the calls", ApprovalRequest{Position: 2}, "approval of call 2: no such call (the turn has 2)"},
			{"a short timeout", ApprovalRequest{Position: 1, Timeout: time.Second}, "timeout 1s (want 0 or 1m0s to 2160h0m0s)"},
			{"an unknown action", ApprovalRequest{Position: 1, OnTimeout: "retry"}, `on-timeout action "retry"`},
			{"an input of bad UTF-8", ApprovalRequest{Position: 1, Input: json.RawMessage("\"\xff\"")}, "decoded input is not valid UTF-8"},
		} {
			t.Run(c.name, func(t *testing.T) {
				turn := approvalTurn(run, 0, "")
				turn.ApprovalRequests = []ApprovalRequest{c.req}
				if _, err := s.StartTurn(ctx, "w1", turn); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.text) {
					t.Errorf("StartTurn = %v, want ErrInvalid saying %q", err, c.text)
				}
			})
		}
		turn := approvalTurn(run, 0, "")
		turn.ApprovalRequests = append(turn.ApprovalRequests, turn.ApprovalRequests[0])
		if _, err := s.StartTurn(ctx, "w1", turn); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "requested twice") {
			t.Errorf("StartTurn with a call requested twice: %v", err)
		}
		if n := countRows(t, s, "run_turns", ""); n != 0 {
			t.Errorf("%d turns written by refused calls", n)
		}
		// A retry of a recorded turn writes no second approval.
		good := approvalTurn(run, 0, "")
		for _, want := range []Outcome{Stored, AlreadyStored} {
			if out, err := s.StartTurn(ctx, "w1", good); err != nil || out != want {
				t.Errorf("StartTurn = %v, %v; want %v", out, err, want)
			}
		}
		if n := countRows(t, s, "run_approvals", ""); n != 1 {
			t.Errorf("%d approvals after a retried StartTurn, want 1", n)
		}
	})
}

// TestApprovalNoticesAreClaimedOnceAndRetried: a waiting call's notice is due at once, claimed
// by one claimer, due again after its lease or at the retry time, and gone once sent or once
// the call is decided.
func TestApprovalNoticesAreClaimedOnceAndRetried(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run, _ := waitingReply(t, s, "t1", 0, "")
		other, _ := waitingReply(t, s, "t2", 0, "")
		a, ok, err := s.ClaimApprovalNotice(ctx, []string{"p"}, time.Minute)
		if err != nil || !ok || a.RunKey != run.Key || a.CallID != "c2" {
			t.Fatalf("first claim = %+v, %v, %v", a, ok, err)
		}
		b, ok, err := s.ClaimApprovalNotice(ctx, []string{"p"}, time.Minute)
		if err != nil || !ok || b.RunKey != other.Key {
			t.Fatalf("second claim = %+v, %v, %v; want the other run's", b, ok, err)
		}
		if _, ok, err := s.ClaimApprovalNotice(ctx, []string{"p"}, time.Minute); err != nil || ok {
			t.Fatalf("third claim = %v, %v; want none due", ok, err)
		}
		if _, ok, _ := s.ClaimApprovalNotice(ctx, []string{"q"}, time.Minute); ok {
			t.Error("a notice of another persona was claimed")
		}
		if err := s.SettleApprovalNotice(ctx, a.ID, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := s.SettleApprovalNotice(ctx, b.ID, clock.Now().Add(10*time.Minute)); err != nil {
			t.Fatal(err)
		}
		clock.Advance(5 * time.Minute)
		if _, ok, _ := s.ClaimApprovalNotice(ctx, []string{"p"}, time.Minute); ok {
			t.Error("a notice was claimed before its retry time")
		}
		clock.Advance(5 * time.Minute)
		if c, ok, err := s.ClaimApprovalNotice(ctx, []string{"p"}, time.Minute); err != nil || !ok || c.ID != b.ID {
			t.Errorf("claim at the retry time = %+v, %v, %v", c, ok, err)
		}
		clock.Advance(time.Minute) // the claim's lease ran out, but the call is decided meanwhile
		if _, _, err := s.Deny(ctx, other.Key, "c2", "ann", ""); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.ClaimApprovalNotice(ctx, []string{"p"}, time.Minute); ok {
			t.Error("the notice of a decided call was claimed")
		}
		if _, _, err := s.ClaimApprovalNotice(ctx, []string{"p"}, 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("a claim without a lease: %v, want ErrInvalid", err)
		}
	}, WithClock(clock.Now))
}

// TestWaitingFireKeepsItsResponsibility: a scheduled run that waits keeps its responsibility
// (the next fire is busy), and the scheduler's sweep of running fires does not see it.
func TestWaitingFireKeepsItsResponsibility(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run := startScheduled(t, s, "p", "digest")
		if _, err := s.StartTurn(ctx, "w1", approvalTurn(run, 0, "")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.WaitRun(ctx, run.Key, "w1"); err != nil {
			t.Fatal(err)
		}
		later := fireAt.Add(24 * time.Hour)
		_, _, err := s.StartRun(ctx, NewRun{Key: "p/digest/next", Kind: RunScheduled, Persona: "p", Responsibility: "digest",
			FireAt: later, Holder: "w2"})
		var busy *BusyError
		if !errors.As(err, &busy) || busy.Running.Status != RunWaiting {
			t.Errorf("the next fire of a waiting responsibility: %v, want a *BusyError naming the waiting run", err)
		}
		if running, err := s.RunningFires(ctx, []string{"p"}); err != nil || len(running) != 0 {
			t.Errorf("RunningFires = %+v, %v; want no waiting run", running, err)
		}
		if _, _, err := s.Approve(ctx, run.Key, "c2", "ann", ""); err != nil {
			t.Fatal(err)
		}
		if due, err := s.DueWaits(ctx, []string{"p"}); err != nil || len(due) != 1 || due[0].Kind != RunScheduled {
			t.Errorf("DueWaits = %+v, %v", due, err)
		}
	})
}

// TestDueWaitsReadsOnlyWaitingRuns: DueWaits reads the waiting runs through their index, never
// the status trail, and each one's approvals through their key.
func TestDueWaitsReadsOnlyWaitingRuns(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for i := range 100 { // a trail not to scan
			seq := mustAppend(t, s, msg(fmt.Sprintf("done-%d", i), fmt.Sprintf("done-%d", i), baseTime))
			run := startReply(t, s, "p", fmt.Sprintf("done-%d", i), seq)
			if _, err := s.FinishRun(ctx, run.Key, "w1", Finish{Status: RunSucceeded}); err != nil {
				t.Fatal(err)
			}
		}
		run, _ := waitingReply(t, s, "t1", 0, "")
		if _, _, err := s.Approve(ctx, run.Key, "c2", "ann", ""); err != nil {
			t.Fatal(err)
		}
		plan := explain(t, s, s.dueWaitsQuery(1), "p", s.dialect.timeArg(time.Now()))
		var runsStep *planStep
		for i, st := range plan.Steps {
			if st.Table == "runs" {
				runsStep = &plan.Steps[i]
			}
		}
		if runsStep == nil || runsStep.Index != "runs_waiting" || runsStep.Rows > 1 || plan.Sorts {
			t.Errorf("DueWaits does not read just the waiting runs through runs_waiting:\n%s", plan.Raw)
		}
		approvals := 0
		for _, st := range plan.Steps {
			if st.Table == "a" {
				approvals++
				if st.Index != "run_approvals_run" {
					t.Errorf("DueWaits reads the approvals through %q, not the run's:\n%s", st.Index, plan.Raw)
				}
			}
		}
		if approvals != 1 {
			t.Errorf("DueWaits reads the approvals %d times:\n%s", approvals, plan.Raw)
		}
	})
}

// TestCountWaitingApprovalsCountsWhatCanStillBeDecided: the count is Approvals' waiting list's
// length: a decided call and one past its deadline drop out; ListRuns lists the waiting runs
// by their status.
func TestCountWaitingApprovalsCountsWhatCanStillBeDecided(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		count := func(want int64) {
			t.Helper()
			n, err := s.CountWaitingApprovals(ctx)
			list, lerr := s.Approvals(ctx, ApprovalQuery{Status: ApprovalWaiting})
			if err != nil || lerr != nil || n != want || int64(len(list)) != want {
				t.Errorf("CountWaitingApprovals = %d, %v; Approvals lists %d, %v; want %d", n, err, len(list), lerr, want)
			}
		}
		count(0)
		first, _ := waitingReply(t, s, "t1", 0, "")
		waitingReply(t, s, "t2", 48*time.Hour, "")
		waitingReply(t, s, "t3", 0, "")
		count(3)
		if _, _, err := s.Deny(ctx, first.Key, "c2", "ann", "no"); err != nil {
			t.Fatal(err)
		}
		count(2)
		runs, err := s.ListRuns(ctx, RunFilter{Status: RunWaiting})
		if err != nil || len(runs) != 3 {
			t.Errorf("ListRuns of the waiting runs = %d runs, %v; want 3 (a decided run waits until it is resumed)", len(runs), err)
		}
		clock.Advance(48*time.Hour + time.Microsecond)
		count(1)
	}, WithClock(clock.Now))
}
