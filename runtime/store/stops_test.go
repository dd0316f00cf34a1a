package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A stopped attempt's run stays running with its stop recorded and its lease released, in one
// statement: the stopped holder can no longer renew or finish it, a retry of the stop is
// harmless, another message of the thread is told the run is resumable (or from when), and
// ResumeRun takes it — not before its retry time — without counting a fault.
func TestStopRunReleasesTheLease(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t", "in-1", baseTime))
		other := mustAppend(t, s, msg("t", "in-2", baseTime.Add(time.Minute)))
		run := startReply(t, s, "support", "t", seq)
		now := clock.Now().UTC().Truncate(time.Microsecond)
		stop := Stop{Reason: "openai: status 429 (transient, retry after 1h0m0s): rate limited", Class: FailureModelUnavailable,
			RetryAfter: time.Hour}
		if out, err := s.StopRun(ctx, run.Key, "w1", stop); err != nil || out != Stored {
			t.Fatalf("StopRun = %v, %v", out, err)
		}
		if out, err := s.StopRun(ctx, run.Key, "w1", stop); err != nil || out != AlreadyStored {
			t.Errorf("retried StopRun = %v, %v; want already stored", out, err)
		}
		got, err := s.Run(ctx, run.Key)
		want := run
		want.Reason, want.FailureClass, want.RetryAt, want.Lease = stop.Reason, stop.Class, now.Add(time.Hour), Lease{Expires: now}
		if err != nil || got != want {
			t.Fatalf("stopped run = %+v, %v\nwant %+v", got, err, want)
		}
		if _, err := s.RenewLease(ctx, run.Key, "w1", 0); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("RenewLease by the stopped holder = %v, want ErrLeaseLost", err)
		}
		if _, err := s.FinishRun(ctx, run.Key, "w1", Finish{Status: RunSucceeded}); !errors.Is(err, ErrLeaseLost) ||
			err.Error() != fmt.Sprintf(`store: finish run %q: store: run lease is no longer the caller's: run %q has a released lease (resume it with ResumeRun)`, run.Key, run.Key) {
			t.Errorf("FinishRun by the stopped holder = %v", err)
		}
		busy := func() *BusyError {
			_, _, err := s.StartRun(ctx, NewRun{Key: "support/t/2", Kind: RunReply, Persona: "support", ThreadID: "t", MessageSeq: other, Holder: "w2"})
			var b *BusyError
			if !errors.As(err, &b) || b.Running.Key != run.Key {
				t.Fatalf("StartRun of the thread's next message = %v, want a BusyError", err)
			}
			return b
		}
		if b := busy(); b.Resumable || b.Error() != fmt.Sprintf(`store: persona "support" already has run %q running on thread "t" `+
			`(resumable from its retry time %s; last stop: model_unavailable)`, run.Key, now.Add(time.Hour).Format(time.RFC3339Nano)) {
			t.Errorf("BusyError before the retry time = %v (resumable %t)", b, b.Resumable)
		}
		clock.Advance(59 * time.Minute)
		if _, err := s.ResumeRun(ctx, run.Key, "w2", time.Minute); !errors.Is(err, ErrRetryLater) {
			t.Errorf("ResumeRun before the retry time = %v, want ErrRetryLater", err)
		}
		clock.Advance(time.Minute)
		if b := busy(); !b.Resumable || b.Error() != fmt.Sprintf(`store: persona "support" already has run %q running on thread "t" `+
			`(resumable now: its lease was released at %s; last stop: model_unavailable)`, run.Key, now.Format(time.RFC3339Nano)) {
			t.Errorf("BusyError at the retry time = %v (resumable %t)", b, b.Resumable)
		}
		resumed, err := s.ResumeRun(ctx, run.Key, "w2", time.Minute)
		if err != nil || resumed.Attempt != 2 || resumed.Faults != 0 || resumed.Lease != (Lease{"w2", now.Add(time.Hour + time.Minute)}) {
			t.Fatalf("ResumeRun at the retry time = %+v, %v", resumed, err)
		}
		if b := busy(); b.Resumable || b.Error() != fmt.Sprintf(`store: persona "support" already has run %q running on thread "t" `+
			`(lease held by "w2" until %s; last stop: model_unavailable)`, run.Key, now.Add(time.Hour+time.Minute).Format(time.RFC3339Nano)) {
			t.Errorf("BusyError while resumed = %v", b)
		}
		if _, err := s.FinishRun(ctx, run.Key, "w2", Finish{Status: RunSucceeded}); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Run(ctx, run.Key); got.FailureClass != "" || got.Reason != "" || !got.RetryAt.IsZero() {
			t.Errorf("finished run keeps the stop: %+v", got)
		}
	}, WithClock(clock.Now))
}

// ResumeRun takes a run no live lease of another holder holds and counts a fault for each lease
// its holder did not release; it refuses a live lease and a finished run. TakeOverRun counts
// faults the same way.
func TestResumeRunCountsTheFaultsOfLeasesNotReleased(t *testing.T) {
	clock := newTestClock()
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for i, c := range []struct {
			name   string
			before func(key string) // what happened to w1's lease
			by     string
			take   bool // TakeOverRun instead of ResumeRun
			faults int
			err    error
		}{
			{"a released lease", func(k string) { s.StopRun(ctx, k, "w1", Stop{Reason: "stopped", Class: FailureShutdown}) }, "w2", false, 0, nil},
			{"a released lease, by its own holder", func(k string) { s.StopRun(ctx, k, "w1", Stop{Reason: "stopped", Class: FailureShutdown}) }, "w1", false, 0, nil},
			{"a stop that was a fault", func(k string) { s.StopRun(ctx, k, "w1", Stop{Reason: "boom", Class: FailureCrashed, Fault: true}) }, "w2", false, 1, nil},
			{"an expired lease: its holder died", func(string) { clock.Advance(2 * time.Minute) }, "w2", false, 1, nil},
			{"its own live lease: a restart under the same name", func(string) {}, "w1", false, 1, nil},
			{"another holder's live lease", func(string) {}, "w2", false, 0, ErrLeaseHeld},
			{"a finished run", func(k string) {
				s.FinishRun(ctx, k, "w1", Finish{Status: RunFailed, Reason: "x", Class: FailureMaxTurns})
			}, "w2", false, 0, ErrRunFinished},
			{"TakeOverRun of an expired lease", func(string) { clock.Advance(2 * time.Minute) }, "w2", true, 1, nil},
			{"TakeOverRun of a released lease", func(k string) { s.StopRun(ctx, k, "w1", Stop{Reason: "stopped", Class: FailureShutdown}) }, "w2", true, 0, nil},
		} {
			r, _, err := s.StartRun(ctx, NewRun{Key: fmt.Sprintf("k%d", i), Kind: RunScheduled, Persona: "p", Responsibility: "r",
				FireAt: fireAt.Add(time.Duration(i) * time.Hour), Holder: "w1", LeaseFor: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			c.before(r.Key)
			var got Run
			if c.take {
				got, err = s.TakeOverRun(ctx, r.Key, c.by, time.Minute)
			} else {
				got, err = s.ResumeRun(ctx, r.Key, c.by, time.Minute)
			}
			switch {
			case c.err != nil:
				if !errors.Is(err, c.err) {
					t.Errorf("%s: %v, want %v", c.name, err, c.err)
				}
			case err != nil || got.Lease.Holder != c.by || got.Attempt != 2 || got.Faults != c.faults:
				t.Errorf("%s: %+v, %v; want held by %s, attempt 2, %d faults", c.name, got, err, c.by, c.faults)
			}
			if r, _ := s.Run(ctx, r.Key); r.Status == RunRunning {
				s.AbandonRun(ctx, r.Key, "done") // free the responsibility for the next case
				clock.Advance(2 * time.Minute)
				s.AbandonRun(ctx, r.Key, "done")
			}
		}
	}, WithClock(clock.Now))
}

// FinishRun records a failed run's class and fault; it refuses a class outside the closed set
// and a class on a run that succeeded or was skipped, writing nothing; the table's CHECK refuses
// what the Go check would, so the migration's list and FailureClasses agree.
func TestFinishRunRecordsTheFailureClass(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		r := startScheduled(t, s, "p", "r")
		for _, f := range []Finish{
			{Status: RunFailed, Reason: "x", Class: "overloaded"},
			{Status: RunSucceeded, Class: FailureHostError},
			{Status: RunSkipped, Reason: "x", Class: FailureShutdown},
		} {
			if _, err := s.FinishRun(ctx, r.Key, "w1", f); !errors.Is(err, ErrInvalid) {
				t.Errorf("FinishRun(%+v) = %v, want ErrInvalid", f, err)
			}
		}
		if _, err := s.StopRun(ctx, r.Key, "w1", Stop{Reason: "x", Class: ""}); !errors.Is(err, ErrInvalid) {
			t.Errorf("StopRun without a class = %v, want ErrInvalid", err)
		}
		if _, err := s.StopRun(ctx, r.Key, "w1", Stop{Reason: "x", Class: FailureBusy, RetryAfter: -time.Second}); !errors.Is(err, ErrInvalid) {
			t.Errorf("StopRun with a negative retry = %v, want ErrInvalid", err)
		}
		f := Finish{Status: RunFailed, Reason: "agent: the run faulted too often", Class: FailureCrashed, Fault: true}
		if out, err := s.FinishRun(ctx, r.Key, "w1", f); err != nil || out != Stored {
			t.Fatalf("FinishRun = %v, %v", out, err)
		}
		if out, err := s.FinishRun(ctx, r.Key, "w1", f); err != nil || out != AlreadyStored {
			t.Errorf("retried FinishRun = %v, %v", out, err)
		}
		got, _ := s.Run(ctx, r.Key)
		if got.Status != RunFailed || got.FailureClass != FailureCrashed || got.Faults != 1 || got.Reason != f.Reason {
			t.Errorf("failed run = %+v", got)
		}
		for _, c := range append(FailureClasses, "") {
			if _, err := s.DB().ExecContext(ctx, s.dialect.rebind(`UPDATE runs SET failure_class = ? WHERE run_key = ?`), string(c), r.Key); err != nil {
				t.Errorf("the runs table refuses class %q: %v", c, err)
			}
		}
		if _, err := s.DB().ExecContext(ctx, s.dialect.rebind(`UPDATE runs SET failure_class = 'overloaded' WHERE run_key = ?`), r.Key); err == nil {
			t.Error("the runs table takes a class outside the closed set")
		}
	})
}

func TestFailureClassesAreTransientOrPermanent(t *testing.T) {
	var transient, permanent []FailureClass
	for _, c := range FailureClasses {
		if !c.Valid() {
			t.Errorf("%q is not Valid", c)
		}
		if c.Transient() {
			transient = append(transient, c)
		} else {
			permanent = append(permanent, c)
		}
	}
	if got := fmt.Sprint(transient, permanent); got != "[shutdown timeout model_unavailable unavailable busy unclassified crashed] "+
		"[invalid_answer request_refused context_window max_turns no_answer host_error]" {
		t.Errorf("transient, permanent = %s", got)
	}
	if FailureClass("").Valid() || FailureClass("").Transient() || FailureClass("nope").Valid() {
		t.Error("an empty or unknown class is valid")
	}
}

func TestUnavailableJudgesByTypeAndCode(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{driver.ErrBadConn, true},
		{fmt.Errorf("store: x: %w", mysql.ErrInvalidConn), true},
		{sql.ErrConnDone, true},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{&mysql.MySQLError{Number: 1040}, true},
		{&mysql.MySQLError{Number: 1053}, true},
		{&mysql.MySQLError{Number: 1205}, true},
		{&mysql.MySQLError{Number: 1213}, true},
		{&mysql.MySQLError{Number: 1290}, true},
		{&mysql.MySQLError{Number: 1836}, true},
		{&mysql.MySQLError{Number: 1927}, true},
		{&mysql.MySQLError{Number: 1062}, false},
		{&mysql.MySQLError{Number: 1406}, false},
		{ErrInvalid, false},
		{context.Canceled, false},
		{errors.New("connection refused"), false},
		{nil, false},
	} {
		if got := Unavailable(c.err); got != c.want {
			t.Errorf("Unavailable(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}
