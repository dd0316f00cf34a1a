package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// threadSeqs returns the seqs of thread's messages in order of record.
func threadSeqs(t testing.TB, s *Store, thread string) []int64 {
	t.Helper()
	var seqs []int64
	if err := s.DB().SelectContext(context.Background(), &seqs, s.dialect.rebind(
		`SELECT seq FROM messages WHERE thread_id = ? ORDER BY seq`), thread); err != nil {
		t.Fatal(err)
	}
	return seqs
}

func compactionCount(t testing.TB, s *Store, thread string) (pending, completed int) {
	t.Helper()
	var rows []struct {
		Status string `db:"status"`
	}
	if err := s.DB().SelectContext(context.Background(), &rows, s.dialect.rebind(
		`SELECT status FROM compactions WHERE thread_id = ?`), thread); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Status == statusPending {
			pending++
		} else {
			completed++
		}
	}
	return pending, completed
}

// Eight callers compacting the same boundary at once: one Summarize call, one completed row,
// the others told "pending" or "already completed".
func TestCompactConcurrentCallersSummariseOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		seedThread(t, s, "busy", 10)
		seqs := threadSeqs(t, s, "busy")
		var calls atomic.Int64
		release := make(chan struct{})
		slow := runtime.SummarizerFunc(func(ctx context.Context, in runtime.SummaryInput) (string, error) {
			calls.Add(1)
			<-release // hold the claim until every caller has tried
			return summaryOf(in), nil
		})
		var wg sync.WaitGroup
		results := make([]CompactResult, 8)
		errs := make([]error, 8)
		var tried atomic.Int64
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i], errs[i] = s.Compact(context.Background(), "busy", seqs[5], slow)
				tried.Add(1)
			}()
		}
		deadline := time.After(30 * time.Second)
		for tried.Load() < 7 {
			select {
			case <-deadline:
				t.Fatal("callers did not return while the claim was held")
			case <-time.After(5 * time.Millisecond):
			}
		}
		close(release)
		wg.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("Summarize called %d times, want 1", n)
		}
		completed := 0
		for i, r := range results {
			if errs[i] != nil {
				t.Fatalf("caller %d: %v", i, errs[i])
			}
			switch r.Outcome {
			case CompactCompleted:
				completed++
			case CompactPending, CompactAlreadyDone:
			default:
				t.Errorf("caller %d: outcome %q", i, r.Outcome)
			}
		}
		if completed != 1 {
			t.Errorf("%d callers completed, want 1", completed)
		}
		if p, c := compactionCount(t, s, "busy"); p != 0 || c != 1 {
			t.Errorf("rows: %d pending, %d completed; want 0, 1", p, c)
		}
	})
}

// A pending claim older than the lease is taken over; a fresh one is not.
func TestCompactTakesOverStaleClaim(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedThread(t, s, "stale", 6)
		seqs := threadSeqs(t, s, "stale")
		first, err := s.Compact(ctx, "stale", seqs[1], fixedSummary(nil))
		if err != nil || first.Outcome != CompactCompleted {
			t.Fatalf("first compaction: %+v, %v", first, err)
		}
		claim := func(boundary int64, token string, at time.Time) {
			t.Helper()
			if _, err := s.DB().ExecContext(ctx, s.dialect.rebind(`INSERT INTO compactions (thread_id, boundary_seq,
				boundary_message_id, status, summary, claim_token, claimed_at) VALUES ('stale', ?, 'x', 'pending', '', ?, ?)`),
				boundary, token, s.dialect.timeArg(at)); err != nil {
				t.Fatal(err)
			}
		}
		var calls atomic.Int64
		// A fresh claim by a live worker: pending, and the previous summary stays in use.
		claim(seqs[3], "live-worker", time.Now())
		res, err := s.Compact(ctx, "stale", seqs[3], fixedSummary(&calls))
		if err != nil || res.Outcome != CompactPending || calls.Load() != 0 {
			t.Fatalf("fresh claim: %+v, %v, %d calls; want pending without a call", res, err, calls.Load())
		}
		if res.Compaction == nil || res.Compaction.BoundarySeq != seqs[1] {
			t.Errorf("pending result should carry the previous completed compaction, got %+v", res.Compaction)
		}
		// A crashed worker's claim, older than the lease: taken over and completed.
		claim(seqs[4], "crashed-worker", time.Now().Add(-time.Hour))
		res, err = s.Compact(ctx, "stale", seqs[4], fixedSummary(&calls), CompactLease(time.Minute))
		if err != nil || res.Outcome != CompactCompleted || !res.TookOver || calls.Load() != 1 {
			t.Fatalf("stale claim: %+v, %v, %d calls; want completed after a takeover", res, err, calls.Load())
		}
		latest, err := s.LatestCompaction(ctx, "stale")
		if err != nil || latest == nil || latest.BoundarySeq != seqs[4] || latest.Summary != res.Compaction.Summary {
			t.Fatalf("LatestCompaction = %+v, %v", latest, err)
		}
		// The fresh claim is still honoured, and a later boundary is already covered.
		res, err = s.Compact(ctx, "stale", seqs[3], fixedSummary(&calls))
		if err != nil || res.Outcome != CompactAlreadyDone || res.Compaction.BoundarySeq != seqs[4] {
			t.Fatalf("boundary under a completed one: %+v, %v; want already done", res, err)
		}
	})
}

// A worker whose claim went stale while its Summarizer ran loses to the worker that took over:
// exactly one summary is stored, the taker's.
func TestCompactSlowWorkerLosesTakenOverClaim(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedThread(t, s, "slow", 4)
		seqs := threadSeqs(t, s, "slow")
		inside := make(chan struct{})
		resume := make(chan struct{})
		slow := runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) {
			close(inside)
			<-resume
			return "slow summary", nil
		})
		done := make(chan CompactResult)
		go func() {
			res, err := s.Compact(ctx, "slow", seqs[2], slow)
			if err != nil {
				t.Error(err)
			}
			done <- res
		}()
		<-inside
		fast := runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) { return "fast summary", nil })
		res, err := s.Compact(ctx, "slow", seqs[2], fast, CompactLease(time.Nanosecond))
		if err != nil || res.Outcome != CompactCompleted || !res.TookOver {
			t.Fatalf("taker: %+v, %v", res, err)
		}
		close(resume)
		if slowRes := <-done; slowRes.Outcome != CompactClaimLost {
			t.Fatalf("slow worker: %+v, want claim lost", slowRes)
		}
		latest, err := s.LatestCompaction(ctx, "slow")
		if err != nil || latest.Summary != "fast summary" {
			t.Fatalf("LatestCompaction = %+v, %v; want the taker's summary", latest, err)
		}
	})
}

// A new compaction summarises only the messages after the previous boundary, with the previous
// summary, and every tool round of a message goes with it.
func TestCompactIsRecursiveAndKeepsRoundsWithTheirMessage(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedThread(t, s, "rec", 8)
		seqs := threadSeqs(t, s, "rec")
		var inputs []runtime.SummaryInput
		record := runtime.SummarizerFunc(func(_ context.Context, in runtime.SummaryInput) (string, error) {
			inputs = append(inputs, in)
			return "summary up to " + itoa(int(in.BoundarySeq)), nil
		})
		// seqs[2] is inbound (even index) with two rounds; they must be in the first summary.
		if _, err := s.Compact(ctx, "rec", seqs[2], record); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Compact(ctx, "rec", seqs[5], record); err != nil {
			t.Fatal(err)
		}
		if len(inputs) != 2 {
			t.Fatalf("%d summaries, want 2", len(inputs))
		}
		// messages 0..2: inbound(2 rounds), outbound, inbound(2 rounds) = 3 turns + 4 rounds x 2
		if got := len(inputs[0].Messages); got != 3+4*2 || inputs[0].Previous != "" || inputs[0].PreviousBoundarySeq != 0 {
			t.Errorf("first input: %d messages, previous %q (%d); want 11 messages and none", got,
				inputs[0].Previous, inputs[0].PreviousBoundarySeq)
		}
		if err := chat.Validate(inputs[0].Messages); err != nil {
			t.Errorf("summarised messages fail Validate: %v", err)
		}
		// messages 3..5: outbound, inbound(2 rounds), outbound = 3 turns + 2 rounds x 2
		if got := len(inputs[1].Messages); got != 3+2*2 || inputs[1].Previous != "summary up to "+itoa(int(seqs[2])) ||
			inputs[1].PreviousBoundarySeq != seqs[2] {
			t.Errorf("second input: %d messages, previous %q (%d)", got, inputs[1].Previous, inputs[1].PreviousBoundarySeq)
		}
		var prev *int64
		if err := s.DB().GetContext(ctx, &prev, s.dialect.rebind(
			`SELECT previous_boundary_seq FROM compactions WHERE thread_id = 'rec' AND boundary_seq = ?`), seqs[5]); err != nil {
			t.Fatal(err)
		}
		if prev == nil || *prev != seqs[2] {
			t.Errorf("previous_boundary_seq = %v, want %d", prev, seqs[2])
		}
		// The replay after the second boundary holds messages 6 and 7 and message 6's rounds only.
		h, err := s.History(ctx, history.Query{ThreadID: "rec", AfterSeq: seqs[5], ToolUses: true})
		if err != nil || len(h.Messages) != 2 || len(h.Messages[0].ToolUses) != 2 {
			t.Fatalf("history after the boundary: %+v, %v", h, err)
		}
	})
}

func TestCompactErrors(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedThread(t, s, "e1", 3)
		seedThread(t, s, "e2", 3)
		seqs := threadSeqs(t, s, "e1")
		other := threadSeqs(t, s, "e2")
		boom := errors.New("model unavailable")
		failing := runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) { return "", boom })
		blank := runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) { return " \n", nil })
		cases := []struct {
			name     string
			thread   string
			boundary int64
			sum      history.Summarizer
			want     error
		}{
			{"empty thread id", "", seqs[0], fixedSummary(nil), ErrInvalid},
			{"boundary below 1", "e1", 0, fixedSummary(nil), ErrInvalid},
			{"nil summarizer", "e1", seqs[0], nil, ErrInvalid},
			{"unknown boundary", "e1", 999999, fixedSummary(nil), ErrBoundaryNotFound},
			{"boundary of another thread", "e1", other[0], fixedSummary(nil), ErrBoundaryNotFound},
			{"the newest message as boundary", "e1", seqs[2], fixedSummary(nil), ErrBoundaryTooNew},
			{"over-long summary", "e1", seqs[1], runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) {
				return strings.Repeat("s", MaxBodyBytes+1), nil
			}), ErrInvalid},
			{"summarizer error", "e1", seqs[1], failing, boom},
			{"blank summary", "e1", seqs[1], blank, ErrEmptySummary},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := s.Compact(ctx, c.thread, c.boundary, c.sum)
				if !errors.Is(err, c.want) {
					t.Fatalf("error = %v, want %v", err, c.want)
				}
			})
		}
		// The failed attempts released their claim: the next caller compacts at once.
		if p, c := compactionCount(t, s, "e1"); p != 0 || c != 0 {
			t.Fatalf("after failures: %d pending, %d completed rows; want none", p, c)
		}
		res, err := s.Compact(ctx, "e1", seqs[1], fixedSummary(nil))
		if err != nil || res.Outcome != CompactCompleted {
			t.Fatalf("retry after failure: %+v, %v", res, err)
		}
	})
}

// When the final UPDATE that completes the row fails, the claim is released at once: the next
// caller compacts instead of waiting out the lease as "pending".
func TestCompactReleasesItsClaimWhenCompletingFails(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedThread(t, s, "c", 4)
		seqs := threadSeqs(t, s, "c")
		cut := errors.New("connection reset while completing")
		s.hooks = &roundHooks{beforeStatement: func(step string) error {
			if step == "complete" {
				return cut
			}
			return nil
		}}
		if _, err := s.Compact(ctx, "c", seqs[1], fixedSummary(nil)); !errors.Is(err, cut) {
			t.Fatalf("Compact with a failing completion error = %v, want %v", err, cut)
		}
		if p, c := compactionCount(t, s, "c"); p != 0 || c != 0 {
			t.Fatalf("after the failed completion: %d pending, %d completed rows; want the claim released", p, c)
		}
		s.hooks = nil
		var calls atomic.Int64
		res, err := s.Compact(ctx, "c", seqs[1], fixedSummary(&calls))
		if err != nil || res.Outcome != CompactCompleted || calls.Load() != 1 {
			t.Fatalf("retry = %+v, %v (%d summaries); want completed at once", res, err, calls.Load())
		}
	})
}

func TestCompactionPolicyDrivesCompact(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seedThread(t, s, "pol", 12)
		policy := runtime.CompactionPolicy{MaxMessages: 8, Keep: 4}
		h, err := s.History(ctx, history.Query{ThreadID: "pol", ToolUses: true})
		if err != nil {
			t.Fatal(err)
		}
		boundary, ok := policy.Plan(h.Messages)
		seqs := threadSeqs(t, s, "pol")
		if !ok || boundary != seqs[7] {
			t.Fatalf("Plan = %d, %t; want %d, true", boundary, ok, seqs[7])
		}
		if _, err := s.Compact(ctx, "pol", boundary, fixedSummary(nil)); err != nil {
			t.Fatal(err)
		}
		latest, _ := s.LatestCompaction(ctx, "pol")
		h, err = s.History(ctx, history.Query{ThreadID: "pol", AfterSeq: latest.BoundarySeq, ToolUses: true})
		if err != nil || len(h.Messages) != 4 {
			t.Fatalf("after compaction %d messages remain, want 4 (%v)", len(h.Messages), err)
		}
		if _, ok := policy.Plan(h.Messages); ok {
			t.Error("Plan should not fire again right after compacting")
		}
	})
}
