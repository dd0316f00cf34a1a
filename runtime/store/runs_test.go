package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// fireAt is the fire instant of the scheduled runs the tests start.
var fireAt = time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC)

// startScheduled starts a scheduled run of persona's responsibility at fireAt, held by "w1".
func startScheduled(t testing.TB, s *Store, persona, responsibility string) Run {
	t.Helper()
	r, out, err := s.StartRun(context.Background(), NewRun{Key: persona + "/" + responsibility + "/" + fireAt.Format(time.RFC3339),
		Kind: RunScheduled, Persona: persona, Responsibility: responsibility, FireAt: fireAt, Holder: "w1"})
	if err != nil || out != Stored {
		t.Fatalf("StartRun(scheduled %s/%s) = %v, %v", persona, responsibility, out, err)
	}
	return r
}

// startReply starts a reply run of persona answering message seq of thread, held by "w1".
func startReply(t testing.TB, s *Store, persona, thread string, seq int64) Run {
	t.Helper()
	r, out, err := s.StartRun(context.Background(), NewRun{Key: fmt.Sprintf("%s/%s/%d", persona, thread, seq),
		Kind: RunReply, Persona: persona, ThreadID: thread, MessageSeq: seq, Holder: "w1"})
	if err != nil || out != Stored {
		t.Fatalf("StartRun(reply %s/%s/%d) = %v, %v", persona, thread, seq, out, err)
	}
	return r
}

// newTestClock returns a settable clock for WithClock, at a fixed instant with nanoseconds (the
// store keeps microseconds).
func newTestClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 123456789, time.UTC))
}

func TestReplyAndScheduledRunsShareOneAPI(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t", "in-1", baseTime))
		start := clock.Now().UTC().Truncate(time.Microsecond)
		reply, out, err := s.StartRun(ctx, NewRun{Key: "support/in-1", Kind: RunReply, Persona: "support",
			ThreadID: "t", MessageSeq: seq, CompactionSeq: 0, Holder: "w1", LeaseFor: time.Minute})
		if err != nil || out != Stored {
			t.Fatalf("StartRun(reply) = %v, %v", out, err)
		}
		want := Run{ID: reply.ID, Key: "support/in-1", Kind: RunReply, Persona: "support", ThreadID: "t", MessageSeq: seq,
			Status: RunRunning, Lease: Lease{Holder: "w1", Expires: start.Add(time.Minute)}, Attempt: 1, StartedAt: start}
		if reply != want {
			t.Errorf("StartRun(reply) = %+v\nwant %+v", reply, want)
		}
		if got, err := s.Run(ctx, "support/in-1"); err != nil || got != want {
			t.Errorf("Run(reply) = %+v, %v\nwant %+v", got, err, want)
		}

		fire := time.Date(2024, 5, 6, 6, 0, 0, 0, time.FixedZone("CEST", 2*3600)) // 04:00 UTC
		sched, out, err := s.StartRun(ctx, NewRun{Key: "research/digest/0400", Kind: RunScheduled, Persona: "research",
			Responsibility: "digest", FireAt: fire, CompactionSeq: 0, Holder: "w2"})
		if err != nil || out != Stored {
			t.Fatalf("StartRun(scheduled) = %v, %v", out, err)
		}
		if sched.FireAt != fire.UTC() || sched.Lease.Expires != start.Add(DefaultRunLease) || sched.ThreadID != "" {
			t.Errorf("scheduled run = %+v, want fire %v UTC and the default lease", sched, fire.UTC())
		}

		clock.Advance(90 * time.Second)
		usage := chat.Usage{InputTokens: 1200, OutputTokens: 300, CacheReadTokens: 1000, CacheWriteTokens: 200}
		reason := "fetch failed: " + fourByte + strings.Repeat("x", 20000)
		for i, f := range []struct {
			key, holder string
			fin         Finish
		}{
			{"support/in-1", "w1", Finish{Status: RunSucceeded, StopReason: "end_turn", Usage: usage}},
			{"research/digest/0400", "w2", Finish{Status: RunFailed, Reason: reason}},
		} {
			if out, err := s.FinishRun(ctx, f.key, f.holder, f.fin); err != nil || out != Stored {
				t.Errorf("FinishRun %d = %v, %v", i, out, err)
			}
		}
		got, _ := s.Run(ctx, "support/in-1")
		if got.Status != RunSucceeded || got.StopReason != "end_turn" || got.Usage != usage ||
			got.FinishedAt.Sub(got.StartedAt) != 90*time.Second {
			t.Errorf("finished reply run = %+v", got)
		}
		got, _ = s.Run(ctx, "research/digest/0400")
		if got.Status != RunFailed || !strings.HasPrefix(got.Reason, "fetch failed: "+fourByte) ||
			len([]rune(got.Reason)) != StoredPayloadLimit {
			t.Errorf("failed run: status %s, reason of %d characters; want failed, clipped to %d", got.Status,
				len([]rune(got.Reason)), StoredPayloadLimit)
		}

		trail, err := s.Runs(ctx, RunQuery{Persona: "research", Responsibility: "digest"})
		if err != nil || len(trail) != 1 || trail[0].Key != "research/digest/0400" {
			t.Errorf("Runs(research/digest) = %+v, %v", trail, err)
		}
		all, err := s.Runs(ctx, RunQuery{})
		if err != nil || len(all) != 2 || all[0].Key != "support/in-1" || all[1].Kind != RunScheduled {
			t.Errorf("Runs() = %+v, %v; want both, oldest first", all, err)
		}
		if last, _ := s.Runs(ctx, RunQuery{Limit: 1}); len(last) != 1 || last[0].Key != "research/digest/0400" {
			t.Errorf("Runs(limit 1) = %+v, want the newest", last)
		}
	}, WithClock(clock.Now))
}

func TestStartRunTwiceWithOneKeyGivesOneRun(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t", "in-1", baseTime))
		nr := NewRun{Key: "k", Kind: RunReply, Persona: "p", ThreadID: "t", MessageSeq: seq, Holder: "w1"}
		first, out, err := s.StartRun(ctx, nr)
		if err != nil || out != Stored {
			t.Fatal(out, err)
		}
		nr.Holder = "w2" // another worker, same key: it gets the stored run, still w1's
		again, out, err := s.StartRun(ctx, nr)
		if err != nil || out != AlreadyStored || again != first {
			t.Errorf("second StartRun = %+v, %v, %v; want the first run, already stored", again, out, err)
		}
		// Racing starters of one key: one run, one Stored.
		const n = 8
		var wg sync.WaitGroup
		outs := make(chan Outcome, n)
		for i := range n {
			wg.Go(func() {
				r := NewRun{Key: "race", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt,
					Holder: fmt.Sprintf("w%d", i)}
				_, out, err := s.StartRun(ctx, r)
				if err != nil {
					t.Errorf("racing StartRun: %v", err)
				}
				outs <- out
			})
		}
		wg.Wait()
		close(outs)
		stored := 0
		for o := range outs {
			if o == Stored {
				stored++
			}
		}
		if stored != 1 || countRows(t, s, "runs", "run_key = 'race'") != 1 {
			t.Errorf("%d racing starts stored, %d rows; want 1 and 1", stored, countRows(t, s, "runs", "run_key = 'race'"))
		}
		// The same key for another message is a conflict, not the stored run.
		other := mustAppend(t, s, msg("t", "in-2", baseTime))
		nr.MessageSeq = other
		if _, _, err := s.StartRun(ctx, nr); !errors.Is(err, ErrConflict) {
			t.Errorf("StartRun(key of another message) error = %v, want ErrConflict", err)
		}
		// Another key for a fire that has a run: a conflict too.
		dup := NewRun{Key: "race-2", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt, Status: RunSkipped}
		if _, _, err := s.StartRun(ctx, dup); !errors.Is(err, ErrConflict) {
			t.Errorf("StartRun(second key for one fire) error = %v, want ErrConflict", err)
		}
	})
}

func TestOneRunningRunPerThreadAndPerResponsibility(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq1 := mustAppend(t, s, msg("t", "in-1", baseTime))
		seq2 := mustAppend(t, s, msg("t", "in-2", baseTime))
		first := startReply(t, s, "p", "t", seq1)
		_, _, err := s.StartRun(ctx, NewRun{Key: "second", Kind: RunReply, Persona: "p", ThreadID: "t", MessageSeq: seq2, Holder: "w2"})
		var busy *BusyError
		if !errors.As(err, &busy) || !errors.Is(err, ErrBusy) || busy.Running != first {
			t.Fatalf("second running reply run on the thread: %v; want a *BusyError carrying %+v", err, first)
		}
		if want := fmt.Sprintf(`store: persona "p" already has run %q running on thread "t" (lease held by "w1" until `, first.Key); !strings.HasPrefix(err.Error(), want) {
			t.Errorf("busy error = %q, want it to start %q", err, want)
		}
		if n := countRows(t, s, "runs", ""); n != 1 {
			t.Errorf("%d runs stored after the busy start, want 1", n)
		}
		// Another persona may answer on the same thread.
		startReply(t, s, "q", "t", seq2)

		sched := startScheduled(t, s, "p", "digest")
		next := NewRun{Key: "p/digest/next", Kind: RunScheduled, Persona: "p", Responsibility: "digest",
			FireAt: fireAt.Add(time.Hour), Holder: "w2"}
		if _, _, err := s.StartRun(ctx, next); !errors.As(err, &busy) || busy.Running.Key != sched.Key {
			t.Fatalf("overlapping scheduled run: %v; want busy with %q", err, sched.Key)
		}
		// The overlapping fire is recorded as skipped, in one statement, without a lease.
		next.Status, next.Reason = RunSkipped, "overlap"
		skipped, out, err := s.StartRun(ctx, next)
		if err != nil || out != Stored || skipped.Status != RunSkipped || skipped.Reason != "overlap" ||
			skipped.Lease != (Lease{}) || skipped.Attempt != 0 || skipped.FinishedAt != skipped.StartedAt {
			t.Fatalf("skipped fire = %+v, %v, %v", skipped, out, err)
		}
		if again, out, err := s.StartRun(ctx, next); err != nil || out != AlreadyStored || again != skipped {
			t.Errorf("retried skipped fire = %+v, %v, %v; want the stored one", again, out, err)
		}
		// Once the first run finished, the next one starts.
		if _, err := s.FinishRun(ctx, first.Key, "w1", Finish{Status: RunSucceeded}); err != nil {
			t.Fatal(err)
		}
		if _, out, err := s.StartRun(ctx, NewRun{Key: "second", Kind: RunReply, Persona: "p", ThreadID: "t",
			MessageSeq: seq2, Holder: "w2"}); err != nil || out != Stored {
			t.Errorf("StartRun after the first finished = %v, %v", out, err)
		}
		trail, _ := s.Runs(ctx, RunQuery{Persona: "p", Responsibility: "digest"})
		if len(trail) != 2 || trail[0].Status != RunRunning || trail[1].Status != RunSkipped {
			t.Errorf("digest trail = %+v, want running then skipped", trail)
		}
	}, WithClock(clock.Now))
}

func TestLeaseRenewsExpiresAndIsTakenOverExactlyOnce(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		r, _, err := s.StartRun(ctx, NewRun{Key: "k", Kind: RunScheduled, Persona: "p", Responsibility: "r",
			FireAt: fireAt, Holder: "w1", LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		clock.Advance(50 * time.Second)
		if _, err := s.TakeOverRun(ctx, "k", "w2", time.Minute); !errors.Is(err, ErrLeaseHeld) {
			t.Errorf("TakeOverRun of a live lease error = %v, want ErrLeaseHeld", err)
		}
		if _, err := s.AbandonRun(ctx, "k", "dead"); !errors.Is(err, ErrLeaseHeld) {
			t.Errorf("AbandonRun of a live lease error = %v, want ErrLeaseHeld", err)
		}
		lease, err := s.RenewLease(ctx, "k", "w1", time.Minute)
		if want := (Lease{"w1", r.StartedAt.Add(110 * time.Second)}); err != nil || lease != want {
			t.Errorf("RenewLease = %+v, %v; want %+v", lease, err, want)
		}
		if again, err := s.RenewLease(ctx, "k", "w1", time.Minute); err != nil || again != lease {
			t.Errorf("RenewLease again at the same instant = %+v, %v; want %+v", again, err, lease)
		}
		if _, err := s.RenewLease(ctx, "k", "w2", time.Minute); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("RenewLease by a non-holder error = %v, want ErrLeaseLost", err)
		}
		clock.Advance(61 * time.Second) // 111 s: the renewed lease expired at 110 s
		if (Lease{"w1", lease.Expires}).Live(clock.Now()) {
			t.Error("lease still live after its expiry")
		}

		const n = 8
		var wg sync.WaitGroup
		var mu sync.Mutex
		var winners []Run
		held := 0
		for i := range n {
			wg.Go(func() {
				got, err := s.TakeOverRun(ctx, "k", fmt.Sprintf("taker-%d", i), time.Minute)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, got)
				case errors.Is(err, ErrLeaseHeld):
					held++
				default:
					t.Errorf("TakeOverRun: %v", err)
				}
			})
		}
		wg.Wait()
		if len(winners) != 1 || held != n-1 {
			t.Fatalf("%d takeovers won, %d refused; want 1 and %d", len(winners), held, n-1)
		}
		w := winners[0]
		if w.Attempt != 2 || w.Lease.Expires != clock.Now().UTC().Truncate(time.Microsecond).Add(time.Minute) {
			t.Errorf("taken-over run = %+v, want attempt 2 and a fresh lease", w)
		}
		if again, err := s.TakeOverRun(ctx, "k", w.Lease.Holder, time.Minute); err != nil || again != w {
			t.Errorf("the winner's retried TakeOverRun = %+v, %v; want the run unchanged", again, err)
		}
		// The old holder has lost the run: it can neither renew nor finish it.
		if _, err := s.RenewLease(ctx, "k", "w1", time.Minute); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("old holder's RenewLease error = %v, want ErrLeaseLost", err)
		}
		if _, err := s.FinishRun(ctx, "k", "w1", Finish{Status: RunSucceeded}); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("old holder's FinishRun error = %v, want ErrLeaseLost", err)
		}
		// An expired lease of a dead holder: abandoned once, so it no longer blocks.
		clock.Advance(2 * time.Minute)
		if out, err := s.AbandonRun(ctx, "k", "lease expired"); err != nil || out != Stored {
			t.Errorf("AbandonRun = %v, %v", out, err)
		}
		if out, err := s.AbandonRun(ctx, "k", "lease expired"); err != nil || out != AlreadyStored {
			t.Errorf("retried AbandonRun = %v, %v; want already stored", out, err)
		}
		if _, err := s.TakeOverRun(ctx, "k", "late", time.Minute); !errors.Is(err, ErrRunFinished) {
			t.Errorf("TakeOverRun of an abandoned run error = %v, want ErrRunFinished", err)
		}
		got, _ := s.Run(ctx, "k")
		if got.Status != RunAbandoned || got.Reason != "lease expired" {
			t.Errorf("abandoned run = %+v", got)
		}
		startScheduled(t, s, "p", "r2")
	}, WithClock(clock.Now))
}

func TestFinishRunIsIdempotentAndOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		r := startScheduled(t, s, "p", "r")
		fin := Finish{Status: RunFailed, Reason: "boom \xff", StopReason: "max_tokens", Usage: chat.Usage{InputTokens: 5}}
		if out, err := s.FinishRun(ctx, r.Key, "w1", fin); err != nil || out != Stored {
			t.Fatalf("FinishRun = %v, %v", out, err)
		}
		if out, err := s.FinishRun(ctx, r.Key, "w1", fin); err != nil || out != AlreadyStored {
			t.Errorf("retried FinishRun = %v, %v; want already stored", out, err)
		}
		if got, _ := s.Run(ctx, r.Key); got.Reason != "boom \uFFFD" {
			t.Errorf("reason = %q, want invalid UTF-8 replaced", got.Reason)
		}
		if _, err := s.FinishRun(ctx, r.Key, "w1", Finish{Status: RunSucceeded}); !errors.Is(err, ErrRunFinished) {
			t.Errorf("FinishRun with another status error = %v, want ErrRunFinished", err)
		}
		if got, _ := s.Run(ctx, r.Key); got.Status != RunFailed {
			t.Errorf("status after the second finish = %s, want failed kept", got.Status)
		}
		if _, err := s.FinishRun(ctx, "nope", "w1", Finish{Status: RunSucceeded}); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("FinishRun(unknown) error = %v, want ErrRunNotFound", err)
		}
		if _, err := s.FinishRun(ctx, r.Key, "w1", Finish{Status: RunRunning}); !errors.Is(err, ErrInvalid) {
			t.Errorf("FinishRun(running) error = %v, want ErrInvalid", err)
		}
		if _, err := s.Run(ctx, "nope"); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("Run(unknown) error = %v, want ErrRunNotFound", err)
		}
	})
}

func TestStartRunRejectsInvalidRunsBeforeWriting(t *testing.T) {
	valid := NewRun{Key: "k", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt, Holder: "w"}
	cases := []struct {
		name string
		edit func(r *NewRun)
	}{
		{"empty key", func(r *NewRun) { r.Key = "" }},
		{"key ending in a space", func(r *NewRun) { r.Key = "k " }},
		{"over-long key", func(r *NewRun) { r.Key = strings.Repeat("k", MaxNameChars+1) }},
		{"empty persona", func(r *NewRun) { r.Persona = "" }},
		{"unknown kind", func(r *NewRun) { r.Kind = "cron" }},
		{"scheduled without a fire", func(r *NewRun) { r.FireAt = time.Time{} }},
		{"scheduled fire in year 10000", func(r *NewRun) { r.FireAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"scheduled with a message", func(r *NewRun) { r.ThreadID, r.MessageSeq = "t", 1 }},
		{"reply without a message", func(r *NewRun) { r.Kind, r.Responsibility, r.FireAt, r.ThreadID = RunReply, "", time.Time{}, "t" }},
		{"reply with a responsibility", func(r *NewRun) { r.Kind, r.FireAt, r.ThreadID, r.MessageSeq = RunReply, time.Time{}, "t", 1 }},
		{"no holder", func(r *NewRun) { r.Holder = "" }},
		{"negative lease", func(r *NewRun) { r.LeaseFor = -time.Second }},
		{"negative compaction", func(r *NewRun) { r.CompactionSeq = -1 }},
		{"finished start status", func(r *NewRun) { r.Status = RunSucceeded }},
	}
	eachDB(t, func(t *testing.T, s *Store) {
		for _, c := range cases {
			r := valid
			c.edit(&r)
			if _, _, err := s.StartRun(context.Background(), r); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: StartRun error = %v, want ErrInvalid", c.name, err)
			}
		}
		_, _, err := s.StartRun(context.Background(), NewRun{Key: "k", Kind: RunReply, Persona: "p", ThreadID: "t",
			MessageSeq: 99, Holder: "w"})
		if !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("StartRun(unknown message) error = %v, want ErrMessageNotFound", err)
		}
		seq := mustAppend(t, s, msg("t", "m", baseTime))
		_, _, err = s.StartRun(context.Background(), NewRun{Key: "k", Kind: RunReply, Persona: "p", ThreadID: "other",
			MessageSeq: seq, Holder: "w"})
		if !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("StartRun(message of another thread) error = %v, want ErrMessageNotFound", err)
		}
		if n := countRows(t, s, "runs", ""); n != 0 {
			t.Errorf("%d runs written by invalid starts, want 0", n)
		}
	})
}

func TestZeroClockIsRefused(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		r := NewRun{Key: "k", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt, Holder: "w"}
		if _, _, err := s.StartRun(ctx, r); !errors.Is(err, ErrInvalid) {
			t.Errorf("StartRun with a zero clock error = %v, want ErrInvalid", err)
		}
		if n := countRows(t, s, "runs", ""); n != 0 {
			t.Errorf("%d runs written with a zero clock", n)
		}
	}, WithClock(func() time.Time { return time.Time{} }))
}

// The run writes a runner or scheduler makes on every run cost one round trip each on MySQL:
// claiming a fire (or starting a reply run), renewing, finishing; reading the trail is one
// query; a retried start is the INSERT plus one read.
func TestRunWritesCostOneRoundTrip(t *testing.T) {
	s, trips := newTripCountingMySQLStore(t)
	ctx := context.Background()
	nr := NewRun{Key: "k", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt, Holder: "w"}
	skip := NewRun{Key: "k2", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt.Add(time.Hour),
		Status: RunSkipped, Reason: "overlap"}
	checkTrips(t, trips, []tripCase{
		{"claim a fire", func() error { _, _, err := s.StartRun(ctx, nr); return err }, 1},
		{"record a skipped fire", func() error { _, _, err := s.StartRun(ctx, skip); return err }, 1},
		{"start again", func() error { _, _, err := s.StartRun(ctx, nr); return err }, 2},
		{"renew", func() error { _, err := s.RenewLease(ctx, "k", "w", time.Hour); return err }, 1},
		{"stop, releasing the lease", func() error {
			_, err := s.StopRun(ctx, "k", "w", Stop{Reason: "overloaded", Class: FailureModelUnavailable})
			return err
		}, 1},
		{"resume (the update, the read)", func() error { _, err := s.ResumeRun(ctx, "k", "w", time.Hour); return err }, 2},
		{"finish", func() error { _, err := s.FinishRun(ctx, "k", "w", Finish{Status: RunSucceeded}); return err }, 1},
		{"trail", func() error { _, err := s.Runs(ctx, RunQuery{Persona: "p", Responsibility: "r"}); return err }, 1},
	})
}
