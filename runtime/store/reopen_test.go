package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestReopenRun: a failed, abandoned or skipped run moves back to running under the caller's
// lease with one more attempt, and an event records who asked, when, why and what the run was;
// every refusal leaves the run and its events as they were.
func TestReopenRun(t *testing.T) {
	clock := newTestClock()
	now := clock.Now().UTC().Truncate(time.Microsecond)
	ask := Reopen{Holder: "w2", LeaseFor: time.Minute, By: "ops@example.com", Reason: "the API key is fixed"}
	for _, tt := range []struct {
		name string
		// setup leaves run "k" (persona "p", responsibility "r") in the state the row needs.
		setup       func(t *testing.T, s *Store)
		reopen      Reopen
		wantErr     error
		wantOutcome Outcome
		wantAttempt int
		wantEvents  []string
	}{
		{"a failed run", func(t *testing.T, s *Store) { finish(t, s, "k", "w1", Finish{Status: RunFailed, Reason: "model: 401"}) },
			ask, nil, Stored, 2, []string{"reopened by ops@example.com (the API key is fixed): was failed (model: 401)"}},
		{"an abandoned run", func(t *testing.T, s *Store) {
			clock.Advance(2 * time.Minute)
			if _, err := s.AbandonRun(context.Background(), "k", "lease expired"); err != nil {
				t.Fatal(err)
			}
			clock.Advance(-2 * time.Minute)
		}, ask, nil, Stored, 2, []string{"reopened by ops@example.com (the API key is fixed): was abandoned (lease expired)"}},
		{"a skipped fire", nil, ask, nil, Stored, 1, []string{"reopened by ops@example.com (the API key is fixed): was skipped (missed)"}},
		{"a retry once reopened", func(t *testing.T, s *Store) {
			finish(t, s, "k", "w1", Finish{Status: RunFailed, Reason: "boom"})
			reopen(t, s, "k", ask)
		}, ask, nil, AlreadyStored, 2, []string{"reopened by ops@example.com (the API key is fixed): was failed (boom)"}},
		{"a reopened run that failed again", func(t *testing.T, s *Store) {
			finish(t, s, "k", "w1", Finish{Status: RunFailed, Reason: "boom"})
			reopen(t, s, "k", ask)
			finish(t, s, "k", "w2", Finish{Status: RunFailed, Reason: "boom again"})
		}, Reopen{Holder: "w3", By: "ada", Reason: "once more"}, nil, Stored, 3, []string{
			"reopened by ops@example.com (the API key is fixed): was failed (boom)",
			"reopened by ada (once more): was failed (boom again)"}},
		{"a succeeded run", func(t *testing.T, s *Store) { finish(t, s, "k", "w1", Finish{Status: RunSucceeded}) },
			ask, ErrRunFinished, 0, 0, nil},
		{"a running run", func(t *testing.T, s *Store) {}, ask, ErrRunRunning, 0, 0, nil},
		{"another run of the responsibility running", func(t *testing.T, s *Store) {
			finish(t, s, "k", "w1", Finish{Status: RunFailed, Reason: "boom"})
			if _, _, err := s.StartRun(context.Background(), NewRun{Key: "k-next", Kind: RunScheduled, Persona: "p",
				Responsibility: "r", FireAt: fireAt.Add(time.Hour), Holder: "w1"}); err != nil {
				t.Fatal(err)
			}
		}, ask, ErrBusy, 0, 0, nil},
		{"no one asking", func(t *testing.T, s *Store) { finish(t, s, "k", "w1", Finish{Status: RunFailed}) },
			Reopen{Holder: "w2"}, ErrInvalid, 0, 0, nil},
		{"a malformed holder", func(t *testing.T, s *Store) { finish(t, s, "k", "w1", Finish{Status: RunFailed}) },
			Reopen{Holder: "w2 ", By: "ada"}, ErrInvalid, 0, 0, nil},
		{"a negative lease", func(t *testing.T, s *Store) { finish(t, s, "k", "w1", Finish{Status: RunFailed}) },
			Reopen{Holder: "w2", By: "ada", LeaseFor: -time.Second}, ErrInvalid, 0, 0, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			eachDB(t, func(t *testing.T, s *Store) {
				ctx := context.Background()
				nr := NewRun{Key: "k", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt, Holder: "w1", LeaseFor: time.Minute}
				if tt.setup == nil {
					nr.Status, nr.Reason = RunSkipped, "missed"
				}
				if _, _, err := s.StartRun(ctx, nr); err != nil {
					t.Fatal(err)
				}
				if tt.setup != nil {
					tt.setup(t, s)
				}
				before, _ := s.Run(ctx, "k")
				beforeEvents := events(t, s, "k")
				run, out, err := s.ReopenRun(ctx, "k", tt.reopen)
				if tt.wantErr != nil {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("ReopenRun = %v, want %v", err, tt.wantErr)
					}
					if after, _ := s.Run(ctx, "k"); after != before {
						t.Errorf("a refused ReopenRun changed the run:\n%+v\nwas %+v", after, before)
					}
					if got := events(t, s, "k"); fmt.Sprint(got) != fmt.Sprint(beforeEvents) {
						t.Errorf("a refused ReopenRun recorded events %q", got)
					}
					return
				}
				if err != nil || out != tt.wantOutcome {
					t.Fatalf("ReopenRun = %v, %v; want %v", out, err, tt.wantOutcome)
				}
				stored, err := s.Run(ctx, "k")
				if err != nil {
					t.Fatal(err)
				}
				if run != stored {
					t.Errorf("ReopenRun returned %+v\nstored %+v", run, stored)
				}
				holder := tt.reopen.Holder
				want := Lease{Holder: holder, Expires: now.Add(leaseFor(tt.reopen.LeaseFor))}
				if out == AlreadyStored {
					want = before.Lease
				}
				if stored.Status != RunRunning || stored.Reason != "" || !stored.FinishedAt.IsZero() ||
					stored.Attempt != tt.wantAttempt || stored.Lease != want || stored.StartedAt != before.StartedAt {
					t.Errorf("reopened run = %+v; want running under %+v, attempt %d, no reason or finish, started as before",
						stored, want, tt.wantAttempt)
				}
				if got := events(t, s, "k"); fmt.Sprint(got) != fmt.Sprint(tt.wantEvents) {
					t.Errorf("events = %q\nwant %q", got, tt.wantEvents)
				}
				evs, _ := s.RunEvents(ctx, "k")
				if last := evs[len(evs)-1]; last.RunID != stored.ID || !last.At.Equal(now) || last.Kind != RunReopened {
					t.Errorf("last event = %+v; want run %d at %v", last, stored.ID, now)
				}
				// The reopened run is the holder's: it renews and finishes it.
				if _, err := s.RenewLease(ctx, "k", holder, time.Minute); err != nil {
					t.Errorf("RenewLease by the reopening holder: %v", err)
				}
				finish(t, s, "k", holder, Finish{Status: RunSucceeded, StopReason: "end_turn"})
			}, WithClock(clock.Now))
		})
	}
	eachDB(t, func(t *testing.T, s *Store) {
		if _, _, err := s.ReopenRun(context.Background(), "nope", ask); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("ReopenRun of an unknown key = %v, want ErrRunNotFound", err)
		}
		if _, err := s.RunEvents(context.Background(), "nope"); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("RunEvents of an unknown key = %v, want ErrRunNotFound", err)
		}
	}, WithClock(clock.Now))
}

// TestReopenReplyRun: a reply run reopens like a scheduled one, and deleting its thread deletes
// its events.
func TestReopenReplyRun(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t", "in-1", baseTime))
		r := startReply(t, s, "p", "t", seq)
		finish(t, s, r.Key, "w1", Finish{Status: RunFailed, Reason: "compose: no mailbox"})
		reopened := reopen(t, s, r.Key, Reopen{Holder: "w2", By: "console", Reason: "mailbox set"})
		if reopened.Kind != RunReply || reopened.Attempt != 2 || reopened.Lease.Holder != "w2" {
			t.Errorf("reopened reply run = %+v", reopened)
		}
		if got := events(t, s, r.Key); fmt.Sprint(got) != "[reopened by console (mailbox set): was failed (compose: no mailbox)]" {
			t.Errorf("events = %q", got)
		}
		if err := s.DeleteThread(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		if n := countRows(t, s, "run_events", ""); n != 0 {
			t.Errorf("%d run events left after DeleteThread", n)
		}
	})
}

// TestSkipFiresRecordsABacklogInOneStatement: the fires are recorded skipped with their
// reasons; fires that already have a run are left as they are, and a second call records
// nothing; a run that is not a skipped fire refuses the whole call.
func TestSkipFiresRecordsABacklogInOneStatement(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		running := startScheduled(t, s, "p", "r") // the fire at fireAt has a run
		skip := func(at time.Time, reason string) NewRun {
			return NewRun{Key: "p/r/" + at.Format(time.RFC3339), Kind: RunScheduled, Persona: "p", Responsibility: "r",
				FireAt: at, Status: RunSkipped, Reason: reason}
		}
		backlog := []NewRun{skip(fireAt.Add(-2*time.Hour), "missed"), skip(fireAt.Add(-time.Hour), "overlap"), skip(fireAt, "missed")}
		if n, err := s.SkipFires(ctx, backlog); err != nil || n != 2 {
			t.Fatalf("SkipFires = %d, %v; want 2 recorded", n, err)
		}
		if n, err := s.SkipFires(ctx, backlog); err != nil || n != 0 {
			t.Errorf("SkipFires again = %d, %v; want 0", n, err)
		}
		runs, err := s.Runs(ctx, RunQuery{Persona: "p", Responsibility: "r"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, fmt.Sprintf("%s %s %q attempt %d holder %q", r.FireAt.Format("15:04"), r.Status, r.Reason, r.Attempt, r.Lease.Holder))
		}
		want := []string{`08:00 running "" attempt 1 holder "w1"`, `06:00 skipped "missed" attempt 0 holder ""`, `07:00 skipped "overlap" attempt 0 holder ""`}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("trail = %q\nwant %q", got, want)
		}
		if r, _ := s.Run(ctx, running.Key); r != running {
			t.Errorf("the running fire changed: %+v", r)
		}
		bad := append(backlog, NewRun{Key: "x", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt.Add(time.Hour), Holder: "w"})
		if _, err := s.SkipFires(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("SkipFires with a running run = %v, want ErrInvalid", err)
		}
		if n := countRows(t, s, "runs", ""); n != 3 {
			t.Errorf("%d runs after a refused SkipFires, want 3", n)
		}
	})
}

// TestLastFires: the latest fire with a run of each responsibility, whatever its status; reply
// runs and personas not asked for are left out.
func TestLastFires(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for i, f := range []struct {
			persona, resp string
			at            time.Time
			status        RunStatus
		}{
			{"p", "r", fireAt, RunRunning}, {"p", "r", fireAt.Add(-time.Hour), RunSkipped}, {"p", "r", fireAt.Add(time.Hour), RunSkipped},
			{"p", "q", fireAt.Add(-time.Minute), RunRunning}, {"other", "r", fireAt.Add(time.Hour), RunRunning},
		} {
			if _, _, err := s.StartRun(ctx, NewRun{Key: fmt.Sprint(i), Kind: RunScheduled, Persona: f.persona, Responsibility: f.resp,
				FireAt: f.at, Status: f.status, Holder: "w", Reason: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		seq := mustAppend(t, s, msg("t", "in-1", baseTime))
		startReply(t, s, "p", "t", seq)
		got, err := s.LastFires(ctx, []string{"p", "absent"})
		want := map[PersonaResponsibility]time.Time{{"p", "r"}: fireAt.Add(time.Hour), {"p", "q"}: fireAt.Add(-time.Minute)}
		if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("LastFires = %v, %v; want %v", got, err, want)
		}
		if got, err := s.LastFires(ctx, nil); err != nil || len(got) != 0 {
			t.Errorf("LastFires(no personas) = %v, %v", got, err)
		}
	})
}

func finish(t *testing.T, s *Store, key, holder string, f Finish) {
	t.Helper()
	if _, err := s.FinishRun(context.Background(), key, holder, f); err != nil {
		t.Fatalf("FinishRun(%s, %s): %v", key, holder, err)
	}
}

func reopen(t *testing.T, s *Store, key string, r Reopen) Run {
	t.Helper()
	run, _, err := s.ReopenRun(context.Background(), key, r)
	if err != nil {
		t.Fatalf("ReopenRun(%s): %v", key, err)
	}
	return run
}

// events returns run key's events as "KIND by BY (REASON): was STATUS (REASON)" lines.
func events(t *testing.T, s *Store, key string) []string {
	t.Helper()
	evs, err := s.RunEvents(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%s by %s (%s): was %s (%s)", e.Kind, e.By, e.Reason, e.PriorStatus, e.PriorReason))
	}
	return out
}

// TestReopenReleasedForAnyWorker: a run reopened without a holder is running with its lease
// released, no faults and no retry time, so any worker resumes it at once (ResumeRun counts no
// fault); a second request is AlreadyStored with no second event.
func TestReopenReleasedForAnyWorker(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t", "in-1", baseTime))
		r := startReply(t, s, "p", "t", seq)
		for range 2 {
			if _, err := s.StopRun(ctx, r.Key, "w1", Stop{Reason: "panic", Class: FailureCrashed, Fault: true, RetryAfter: time.Hour}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.TakeOverRun(ctx, r.Key, "w1", 0); err != nil {
				clock.Advance(2 * time.Hour)
				if _, err := s.ResumeRun(ctx, r.Key, "w1", 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		finish(t, s, r.Key, "w1", Finish{Status: RunFailed, Reason: "too many faults", Class: FailureCrashed, Fault: true})
		now := clock.Now().UTC().Truncate(time.Microsecond)
		run, out, err := s.ReopenRun(ctx, r.Key, Reopen{By: "console:ada", Reason: "fixed the resolver"})
		if err != nil || out != Stored {
			t.Fatalf("ReopenRun = %v, %v", out, err)
		}
		stored, err := s.Run(ctx, r.Key)
		if err != nil {
			t.Fatal(err)
		}
		if run != stored || stored.Status != RunRunning || stored.Lease != (Lease{Expires: now}) || stored.Faults != 0 ||
			!stored.RetryAt.IsZero() || !stored.Resumable(now) {
			t.Fatalf("reopened = %+v\nstored %+v", run, stored)
		}
		if _, out, err := s.ReopenRun(ctx, r.Key, Reopen{By: "console:ada", Reason: "again"}); err != nil || out != AlreadyStored {
			t.Errorf("second reopen = %v, %v; want AlreadyStored", out, err)
		}
		resumed, err := s.ResumeRun(ctx, r.Key, "w2", 0)
		if err != nil || resumed.Faults != 0 || resumed.Lease.Holder != "w2" {
			t.Errorf("resume after the reopen = %+v, %v", resumed, err)
		}
		if got := events(t, s, r.Key); fmt.Sprint(got) != "[reopened by console:ada (fixed the resolver): was failed (too many faults)]" {
			t.Errorf("events = %q", got)
		}
	}, WithClock(clock.Now))
}

// TestAbandonRunAsRecordsWhoGaveUp: a run nobody works on (its lease released or expired) is
// abandoned with an event; a repeated request is AlreadyStored; a live lease, a finished run
// and an unknown key are refused.
func TestAbandonRunAsRecordsWhoGaveUp(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t", "in-1", baseTime))
		r := startReply(t, s, "p", "t", seq)
		if _, err := s.AbandonRunAs(ctx, r.Key, "console:ada", "x"); !errors.Is(err, ErrLeaseHeld) {
			t.Errorf("abandon under a live lease = %v, want ErrLeaseHeld", err)
		}
		if _, err := s.StopRun(ctx, r.Key, "w1", Stop{Reason: "529 overloaded", Class: FailureModelUnavailable, RetryAfter: time.Hour}); err != nil {
			t.Fatal(err)
		}
		if out, err := s.AbandonRunAs(ctx, r.Key, "console:ada", "the customer was called"); err != nil || out != Stored {
			t.Fatalf("AbandonRunAs = %v, %v", out, err)
		}
		if out, err := s.AbandonRunAs(ctx, r.Key, "console:bob", "again"); err != nil || out != AlreadyStored {
			t.Errorf("second AbandonRunAs = %v, %v; want AlreadyStored", out, err)
		}
		got, err := s.Run(ctx, r.Key)
		if err != nil || got.Status != RunAbandoned || got.Reason != "the customer was called" || !got.RetryAt.IsZero() {
			t.Errorf("abandoned run = %+v, %v", got, err)
		}
		if ev := events(t, s, r.Key); fmt.Sprint(ev) != "[abandoned by console:ada (the customer was called): was running (529 overloaded)]" {
			t.Errorf("events = %q", ev)
		}
		seq2 := mustAppend(t, s, msg("t", "in-2", baseTime))
		r2 := startReply(t, s, "p", "t", seq2)
		finish(t, s, r2.Key, "w1", Finish{Status: RunSucceeded})
		if _, err := s.AbandonRunAs(ctx, r2.Key, "console:ada", "x"); !errors.Is(err, ErrRunFinished) {
			t.Errorf("abandon a succeeded run = %v, want ErrRunFinished", err)
		}
		if _, err := s.AbandonRunAs(ctx, "nope", "console:ada", "x"); !errors.Is(err, ErrRunNotFound) {
			t.Errorf("abandon an unknown run = %v, want ErrRunNotFound", err)
		}
		if _, err := s.AbandonRunAs(ctx, r.Key, "", "x"); !errors.Is(err, ErrInvalid) {
			t.Errorf("abandon without who = %v, want ErrInvalid", err)
		}
	}, WithClock(clock.Now))
}
