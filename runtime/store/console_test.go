package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// setActivity sets a thread's last activity (which the trigger takes from the database's clock).
func setActivity(t *testing.T, s *Store, thread string, at time.Time) {
	t.Helper()
	if _, err := s.db.Exec(s.dialect.rebind(`UPDATE thread_activity SET last_at = ? WHERE thread_id = ?`), s.dialect.timeArg(at), thread); err != nil {
		t.Fatal(err)
	}
}

func threadIDs(ts []ThreadSummary) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ThreadID)
	}
	return out
}

// The trigger keeps one activity row per thread: its mailbox, first and newest seq, its size.
func TestThreadActivityFollowsEveryAppend(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		first := mustAppend(t, s, withMailbox(msg("support/a", "a1@x", baseTime), "support"))
		mustAppend(t, s, withMailbox(msg("support/b", "b1@x", baseTime), "support"))
		last := mustAppend(t, s, withMailbox(msg("support/a", "a2@x", baseTime), "support"))
		if _, err := s.AppendMessage(ctx, withMailbox(msg("support/a", "a2@x", baseTime), "support")); err != nil { // a redelivery
			t.Fatal(err)
		}
		sum, err := s.ThreadSummaryOf(ctx, "support/a")
		if err != nil {
			t.Fatal(err)
		}
		if sum.Mailbox != "support" || sum.FirstSeq != first || sum.LastSeq != last || sum.Messages != 2 || sum.Subject != "Re: a1@x" ||
			sum.From != "ana@example.com" || !slices.Equal(sum.To, []string{"agent@example.com"}) || sum.LastActivity.IsZero() {
			t.Errorf("summary = %+v", sum)
		}
		if err := s.DeleteThread(ctx, "support/a"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ThreadSummaryOf(ctx, "support/a"); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("summary of a deleted thread: %v", err)
		}
		if n := countRows(t, s, "thread_activity", ""); n != 1 {
			t.Errorf("%d activity rows, want 1", n)
		}
	})
}

func TestThreadsListNewestActivityFirstWithTheirState(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seqs := map[string]int64{}
		for _, th := range []string{"pending", "failed", "running", "answered", "skipped"} {
			seqs[th] = mustAppend(t, s, withMailbox(msg("support/"+th, th+"@x", baseTime), "support"))
		}
		quiet := withMailbox(msg("sales/quiet", "quiet@x", baseTime), "sales")
		quiet.Direction = history.Outbound
		mustAppend(t, s, quiet)
		for _, th := range []string{"failed", "running", "answered", "skipped"} {
			startReply(t, s, "support", "support/"+th, seqs[th])
			if _, err := s.CompleteReply(ctx, "support", "support/"+th, seqs[th], ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.db.Exec(`DELETE FROM pending_replies WHERE thread_id <> 'support/pending'`); err != nil {
			t.Fatal(err)
		}
		finish(t, s, fmt.Sprintf("support/support/failed/%d", seqs["failed"]), "w1", Finish{Status: RunFailed, Reason: "no", Class: FailureHostError})
		finish(t, s, fmt.Sprintf("support/support/answered/%d", seqs["answered"]), "w1", Finish{Status: RunSucceeded})
		finish(t, s, fmt.Sprintf("support/support/skipped/%d", seqs["skipped"]), "w1", Finish{Status: RunSkipped, Reason: "bulk"})
		order := []string{"support/skipped", "sales/quiet", "support/running", "support/answered", "support/pending", "support/failed"}
		for i, th := range order {
			setActivity(t, s, th, baseTime.Add(-time.Duration(i)*time.Hour))
		}
		all, err := s.Threads(ctx, ThreadQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if got := threadIDs(all); !slices.Equal(got, order) {
			t.Fatalf("threads = %v, want %v", got, order)
		}
		want := map[string]ThreadState{"support/pending": ThreadPending, "support/failed": ThreadFailed, "support/running": ThreadRunning,
			"support/answered": ThreadAnswered, "support/skipped": ThreadNotAnswered, "sales/quiet": ThreadQuiet}
		for _, th := range all {
			if th.State != want[th.ThreadID] {
				t.Errorf("%s: state %s, want %s", th.ThreadID, th.State, want[th.ThreadID])
			}
			if !th.LastActivity.Equal(baseTime.Add(-time.Duration(slices.Index(order, th.ThreadID)) * time.Hour)) {
				t.Errorf("%s: last activity %v", th.ThreadID, th.LastActivity)
			}
		}
		if f := all[5]; f.LastRun == nil || f.LastRun.FailureClass != FailureHostError || f.LastRun.Status != RunFailed {
			t.Errorf("failed thread's last run = %+v", f.LastRun)
		}
		// Pages of two follow each other without a gap or a repeat; a tie in activity is broken
		// by thread id.
		setActivity(t, s, "support/answered", baseTime.Add(-2*time.Hour))
		var paged []string
		var after ThreadCursor
		for range 4 {
			page, err := s.Threads(ctx, ThreadQuery{After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, threadIDs(page)...)
			after = page[len(page)-1].Cursor()
		}
		wantPaged := []string{"support/skipped", "sales/quiet", "support/running", "support/answered", "support/pending", "support/failed"}
		if !slices.Equal(paged, wantPaged) {
			t.Errorf("paged = %v, want %v", paged, wantPaged)
		}
		sales, err := s.Threads(ctx, ThreadQuery{Mailbox: "sales"})
		if err != nil || !slices.Equal(threadIDs(sales), []string{"sales/quiet"}) {
			t.Errorf("sales threads = %v, %v", threadIDs(sales), err)
		}
		for _, bad := range []int{-1, MaxListLimit + 1} {
			if _, err := s.Threads(ctx, ThreadQuery{Limit: bad}); !errors.Is(err, ErrInvalid) {
				t.Errorf("limit %d: %v, want ErrInvalid", bad, err)
			}
		}
	})
}

func TestThreadDetailHoldsMessagesRoundsRunsAndSends(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		in := mustAppend(t, s, withMailbox(msg("support/t", "q@x", baseTime), "support"))
		run := startReply(t, s, "support", "support/t", in)
		if _, err := s.RecordRound(ctx, Round{Owner: Owner{Type: OwnerMessage, ID: in}, Persona: "support", RunID: run.Key, TurnIndex: 0,
			Calls:   []chat.ToolCall{{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"n":"INV-1"}`)}, {ID: "c2", Name: "escalate", Input: json.RawMessage(`{}`)}},
			Results: []Result{{Content: `{"status":"paid"}`, Succeeded: true}, {Content: "boom", Succeeded: false}}}); err != nil {
			t.Fatal(err)
		}
		reply := withMailbox(msg("support/t", "r@acme", baseTime.Add(time.Minute)), "support")
		reply.Direction, reply.RunKey = history.Outbound, run.Key
		rseq := mustAppend(t, s, reply)
		finish(t, s, run.Key, "w1", Finish{Status: RunSucceeded})
		if _, err := s.CompleteReply(ctx, "support", "support/t", in, ""); err != nil {
			t.Fatal(err)
		}
		d, err := s.ThreadDetailOf(ctx, "support/t", 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Messages) != 2 || d.Omitted != 0 || d.Messages[0].Seq != in || d.Messages[1].Seq != rseq {
			t.Fatalf("messages = %+v", d.Messages)
		}
		uses := d.Messages[0].ToolUses
		if len(uses) != 2 || uses[0].ToolName != "lookup_order" || uses[0].Result != `{"status":"paid"}` || !uses[0].Succeeded ||
			uses[1].ToolName != "escalate" || uses[1].Succeeded {
			t.Errorf("tool uses = %+v", uses)
		}
		if len(d.Runs) != 1 || d.Runs[0].Key != run.Key || d.Runs[0].Status != RunSucceeded {
			t.Errorf("runs = %+v", d.Runs)
		}
		if st, ok := d.Sends[rseq]; !ok || st.Status != "unsent" {
			t.Errorf("sends = %+v", d.Sends)
		}
		if d.Summary.State != ThreadAnswered || d.Summary.Messages != 2 {
			t.Errorf("summary = %+v", d.Summary)
		}
		d, err = s.ThreadDetailOf(ctx, "support/t", 1)
		if err != nil || len(d.Messages) != 1 || d.Messages[0].Seq != rseq || d.Omitted != 1 {
			t.Errorf("the newest message only: %+v, %v", d.Messages, err)
		}
		if _, err := s.ThreadDetailOf(ctx, "support/none", 0); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("unknown thread: %v", err)
		}
	})
}

func TestListRunsFiltersAndPages(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		start := clock.Now()
		var keys []string
		for i, c := range []struct {
			persona string
			f       Finish
		}{
			{"support", Finish{Status: RunFailed, Reason: "x", Class: FailureHostError}},
			{"support", Finish{Status: RunSucceeded}},
			{"research", Finish{Status: RunFailed, Reason: "x", Class: FailureMaxTurns}},
			{"support", Finish{}}, // left running
			{"research", Finish{Status: RunFailed, Reason: "y", Class: FailureHostError}},
		} {
			r, _, err := s.StartRun(ctx, NewRun{Key: fmt.Sprintf("k%d", i), Kind: RunScheduled, Persona: c.persona, Responsibility: "r" + itoa(i),
				FireAt: fireAt, Holder: "w1"})
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, r.Key)
			if c.f.Status != "" {
				finish(t, s, r.Key, "w1", c.f)
			}
			clock.Advance(time.Minute)
		}
		runKeys := func(rs []Run) []string {
			var out []string
			for _, r := range rs {
				out = append(out, r.Key)
			}
			return out
		}
		for _, c := range []struct {
			name string
			f    RunFilter
			want []string
		}{
			{"all, newest first", RunFilter{}, []string{"k4", "k3", "k2", "k1", "k0"}},
			{"failed", RunFilter{Status: RunFailed}, []string{"k4", "k2", "k0"}},
			{"host errors", RunFilter{Class: FailureHostError}, []string{"k4", "k0"}},
			{"host errors of support", RunFilter{Class: FailureHostError, Persona: "support"}, []string{"k0"}},
			{"running", RunFilter{Status: RunRunning}, []string{"k3"}},
			{"research", RunFilter{Persona: "research"}, []string{"k4", "k2"}},
			{"since the third", RunFilter{Since: start.Add(2 * time.Minute)}, []string{"k4", "k3", "k2"}},
			{"failed since the second", RunFilter{Status: RunFailed, Since: start.Add(time.Minute)}, []string{"k4", "k2"}},
			{"reply runs", RunFilter{Kind: RunReply}, nil},
			{"two", RunFilter{Limit: 2}, []string{"k4", "k3"}},
		} {
			got, err := s.ListRuns(ctx, c.f)
			if err != nil || !slices.Equal(runKeys(got), c.want) {
				t.Errorf("%s: %v, %v; want %v", c.name, runKeys(got), err, c.want)
			}
		}
		var paged []string
		var after RunCursor
		for range 5 {
			page, err := s.ListRuns(ctx, RunFilter{After: after, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, runKeys(page)...)
			after = page[len(page)-1].Cursor()
		}
		if !slices.Equal(paged, []string{"k4", "k3", "k2", "k1", "k0"}) {
			t.Errorf("paged = %v", paged)
		}
		for _, bad := range []RunFilter{{Status: "done"}, {Class: "oops"}, {Kind: "other"}, {Limit: -1}, {Limit: MaxListLimit + 1}} {
			if _, err := s.ListRuns(ctx, bad); !errors.Is(err, ErrInvalid) {
				t.Errorf("%+v: %v, want ErrInvalid", bad, err)
			}
		}
		hours, err := s.RunsPerHour(ctx, start.Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		hour := start.Truncate(time.Hour)
		wantHours := []RunCount{{Hour: hour, Status: RunRunning, Runs: 1}, {Hour: hour, Status: RunSucceeded, Runs: 1}, {Hour: hour, Status: RunFailed, Runs: 3}}
		if !slices.Equal(hours, wantHours) {
			t.Errorf("runs per hour = %+v, want %+v", hours, wantHours)
		}
		if n, err := s.CountRunning(ctx); err != nil || n != 1 {
			t.Errorf("running = %d, %v", n, err)
		}
	}, WithClock(clock.Now))
}

func TestUsagePerDaySumsFinishedRuns(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			clock := storetest.NewClock(time.Date(2024, 5, 6, 23, 30, 0, 0, time.UTC))
			testUsagePerDay(t, newTestStore(t, d, WithClock(clock.Now)), clock)
		})
	}
}

func testUsagePerDay(t *testing.T, s *Store, clock *storetest.Clock) {
	{
		ctx := context.Background()
		for i, u := range []chat.Usage{{InputTokens: 100, OutputTokens: 10, CacheReadTokens: 50}, {InputTokens: 7, CacheWriteTokens: 3}, {InputTokens: 1000, OutputTokens: 1}} {
			r, _, err := s.StartRun(ctx, NewRun{Key: "u" + itoa(i), Kind: RunScheduled, Persona: "p", Responsibility: "r" + itoa(i), FireAt: fireAt, Holder: "w1"})
			if err != nil {
				t.Fatal(err)
			}
			finish(t, s, r.Key, "w1", Finish{Status: RunSucceeded, Usage: u})
			clock.Advance(20 * time.Minute) // the second and third start the next day
		}
		days, err := s.UsagePerDay(ctx, time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC))
		if err != nil {
			t.Fatal(err)
		}
		want := []DayUsage{
			{Day: time.Date(2024, 5, 6, 0, 0, 0, 0, time.UTC), Runs: 2, Usage: chat.Usage{InputTokens: 107, OutputTokens: 10, CacheReadTokens: 50, CacheWriteTokens: 3}},
			{Day: time.Date(2024, 5, 7, 0, 0, 0, 0, time.UTC), Runs: 1, Usage: chat.Usage{InputTokens: 1000, OutputTokens: 1}},
		}
		if !slices.Equal(days, want) {
			t.Errorf("usage per day = %+v, want %+v", days, want)
		}
	}
}

func TestRunTimelineSaysWhatIsKnownOfEachCall(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		in := mustAppend(t, s, withMailbox(msg("support/t", "q@x", baseTime), "support"))
		run := startReply(t, s, "support", "support/t", in)
		calls := []chat.ToolCall{{ID: "a", Name: "lookup", Input: json.RawMessage(`{}`)}, {ID: "b", Name: "refund", Input: json.RawMessage(`{"amount":5}`)}}
		for i, turn := range []Turn{
			{RunID: run.ID, TurnIndex: 0, ToolCalls: calls[:1], StopReason: "tool_use", Model: "m", Usage: chat.Usage{InputTokens: 10, OutputTokens: 2}},
			{RunID: run.ID, TurnIndex: 1, Text: "refunding", ToolCalls: calls, StopReason: "tool_use", Model: "m", Usage: chat.Usage{InputTokens: 20, OutputTokens: 3, CacheReadTokens: 8}},
		} {
			if _, err := s.StartTurn(ctx, "w1", turn); err != nil {
				t.Fatalf("turn %d: %v", i, err)
			}
		}
		if _, err := s.RecordRound(ctx, Round{Owner: Owner{Type: OwnerMessage, ID: in}, Persona: "support", RunID: run.Key, TurnIndex: 0,
			Calls: calls[:1], Results: []Result{{Content: "found", Succeeded: true}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SettleCall(ctx, "w1", run.ID, 1, CallOutcome{Position: 1, ToolCallID: "b", ToolName: "refund", Result: Result{Content: "refunded", Succeeded: true}}); err != nil {
			t.Fatal(err)
		}
		tl, err := s.RunTimeline(ctx, run.Key)
		if err != nil {
			t.Fatal(err)
		}
		if tl.Run.Key != run.Key || tl.Message == nil || tl.Message.Seq != in || tl.Reply != nil || tl.ReplyState != nil || len(tl.Turns) != 2 {
			t.Fatalf("timeline = %+v", tl)
		}
		type call struct {
			name   string
			state  CallState
			result string
		}
		var got []call
		for _, tt := range tl.Turns {
			for _, c := range tt.Calls {
				got = append(got, call{c.Call.Name, c.State, c.Result.Content})
			}
		}
		want := []call{{"lookup", CallRecorded, "found"}, {"lookup", CallUnsettled, ""}, {"refund", CallSettled, "refunded"}}
		if !slices.Equal(got, want) {
			t.Errorf("calls = %+v, want %+v", got, want)
		}
		if u := tl.Turns[1].Usage; u.CacheReadTokens != 8 || tl.Turns[1].Text != "refunding" || tl.Turns[1].StopReason != "tool_use" {
			t.Errorf("turn 1 = %+v", tl.Turns[1].Turn)
		}
		reply := withMailbox(msg("support/t", "r@acme", baseTime), "support")
		reply.Direction, reply.RunKey = history.Outbound, run.Key
		rseq := mustAppend(t, s, reply)
		tl, err = s.RunTimeline(ctx, run.Key)
		if err != nil || tl.Reply == nil || tl.Reply.Seq != rseq || tl.ReplyState == nil || tl.ReplyState.Status != "unsent" {
			t.Errorf("with its reply: %+v, %v", tl, err)
		}
		if _, err := s.RunTimeline(ctx, "nope"); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("unknown run: %v", err)
		}
	})
}

func TestFireTrailsListEachResponsibilityLatestFirst(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for i, f := range []struct{ persona, resp string }{{"research", "digest"}, {"research", "digest"}, {"research", "digest"}, {"support", "report"}, {"research", "weekly"}} {
			at := fireAt.Add(time.Duration(i) * time.Hour)
			if _, _, err := s.StartRun(ctx, NewRun{Key: fmt.Sprintf("%s/%s/%d", f.persona, f.resp, i), Kind: RunScheduled, Persona: f.persona,
				Responsibility: f.resp, FireAt: at, Status: RunSkipped, Reason: "missed"}); err != nil {
				t.Fatal(err)
			}
		}
		trails, err := s.FireTrails(ctx, "", 2)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tr := range trails {
			var keys []string
			for _, r := range tr.Fires {
				keys = append(keys, r.Key)
			}
			got = append(got, tr.Persona+"/"+tr.Responsibility+": "+strings.Join(keys, " "))
		}
		want := []string{"research/digest: research/digest/2 research/digest/1", "research/weekly: research/weekly/4", "support/report: support/report/3"}
		if !slices.Equal(got, want) {
			t.Errorf("trails = %q, want %q", got, want)
		}
		if trails, err := s.FireTrails(ctx, "support", 0); err != nil || len(trails) != 1 || trails[0].Responsibility != "report" {
			t.Errorf("support's trails = %+v, %v", trails, err)
		}
	})
}

func TestOutboxListsUnsentAndFailedAndResendIsRecorded(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		mustAppend(t, s, withMailbox(msg("support/t", "q@x", baseTime), "support"))
		var replies []int64
		for i := range 3 {
			m := withMailbox(msg("support/t", fmt.Sprintf("r%d@acme", i), baseTime), "support")
			m.Direction, m.RunKey = history.Outbound, "run-"+itoa(i)
			replies = append(replies, mustAppend(t, s, m))
		}
		// r0 sent, r1 failed for good, r2 waiting.
		if _, err := s.MarkSent(ctx, replies[0]); err != nil {
			t.Fatal(err)
		}
		seq, ok, err := s.ClaimSend(ctx, SendClaim{Mailboxes: []string{"support"}, Holder: "w1"})
		if err != nil || !ok || seq != replies[1] {
			t.Fatalf("claim = %d, %v, %v", seq, ok, err)
		}
		if _, err := s.SendFailed(ctx, replies[1], "w1", time.Time{}, "550 no such user"); err != nil {
			t.Fatal(err)
		}
		seqsOf := func(es []OutboxEntry) []int64 {
			var out []int64
			for _, e := range es {
				out = append(out, e.Seq)
			}
			return out
		}
		unsent, err := s.Outbox(ctx, OutboxQuery{Status: OutboxUnsent})
		if err != nil || !slices.Equal(seqsOf(unsent), replies[2:]) || unsent[0].RunKey != "run-2" || unsent[0].Subject != "Re: r2@acme" {
			t.Errorf("unsent = %+v, %v", unsent, err)
		}
		failed, err := s.Outbox(ctx, OutboxQuery{Status: OutboxFailed, Mailbox: "support"})
		if err != nil || !slices.Equal(seqsOf(failed), replies[1:2]) || failed[0].State.Status != "failed" || failed[0].State.LastError != "550 no such user" {
			t.Errorf("failed = %+v, %v", failed, err)
		}
		if c, err := s.CountOutbox(ctx); err != nil || c != (OutboxCounts{Unsent: 1, Failed: 1}) {
			t.Errorf("counts = %+v, %v", c, err)
		}
		for _, seq := range replies[:2] {
			if out, err := s.Resend(ctx, seq, "console:ada", "the customer asked again"); err != nil || out != Stored {
				t.Errorf("Resend(%d) = %v, %v", seq, out, err)
			}
			if out, err := s.Resend(ctx, seq, "console:ada", "twice"); err != nil || out != AlreadyStored {
				t.Errorf("second Resend(%d) = %v, %v; want AlreadyStored", seq, out, err)
			}
			if st, err := s.ReplyState(ctx, seq); err != nil || st.Status != "unsent" || !st.NextAt.IsZero() {
				t.Errorf("state after resend = %+v, %v", st, err)
			}
		}
		acts, err := s.OperatorActions(ctx, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		at := clock.Now().UTC().Truncate(time.Microsecond)
		want := []OperatorAction{
			{ID: acts[0].ID, At: at, By: "console:ada", Action: ActionResend, Target: ReplyTarget(replies[1]), Reason: "the customer asked again",
				Detail: "failed at " + at.Format(time.RFC3339Nano) + " after 1 attempts; last error: 550 no such user"},
			{ID: acts[1].ID, At: at, By: "console:ada", Action: ActionResend, Target: ReplyTarget(replies[0]), Reason: "the customer asked again",
				Detail: "sent at " + at.Format(time.RFC3339Nano) + " after 0 attempts"},
		}
		if !slices.Equal(acts, want) {
			t.Errorf("actions = %+v\nwant %+v", acts, want)
		}
		if one, err := s.OperatorActions(ctx, ReplyTarget(replies[0]), 0); err != nil || len(one) != 1 || one[0] != want[1] {
			t.Errorf("actions on reply %d = %+v, %v", replies[0], one, err)
		}
		if _, err := s.Resend(ctx, 999999, "console:ada", ""); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("resend of no reply: %v", err)
		}
		if _, err := s.Resend(ctx, replies[0], "", ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("resend without an actor: %v", err)
		}
		if _, err := s.Outbox(ctx, OutboxQuery{Status: "lost"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("unknown status: %v", err)
		}
	}, WithClock(clock.Now))
}

func TestPruneDeletesOldThreadsWithEverythingDerivedAndKeepsUnfinishedOnes(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		cutoff := baseTime
		add := func(thread, id string, atts ...history.Attachment) int64 {
			m := withMailbox(msg(thread, id, baseTime), "support")
			m.Attachments = atts
			return mustAppend(t, s, m)
		}
		seqs := map[string]int64{}
		for _, th := range []string{"old-answered", "old-running", "old-attachments", "new"} {
			seqs[th] = add("support/"+th, th+"@x")
		}
		add("support/old-attachments", "more@x", history.Attachment{ID: "sha-1", Filename: "a.pdf", ContentType: "application/pdf", Size: 3},
			history.Attachment{ID: "sha-2", Filename: "b.pdf", ContentType: "application/pdf", Size: 3})
		add("support/old-attachments", "again@x", history.Attachment{ID: "sha-1", Filename: "a.pdf", ContentType: "application/pdf", Size: 3})
		answered := startReply(t, s, "support", "support/old-answered", seqs["old-answered"])
		if _, err := s.StartTurn(ctx, "w1", Turn{RunID: answered.ID, TurnIndex: 0, Text: "hi"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordRound(ctx, Round{Owner: Owner{Type: OwnerMessage, ID: seqs["old-answered"]}, Persona: "support", RunID: answered.Key,
			Calls: []chat.ToolCall{{ID: "c", Name: "t", Input: json.RawMessage(`{}`)}}, Results: []Result{{Content: "r", Succeeded: true}}}); err != nil {
			t.Fatal(err)
		}
		reply := withMailbox(msg("support/old-answered", "reply@acme", baseTime), "support")
		reply.Direction, reply.RunKey = history.Outbound, answered.Key
		mustAppend(t, s, reply)
		finish(t, s, answered.Key, "w1", Finish{Status: RunSucceeded})
		startReply(t, s, "support", "support/old-running", seqs["old-running"])
		for i, th := range []string{"old-answered", "old-running", "old-attachments"} {
			setActivity(t, s, "support/"+th, cutoff.Add(-time.Duration(3-i)*time.Hour))
		}
		setActivity(t, s, "support/new", cutoff)

		dry, err := s.Prune(ctx, Prune{Before: cutoff, DryRun: true, Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		deletedIDs := func(r PruneReport) []string {
			var out []string
			for _, d := range r.Deleted {
				out = append(out, d.ThreadID)
			}
			return out
		}
		wantDeleted := []string{"support/old-answered", "support/old-attachments"}
		wantKept := []KeptThread{{ThreadID: "support/old-running", Why: "a run of it has not finished"}}
		if !slices.Equal(deletedIDs(dry), wantDeleted) || !slices.Equal(dry.Kept, wantKept) {
			t.Fatalf("dry run = %+v", dry)
		}
		if n := countRows(t, s, "thread_activity", ""); n != 4 {
			t.Fatalf("the dry run deleted threads: %d left", n)
		}
		rep, err := s.Prune(ctx, Prune{Before: cutoff, Batch: 1, By: "cli:ops", Reason: "90 days"})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(deletedIDs(rep), wantDeleted) || !slices.Equal(rep.Kept, wantKept) {
			t.Fatalf("prune = %+v", rep)
		}
		if got := rep.Deleted[1]; got.Messages != 3 || !slices.Equal(got.AttachmentIDs, []string{"sha-1", "sha-2"}) || got.Mailbox != "support" ||
			!got.LastActivity.Equal(cutoff.Add(-time.Hour)) {
			t.Errorf("deleted thread = %+v", got)
		}
		for _, c := range []struct {
			table, where string
			want         int
		}{
			{"messages", "thread_id LIKE 'support/old-a%'", 0},
			{"runs", "thread_id = 'support/old-answered'", 0},
			{"run_turns", "", 0},
			{"tool_uses", "", 0},
			{"mail_outbox", "", 0},
			{"pending_replies", "thread_id LIKE 'support/old-a%'", 0},
			{"thread_activity", "", 2},
			{"messages", "thread_id IN ('support/old-running', 'support/new')", 2},
		} {
			if n := countRows(t, s, c.table, c.where); n != c.want {
				t.Errorf("%s where %q: %d rows, want %d", c.table, c.where, n, c.want)
			}
		}
		acts, err := s.OperatorActions(ctx, "", 0)
		if err != nil || len(acts) != 2 || acts[0].Target != "thread:support/old-attachments" || acts[0].Action != ActionDeleteThread ||
			acts[0].By != "cli:ops" || acts[0].Reason != "90 days" ||
			acts[0].Detail != `3 messages of mailbox "support", last activity `+cutoff.Add(-time.Hour).Format(time.RFC3339Nano) {
			t.Errorf("actions = %+v, %v", acts, err)
		}
		again, err := s.Prune(ctx, Prune{Before: cutoff, By: "cli:ops"})
		if err != nil || len(again.Deleted) != 0 || len(again.Kept) != 1 {
			t.Errorf("second prune = %+v, %v", again, err)
		}
	})
}

func TestPruneFromDeletesOneCustomersThreads(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, c := range []struct {
			thread, from string
			cc           []string
		}{
			{"support/ann", "Ann Example <Ann@Cust.Example>", nil},
			{"support/cc", "bob@cust.example", []string{"ann@cust.example"}},
			{"support/lookalike", "ann@cust.example.org", nil},
			{"support/percent", "an%n@cust.example", nil},
			{"support/other", "bob@cust.example", nil},
		} {
			m := withMailbox(msg(c.thread, c.thread+"@x", baseTime), "support")
			m.From, m.Cc = c.from, c.cc
			mustAppend(t, s, m)
		}
		rep, err := s.Prune(ctx, Prune{From: "ann@cust.example", By: "console:dpo", Reason: "erasure request"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, d := range rep.Deleted {
			got = append(got, d.ThreadID)
		}
		if want := []string{"support/ann", "support/cc"}; !slices.Equal(got, want) {
			t.Errorf("deleted %v, want %v", got, want)
		}
		if n := countRows(t, s, "thread_activity", ""); n != 3 {
			t.Errorf("%d threads left, want 3", n)
		}
		// Before and From together: only the old ones of the address.
		setActivity(t, s, "support/other", baseTime.Add(-time.Hour))
		rep, err = s.Prune(ctx, Prune{From: "bob@cust.example", Before: baseTime.Add(-time.Minute), By: "console:dpo"})
		if err != nil || len(rep.Deleted) != 1 || rep.Deleted[0].ThreadID != "support/other" {
			t.Errorf("old threads of bob = %+v, %v", rep, err)
		}
	})
}

func TestPruneRefusesBadRequests(t *testing.T) {
	s := newTestStore(t, DialectSQLite)
	for _, p := range []Prune{
		{By: "x"},
		{From: "not an address", By: "x"},
		{Before: baseTime},
		{Before: baseTime, By: "x", Batch: -1},
		{Before: baseTime, By: "x", Batch: MaxListLimit + 1},
	} {
		if _, err := s.Prune(context.Background(), p); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", p, err)
		}
	}
}

// A bounced reply is listed as bounced (not as failed), and Resend puts it back into the
// outbox with its bounce cleared, keeping the bounce in the action's detail.
func TestOutboxListsBouncedRepliesAndResendClearsTheBounce(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		mustAppend(t, s, withMailbox(msg("support/t", "q@x", baseTime), "support"))
		m := withMailbox(msg("support/t", "r@acme.example", baseTime), "support")
		m.Direction, m.RunKey = history.Outbound, "run-1"
		seq := mustAppend(t, s, m)
		if _, err := s.MarkSent(ctx, seq); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.MarkBounced(ctx, "support", "r@acme.example", "5.1.1", "ann@cust.example: 550 no such user"); err != nil || !ok {
			t.Fatalf("MarkBounced = %v, %v", ok, err)
		}
		bounced, err := s.Outbox(ctx, OutboxQuery{Status: OutboxBounced})
		if err != nil || len(bounced) != 1 || bounced[0].Seq != seq || bounced[0].State.Status != "bounced" || bounced[0].State.BounceStatus != "5.1.1" {
			t.Fatalf("bounced = %+v, %v", bounced, err)
		}
		if failed, err := s.Outbox(ctx, OutboxQuery{Status: OutboxFailed}); err != nil || len(failed) != 0 {
			t.Errorf("failed = %+v, %v", failed, err)
		}
		if out, err := s.Resend(ctx, seq, "console:ada", "address corrected"); err != nil || out != Stored {
			t.Fatalf("Resend = %v, %v", out, err)
		}
		if st, err := s.ReplyState(ctx, seq); err != nil || st.Status != "unsent" || !st.BouncedAt.IsZero() {
			t.Errorf("state after the resend = %+v, %v", st, err)
		}
		if bounced, _ := s.Outbox(ctx, OutboxQuery{Status: OutboxBounced}); len(bounced) != 0 {
			t.Errorf("still bounced after the resend: %+v", bounced)
		}
		acts, err := s.OperatorActions(ctx, ReplyTarget(seq), 0)
		at := clock.Now().UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano)
		if err != nil || len(acts) != 1 || acts[0].Detail != "bounced at "+at+" (5.1.1: ann@cust.example: 550 no such user) after 0 attempts" {
			t.Errorf("actions = %+v, %v", acts, err)
		}
		// A second bounce of the resent reply is recorded again.
		if _, err := s.MarkSent(ctx, seq); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.MarkBounced(ctx, "support", "r@acme.example", "5.2.2", "mailbox full"); err != nil || !ok {
			t.Errorf("second bounce = %v, %v; want recorded", ok, err)
		}
	}, WithClock(clock.Now))
}
