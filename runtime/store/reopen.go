package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// RunEventKind says what a RunEvent records.
type RunEventKind string

// The kinds of run event.
const (
	// RunReopened: the run was reopened (ReopenRun): moved from failed, abandoned or skipped
	// back to running, to run again.
	RunReopened RunEventKind = "reopened"
	// RunGivenUp: an operator gave the running run up (AbandonRunAs): it is abandoned and
	// never runs again.
	RunGivenUp RunEventKind = "abandoned"
)

// RunEvent is one event of a run that its status does not show by itself, recorded with who
// caused it, when and why: a row of the run_events table. Any run kind has them.
type RunEvent struct {
	// ID orders a run's events: a later event has a larger ID.
	ID int64
	// RunID is the run's ID (Run.ID).
	RunID int64
	// At is when it happened, on the store's clock, in UTC to the microsecond.
	At   time.Time
	Kind RunEventKind
	// By is who asked for it: an operator's name, a service ("scheduler"), as the caller gave it.
	By string
	// Reason is why, as the caller gave it ("" for none).
	Reason string
	// PriorStatus and PriorReason are the run's status and reason just before the event (a
	// reopened run's row no longer holds them).
	PriorStatus RunStatus
	PriorReason string
}

// Reopen is a request to run a finished run again, for ReopenRun.
type Reopen struct {
	// Holder is the lease holder the run is reopened under (at most 191 characters), or ""
	// to reopen it with a released lease, for any worker to resume: what an operator's retry
	// through the store does (the console, `personagen retry`), when the process that will run
	// it is a service's (a reply run's worker resumes it once its message is pending again, see
	// RequeueReply; a scheduler's sweep runs a scheduled one).
	Holder string
	// LeaseFor is how long the lease lasts from now; 0 means DefaultRunLease. Ignored for a
	// released lease.
	LeaseFor time.Duration
	// By names who asks (required; at most 191 characters): an operator, a service.
	By string
	// Reason says why (optional; clipped to StoredPayloadLimit characters, invalid UTF-8
	// replaced).
	Reason string
}

// ErrRunRunning is returned (wrapped) by ReopenRun when the run is running under another
// holder: it is not finished, so there is nothing to reopen.
var ErrRunRunning = errors.New("store: run is running")

// ReopenRun moves the finished run key back to running so that it runs again: a run that
// failed, was abandoned or was skipped (a fire recorded missed, say) becomes running under
// r.Holder's lease for r.LeaseFor from now (or, for Holder "", with its lease released at
// once: Lease.Holder "", Expires now, and Attempt as it was: the worker that resumes it counts
// the attempt), with Attempt one more than before, its reason, finish
// time and retry time cleared and its Faults set to 0 (a request to run it again is a new
// budget of faults: a run that failed at its last allowed fault runs again instead of failing
// at once; stop reason and usage are kept until the next FinishRun), and a
// RunReopened event records who asked, when, why, and the status and reason it had. The update
// and the event are one transaction. It works on any run kind: the holder then resumes the run
// as a takeover would (its recorded rounds are replayed, not run again).
//
// It returns the run as stored and Stored; or, when the run is already running under
// r.Holder's lease (a retry of this call whose commit went through, or the holder's own run),
// or, for Holder "", running with a released lease (reopened before, or stopped, and waiting to
// be resumed), the run unchanged and AlreadyStored, with no second event. Once the reopened run has finished
// again, another call reopens it again.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or By, a malformed holder, a negative
// LeaseFor, or a bad store clock; ErrRunNotFound; ErrRunRunning when the run is running under
// another holder; ErrRunFinished when it succeeded (a succeeded run is not reopened: start
// another under a new key); a *BusyError when another run of its thread (reply run) or
// responsibility (scheduled run) is running, which must end first (nothing is written); ctx's
// error; the database's (wrapped). Lock races are retried as for StartRun.
func (s *Store) ReopenRun(ctx context.Context, key string, r Reopen) (Run, Outcome, error) {
	holder := r.Holder
	if holder == "" {
		holder = "-" // checked as a name below; the run is reopened released
	}
	if err := checkLeaseArgs(key, holder, r.LeaseFor); err != nil {
		return Run{}, 0, err
	}
	if err := checkKey("reopened by", r.By, MaxNameChars); err != nil {
		return Run{}, 0, fmt.Errorf("%w (run %q)", err, key)
	}
	reason := clipReason(r.Reason)
	now, err := s.clock()
	if err != nil {
		return Run{}, 0, err
	}
	fail := func(err error) (Run, Outcome, error) {
		return Run{}, 0, fmt.Errorf("store: reopen run %q: %w", key, err)
	}
	d := s.dialect
	var run Run
	var outcome Outcome
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rows []runRow
		if err := tx.SelectContext(ctx, &rows, d.rebind("SELECT "+runColumns+" FROM runs WHERE run_key = ?"+d.forUpdate()), key); err != nil {
			return err
		}
		if len(rows) == 0 {
			return fmt.Errorf("%w: key %q", ErrRunNotFound, key)
		}
		stored := rows[0].run()
		switch stored.Status {
		case RunRunning:
			if stored.Lease.Holder != r.Holder {
				return fmt.Errorf("%w: run %q is held by %q until %s", ErrRunRunning, key, stored.Lease.Holder,
					stored.Lease.Expires.Format(time.RFC3339Nano))
			}
			run, outcome = stored, AlreadyStored
			return nil
		case RunSucceeded:
			return fmt.Errorf("%w: run %q succeeded, and a succeeded run is not reopened (start another run under a new key)",
				ErrRunFinished, key)
		}
		run = stored
		run.Status, run.Reason, run.FinishedAt, run.Attempt = RunRunning, "", time.Time{}, stored.Attempt+1
		run.RetryAt, run.Faults = time.Time{}, 0
		run.Lease = Lease{Holder: r.Holder, Expires: dbNow(now.Add(leaseFor(r.LeaseFor)))}
		if r.Holder == "" {
			// No holder yet: the worker that resumes it counts the attempt.
			run.Lease.Expires, run.Attempt = dbNow(now), stored.Attempt
		}
		if _, err := tx.ExecContext(ctx, d.rebind(`UPDATE runs SET status = 'running', reason = '', finished_at = NULL,
			retry_at = NULL, faults = 0, lease_holder = ?, lease_expires_at = ?, attempt = ? WHERE id = ?`),
			r.Holder, d.timeArg(run.Lease.Expires), run.Attempt, stored.ID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO run_events (run_id, happened_at, kind, actor, reason,
			prior_status, prior_reason) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			stored.ID, d.timeArg(now), string(RunReopened), r.By, reason, string(stored.Status), stored.Reason); err != nil {
			return err
		}
		outcome = Stored
		return nil
	})
	switch {
	case err == nil:
		return run, outcome, nil
	case errors.Is(err, ErrRunNotFound):
		return Run{}, 0, err
	case isDuplicateKey(err):
		// The run's thread or responsibility has another running run.
		if busy, found, qerr := s.runningBeside(ctx, run); qerr == nil && found {
			return Run{}, 0, &BusyError{Running: busy}
		}
	}
	return fail(err)
}

// AbandonRunAs is AbandonRun on an operator's request: the running run key, whose lease has
// expired or was released (nobody works on it: it waits to be resumed, or its worker died), is
// marked abandoned with reason, and a RunGivenUp event records by, when, reason, and the
// status and reason the run had, in one transaction. It returns Stored; or AlreadyStored when
// the run is already abandoned, whatever the reason (a repeated request: nothing is written).
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or by, or a bad store clock;
// ErrRunNotFound; ErrLeaseHeld while a worker's lease on the run is live (it is being worked
// on: let it end, or abandon it once the lease expired); ErrRunFinished when the run has
// another final status; ctx's error; the database's (wrapped).
func (s *Store) AbandonRunAs(ctx context.Context, key, by, reason string) (Outcome, error) {
	if err := checkKey("run key", key, MaxNameChars); err != nil {
		return 0, err
	}
	if err := checkKey("abandoned by", by, MaxNameChars); err != nil {
		return 0, fmt.Errorf("%w (run %q)", err, key)
	}
	reason = clipReason(reason)
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	d := s.dialect
	var outcome Outcome
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rows []runRow
		if err := tx.SelectContext(ctx, &rows, d.rebind("SELECT "+runColumns+" FROM runs WHERE run_key = ?"+d.forUpdate()), key); err != nil {
			return err
		}
		if len(rows) == 0 {
			return fmt.Errorf("%w: key %q", ErrRunNotFound, key)
		}
		stored := rows[0].run()
		switch {
		case stored.Status == RunAbandoned:
			outcome = AlreadyStored
			return nil
		case stored.Status != RunRunning:
			return fmt.Errorf("%w: run %q is %s", ErrRunFinished, key, stored.Status)
		case stored.Lease.Live(now):
			return fmt.Errorf("%w: run %q is held by %q until %s", ErrLeaseHeld, key, stored.Lease.Holder,
				stored.Lease.Expires.Format(time.RFC3339Nano))
		}
		n, err := s.abandonIn(ctx, tx, key, reason, now)
		if err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%w: run %q changed while it was abandoned", ErrLeaseHeld, key)
		}
		if _, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO run_events (run_id, happened_at, kind, actor, reason,
			prior_status, prior_reason) VALUES (?, ?, ?, ?, ?, ?, ?)`),
			stored.ID, d.timeArg(now), string(RunGivenUp), by, reason, string(stored.Status), stored.Reason); err != nil {
			return err
		}
		outcome = Stored
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrRunNotFound) || errors.Is(err, ErrRunFinished) || errors.Is(err, ErrLeaseHeld) {
			return 0, err
		}
		return 0, fmt.Errorf("store: abandon run %q: %w", key, err)
	}
	return outcome, nil
}

// runningBeside returns the running run of r's persona and thread (a reply run) or
// responsibility (a scheduled run).
func (s *Store) runningBeside(ctx context.Context, r Run) (Run, bool, error) {
	if r.Kind == RunScheduled {
		return s.runWhere(ctx, "persona = ? AND responsibility = ? AND status = 'running'", r.Persona, r.Responsibility)
	}
	return s.runWhere(ctx, "persona = ? AND thread_id = ? AND status = 'running'", r.Persona, r.ThreadID)
}

// runEventRow is a run_events row as RunEvents reads it, joined from its run (the event columns
// are NULL for a run without events).
type runEventRow struct {
	RunID       int64          `db:"run_id"`
	ID          sql.NullInt64  `db:"id"`
	At          dbTime         `db:"happened_at"`
	Kind        sql.NullString `db:"kind"`
	By          sql.NullString `db:"actor"`
	Reason      sql.NullString `db:"reason"`
	PriorStatus sql.NullString `db:"prior_status"`
	PriorReason sql.NullString `db:"prior_reason"`
}

// RunEvents returns the events of the run key, oldest first (none for a run that has had
// none). One query. Errors: ErrRunNotFound (wrapped) when no run has the key; the database's
// (wrapped).
func (s *Store) RunEvents(ctx context.Context, key string) ([]RunEvent, error) {
	var rows []runEventRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT r.id AS run_id, e.id, e.happened_at, e.kind,
		e.actor, e.reason, e.prior_status, e.prior_reason
		FROM runs r LEFT JOIN run_events e ON e.run_id = r.id WHERE r.run_key = ? ORDER BY e.id`), key); err != nil {
		return nil, fmt.Errorf("store: read the events of run %q: %w", key, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: key %q", ErrRunNotFound, key)
	}
	var out []RunEvent
	for _, r := range rows {
		if !r.ID.Valid {
			continue
		}
		out = append(out, RunEvent{ID: r.ID.Int64, RunID: r.RunID, At: r.At.Time, Kind: RunEventKind(r.Kind.String),
			By: r.By.String, Reason: r.Reason.String, PriorStatus: RunStatus(r.PriorStatus.String), PriorReason: r.PriorReason.String})
	}
	return out, nil
}
