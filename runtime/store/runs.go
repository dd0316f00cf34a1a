package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// RunKind says what a run does: answer a message, or carry out one fire of a responsibility.
type RunKind string

// The two kinds of run.
const (
	// RunReply answers one stored message of a thread (Run.ThreadID, Run.MessageSeq).
	RunReply RunKind = "reply"
	// RunScheduled carries out one fire of a responsibility (Run.Responsibility, Run.FireAt).
	RunScheduled RunKind = "scheduled"
)

// RunStatus is where a run stands. A run starts RunRunning (or is recorded RunSkipped at once)
// and moves exactly once to a final status; Run.Reason says why.
type RunStatus string

// The statuses of a run.
const (
	// RunRunning: started, not finished; Run.Lease says who works on it and until when.
	RunRunning RunStatus = "running"
	// RunSucceeded: the run completed its work.
	RunSucceeded RunStatus = "succeeded"
	// RunFailed: the run stopped with an error; the reason holds it.
	RunFailed RunStatus = "failed"
	// RunSkipped: the run did not do its work, and the reason says why (for example a fire that
	// overlapped a running run of its responsibility, a fire missed during downtime, or a
	// message not to be answered).
	RunSkipped RunStatus = "skipped"
	// RunAbandoned: the run was given up without an outcome: its lease expired and nobody took
	// it over (AbandonRun), or its holder stopped it (FinishRun).
	RunAbandoned RunStatus = "abandoned"
)

// DefaultRunLease is the lease StartRun, RenewLease and TakeOverRun grant when the caller asks
// for none.
const DefaultRunLease = 5 * time.Minute

// ErrRunNotFound is returned (wrapped) when no run has the given key.
var ErrRunNotFound = errors.New("store: run not found")

// ErrRunFinished is returned (wrapped) when a run already has a final status other than the
// one asked for; the stored run is unchanged.
var ErrRunFinished = errors.New("store: run already finished")

// ErrLeaseHeld is returned (wrapped) by TakeOverRun and AbandonRun while another holder's lease
// on the run is live.
var ErrLeaseHeld = errors.New("store: run lease is held by another holder")

// ErrLeaseLost is returned (wrapped) by RenewLease and FinishRun when the run is running under
// another holder's lease (it was taken over): the caller must stop working on it.
var ErrLeaseLost = errors.New("store: run lease is no longer the caller's")

// ErrBusy matches a *BusyError with errors.Is.
var ErrBusy = errors.New("store: another run is running")

// BusyError is returned by StartRun when the new run would be the second running run of its
// persona and thread (a reply run) or of its persona and responsibility (a scheduled run).
// Running is that running run, as stored. Nothing was written.
type BusyError struct {
	Running Run
}

// Error names the running run and its lease.
func (e *BusyError) Error() string {
	r := e.Running
	on := fmt.Sprintf("thread %q", r.ThreadID)
	if r.Kind == RunScheduled {
		on = fmt.Sprintf("responsibility %q", r.Responsibility)
	}
	return fmt.Sprintf("store: persona %q already has run %q running on %s (lease held by %q until %s)",
		r.Persona, r.Key, on, r.Lease.Holder, r.Lease.Expires.Format(time.RFC3339Nano))
}

// Is reports whether target is ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Lease says who works on a running run and until when. Holder is the caller-chosen identity of
// the worker (unique per worker: a replica and process id, or a random token kept across the
// worker's retries); Expires is when other callers may take the run over (TakeOverRun) or
// abandon it (AbandonRun), in UTC to the microsecond. A skipped run has no lease (Holder "",
// Expires zero).
type Lease struct {
	Holder  string
	Expires time.Time
}

// Live reports whether the lease keeps other callers out at now: it has a holder and now is
// before Expires.
func (l Lease) Live(now time.Time) bool { return l.Holder != "" && now.Before(l.Expires) }

// Run is one row of the runs table: a reply run or a scheduled run and its status trail. Times
// are UTC with microsecond precision; FinishedAt is zero while the run is running.
type Run struct {
	// ID is the store's id of the run, the ID of an OwnerRun round owner.
	ID int64
	// Key is the caller's unique key of the run (see NewRun.Key).
	Key  string
	Kind RunKind
	// Persona is the persona that runs.
	Persona string
	// ThreadID and MessageSeq name the message a reply run answers ("" and 0 for a scheduled
	// run). The run's view of its thread ends at that message.
	ThreadID   string
	MessageSeq int64
	// Responsibility and FireAt name the fire a scheduled run carries out ("" and zero for a
	// reply run); FireAt is the fire's scheduled instant.
	Responsibility string
	FireAt         time.Time
	// CompactionSeq is the boundary of the compaction the run started with (0: none), and
	// ViewSeq the seq of the thread's newest message then (0 for a scheduled run), so a resumed
	// reply run reads the thread as the first attempt did (see history.View).
	CompactionSeq int64
	ViewSeq       int64
	Status        RunStatus
	// Reason says why the run has its status: the error of a failed run, why it was skipped or
	// abandoned ("" for none). At most StoredPayloadLimit characters.
	Reason string
	// Lease is the lease of the run's current holder (the last one for a finished run).
	Lease Lease
	// Attempt counts the run's holders: 1 for the starter, plus one per takeover (0 for a run
	// recorded skipped).
	Attempt int
	// StartedAt is when the run was started (or recorded), FinishedAt when it reached a final
	// status.
	StartedAt  time.Time
	FinishedAt time.Time
	// StopReason is why the model stopped on the run's last call (the provider's stop reason,
	// "" for none), and Usage the run's total model usage in tokens, both as FinishRun stored
	// them.
	StopReason string
	Usage      chat.Usage
}

// NewRun is a run to start with StartRun.
type NewRun struct {
	// Key is the run's unique key, chosen by the caller so that a retry names the same run: the
	// runner derives it from the persona and the answered message's id, the scheduler from the
	// persona, the responsibility and the fire instant. At most 191 characters (it is also the
	// RunID of the run's rounds), not empty, not ending in a space. Hash long parts.
	Key  string
	Kind RunKind
	// Persona is the persona that runs (at most 191 characters).
	Persona string
	// ThreadID and MessageSeq name the stored message a reply run answers; both are required
	// for RunReply and must be empty for RunScheduled.
	ThreadID   string
	MessageSeq int64
	// Responsibility and FireAt name the fire of a scheduled run (FireAt is stored in UTC to the
	// microsecond); both are required for RunScheduled and must be empty for RunReply.
	Responsibility string
	FireAt         time.Time
	// CompactionSeq is the boundary of the thread's compaction the run starts with (0: none).
	CompactionSeq int64
	// ViewSeq is, for a reply run, the seq of the thread's newest message when the run starts:
	// the end of its view of the thread (see history.View). 0 means unrecorded; otherwise it is
	// at least MessageSeq. Scheduled runs leave it 0.
	ViewSeq int64
	// Status is RunRunning (or "") to start the run under a lease, or RunSkipped to record a
	// run that does not run (a skipped fire), finished at once with Reason and no lease.
	Status RunStatus
	// Reason is the skipped run's reason (clipped to StoredPayloadLimit characters); ignored for
	// a running run.
	Reason string
	// Holder is the lease holder of a running run (required for one; at most 191 characters).
	Holder string
	// LeaseFor is how long the lease lasts from now; 0 means DefaultRunLease.
	LeaseFor time.Duration
}

// Finish is the final state FinishRun records.
type Finish struct {
	// Status is RunSucceeded, RunFailed, RunSkipped or RunAbandoned.
	Status RunStatus
	// Reason says why (the error of a failed run); invalid UTF-8 becomes U+FFFD and the text is
	// clipped to StoredPayloadLimit characters.
	Reason string
	// StopReason is the provider's stop reason of the last model call (at most 191 characters).
	StopReason string
	// Usage is the run's total model usage in tokens (not an increment: a retried FinishRun
	// stores the same totals).
	Usage chat.Usage
}

// runRow is a runs row as the store reads it.
type runRow struct {
	ID               int64          `db:"id"`
	Key              string         `db:"run_key"`
	Kind             string         `db:"kind"`
	Persona          string         `db:"persona"`
	ThreadID         sql.NullString `db:"thread_id"`
	MessageSeq       sql.NullInt64  `db:"message_seq"`
	Responsibility   sql.NullString `db:"responsibility"`
	FireAt           dbTime         `db:"fire_at"`
	CompactionSeq    int64          `db:"compaction_seq"`
	ViewSeq          int64          `db:"view_seq"`
	Status           string         `db:"status"`
	Reason           string         `db:"reason"`
	LeaseHolder      string         `db:"lease_holder"`
	LeaseExpires     dbTime         `db:"lease_expires_at"`
	Attempt          int            `db:"attempt"`
	StartedAt        dbTime         `db:"started_at"`
	FinishedAt       dbTime         `db:"finished_at"`
	StopReason       string         `db:"stop_reason"`
	InputTokens      int64          `db:"input_tokens"`
	OutputTokens     int64          `db:"output_tokens"`
	CacheReadTokens  int64          `db:"cache_read_tokens"`
	CacheWriteTokens int64          `db:"cache_write_tokens"`
}

const runColumns = `id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq,
	view_seq, status, reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens`

func (r runRow) run() Run {
	return Run{
		ID: r.ID, Key: r.Key, Kind: RunKind(r.Kind), Persona: r.Persona,
		ThreadID: r.ThreadID.String, MessageSeq: r.MessageSeq.Int64,
		Responsibility: r.Responsibility.String, FireAt: r.FireAt.Time,
		CompactionSeq: r.CompactionSeq, ViewSeq: r.ViewSeq, Status: RunStatus(r.Status), Reason: r.Reason,
		Lease:   Lease{Holder: r.LeaseHolder, Expires: r.LeaseExpires.Time},
		Attempt: r.Attempt, StartedAt: r.StartedAt.Time, FinishedAt: r.FinishedAt.Time,
		StopReason: r.StopReason,
		Usage: chat.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
			CacheReadTokens: r.CacheReadTokens, CacheWriteTokens: r.CacheWriteTokens},
	}
}

// StartRun starts the run r describes, or returns the run already stored under r.Key. It is
// one INSERT (one round trip) when the key is new:
//
//   - Stored: this call created the run — running under r.Holder's lease until now + r.LeaseFor
//     (Attempt 1), or, with Status RunSkipped, finished at once as skipped.
//   - AlreadyStored: a run with r.Key exists (a retry, or another worker started it first); it
//     is returned as stored, unchanged, whatever its status and lease. Work on it only when
//     Lease.Holder is yours; a finished run is done; a running run under another holder's lease
//     is theirs until it expires (then TakeOverRun).
//
// So a retried StartRun (after any error, an ambiguous commit included) never leaves a second
// run. At most one run of a persona runs at a time per thread (reply runs) and per
// responsibility (scheduled runs), and a fire (persona, responsibility, FireAt) has at most one
// run: starting a second running run returns a *BusyError carrying the running one, and nothing
// is written.
//
// Errors: ErrInvalid (wrapped) for a key, persona, responsibility or holder that is empty, ends
// in a space, is longer than 191 characters or not valid UTF-8, an unknown kind or status, a
// reply run without its message or with a responsibility, a scheduled run without its fire or
// with a message, a FireAt outside years 1000 to 9999, a negative CompactionSeq or LeaseFor, a
// ViewSeq that is neither 0 nor (for a reply run) at least MessageSeq, or a store clock that
// returned such a time; ErrMessageNotFound (wrapped) when r.MessageSeq is not a
// message of r.ThreadID; ErrConflict (wrapped) when r.Key is stored for another persona, kind,
// message or fire, or the fire already has a run under another key; a *BusyError; ctx's error;
// or the database's (wrapped). Lock races (SQLite BUSY, MySQL deadlocks) are retried up to 5
// times.
func (s *Store) StartRun(ctx context.Context, r NewRun) (Run, Outcome, error) {
	if err := r.validate(); err != nil {
		return Run{}, 0, err
	}
	now, err := s.clock()
	if err != nil {
		return Run{}, 0, err
	}
	run := Run{
		Key: r.Key, Kind: r.Kind, Persona: r.Persona, ThreadID: r.ThreadID, MessageSeq: r.MessageSeq,
		Responsibility: r.Responsibility, CompactionSeq: r.CompactionSeq, ViewSeq: r.ViewSeq,
		Status: RunRunning, StartedAt: dbNow(now), Attempt: 1,
	}
	if r.Kind == RunScheduled {
		run.FireAt = dbNow(r.FireAt)
	}
	if r.Status == RunSkipped {
		run.Status, run.Reason, run.FinishedAt, run.Attempt = RunSkipped, clipReason(r.Reason), run.StartedAt, 0
	} else {
		run.Lease = Lease{Holder: r.Holder, Expires: dbNow(now.Add(leaseFor(r.LeaseFor)))}
	}
	d := s.dialect
	thread := "NULL"
	var threadArgs []any
	if r.Kind == RunReply {
		// The thread is read from the message, so a seq of another thread leaves it NULL and the
		// reply CHECK refuses the row.
		thread = "(SELECT thread_id FROM messages WHERE seq = ? AND thread_id = ?)"
		threadArgs = []any{r.MessageSeq, r.ThreadID}
	}
	args := []any{run.Key, string(run.Kind), run.Persona}
	args = append(args, threadArgs...)
	args = append(args, nullInt(run.MessageSeq), nullString(run.Responsibility), d.nullTime(run.FireAt),
		run.CompactionSeq, run.ViewSeq, string(run.Status), run.Reason, run.Lease.Holder, d.nullTime(run.Lease.Expires),
		run.Attempt, d.timeArg(run.StartedAt), d.nullTime(run.FinishedAt))
	query := d.rebind(`INSERT INTO runs (run_key, kind, persona, thread_id, message_seq, responsibility, fire_at,
		compaction_seq, view_seq, status, reason, lease_holder, lease_expires_at, attempt, started_at, finished_at)
		VALUES (?, ?, ?, ` + thread + `, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	fail := func(err error) (Run, Outcome, error) {
		return Run{}, 0, fmt.Errorf("store: start run %q: %w", r.Key, err)
	}
	// A key, fire or running run that collided can be gone by the time it is read (a concurrent
	// DeleteThread, a run that finished); insert again then.
	for range 3 {
		res, err := s.exec(ctx, query, args...)
		if err == nil {
			if run.ID, err = res.LastInsertId(); err != nil {
				return fail(err)
			}
			return run, Stored, nil
		}
		if !isDuplicateKey(err) {
			if ctx.Err() == nil && r.Kind == RunReply {
				if found, qerr := s.messageInThread(ctx, r.MessageSeq, r.ThreadID); qerr == nil && !found {
					return fail(fmt.Errorf("%w: seq %d in thread %q: %w", ErrMessageNotFound, r.MessageSeq, r.ThreadID, err))
				}
			}
			return fail(err)
		}
		stored, found, err := s.runWhere(ctx, "run_key = ?", r.Key)
		if err != nil {
			return fail(err)
		}
		if found {
			if err := sameRun(run, stored); err != nil {
				return fail(err)
			}
			return stored, AlreadyStored, nil
		}
		if r.Kind == RunScheduled {
			stored, found, err = s.runWhere(ctx, "persona = ? AND responsibility = ? AND fire_at = ?",
				r.Persona, r.Responsibility, d.timeArg(run.FireAt))
			if err != nil {
				return fail(err)
			}
			if found && stored.Key == r.Key {
				// Stored under this very key between the INSERT and the read by key: the INSERT
				// collided on another index first (it met the responsibility's running run while
				// a concurrent caller recorded this fire skipped).
				if err := sameRun(run, stored); err != nil {
					return fail(err)
				}
				return stored, AlreadyStored, nil
			}
			if found {
				return fail(fmt.Errorf("%w: the fire %s of %s/%s already has run %q", ErrConflict,
					run.FireAt.Format(time.RFC3339Nano), r.Persona, r.Responsibility, stored.Key))
			}
		}
		if run.Status == RunRunning {
			where, arg := "persona = ? AND thread_id = ? AND status = 'running'", r.ThreadID
			if r.Kind == RunScheduled {
				where, arg = "persona = ? AND responsibility = ? AND status = 'running'", r.Responsibility
			}
			stored, found, err = s.runWhere(ctx, where, r.Persona, arg)
			if err != nil {
				return fail(err)
			}
			if found {
				return Run{}, 0, &BusyError{Running: stored}
			}
		}
	}
	return fail(errors.New("a colliding run kept vanishing while the run was started"))
}

func (r NewRun) validate() error {
	where := func(format string, a ...any) error {
		return fmt.Errorf("%w: run %q: %s", ErrInvalid, r.Key, fmt.Sprintf(format, a...))
	}
	if err := checkKey("run key", r.Key, MaxNameChars); err != nil {
		return err
	}
	if err := checkKey("persona", r.Persona, MaxNameChars); err != nil {
		return where("%v", err)
	}
	switch r.Kind {
	case RunReply:
		if err := checkKey("thread id", r.ThreadID, MaxThreadIDChars); err != nil {
			return where("%v", err)
		}
		if r.MessageSeq < 1 {
			return where("a reply run needs the seq of the message it answers (got %d)", r.MessageSeq)
		}
		if r.Responsibility != "" || !r.FireAt.IsZero() {
			return where("a reply run has no responsibility or fire time")
		}
	case RunScheduled:
		if err := checkKey("responsibility", r.Responsibility, MaxNameChars); err != nil {
			return where("%v", err)
		}
		if err := checkTime("fire time", r.FireAt); err != nil {
			return where("%v", err)
		}
		if r.ThreadID != "" || r.MessageSeq != 0 {
			return where("a scheduled run answers no message")
		}
	default:
		return where("kind %q (want reply or scheduled)", r.Kind)
	}
	if r.CompactionSeq < 0 {
		return where("negative compaction seq %d", r.CompactionSeq)
	}
	if r.ViewSeq != 0 && (r.Kind != RunReply || r.ViewSeq < r.MessageSeq) {
		return where("view seq %d (want 0, or for a reply run at least the message seq %d)", r.ViewSeq, r.MessageSeq)
	}
	switch r.Status {
	case "", RunRunning:
		if err := checkKey("lease holder", r.Holder, MaxNameChars); err != nil {
			return where("%v", err)
		}
		if r.LeaseFor < 0 {
			return where("negative lease %v", r.LeaseFor)
		}
	case RunSkipped:
	default:
		return where("start status %q (want running or skipped)", r.Status)
	}
	return nil
}

// sameRun returns nil when stored is the run proposed describes (same kind, persona, message or
// fire), else an ErrConflict naming the first difference. Lease, status, compaction and view may
// differ: another worker started the run.
func sameRun(proposed, stored Run) error {
	for _, f := range []struct{ name, a, b string }{
		{"kind", string(stored.Kind), string(proposed.Kind)},
		{"persona", stored.Persona, proposed.Persona},
		{"thread id", stored.ThreadID, proposed.ThreadID},
		{"message seq", fmt.Sprint(stored.MessageSeq), fmt.Sprint(proposed.MessageSeq)},
		{"responsibility", stored.Responsibility, proposed.Responsibility},
		{"fire time", stored.FireAt.Format(time.RFC3339Nano), proposed.FireAt.Format(time.RFC3339Nano)},
	} {
		if f.a != f.b {
			return fmt.Errorf("%w: run %q is stored with %s %q, proposed %q", ErrConflict, proposed.Key, f.name, f.a, f.b)
		}
	}
	return nil
}

// RenewLease extends holder's lease on the running run key to now + d (0 means
// DefaultRunLease) and returns the new lease. The holder may renew as long as the run is
// running under its lease, even after the lease expired, until another caller took the run over
// (TakeOverRun) or abandoned it (AbandonRun); renew well before expiry (say every third of the
// lease) to keep others out. A retry is harmless. One UPDATE (one round trip); a second read when
// the UPDATE changed nothing.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or holder, a negative d, or a bad
// store clock; ErrRunNotFound; ErrRunFinished when the run has a final status; ErrLeaseLost
// when another holder holds it; ctx's error; the database's (wrapped).
func (s *Store) RenewLease(ctx context.Context, key, holder string, d time.Duration) (Lease, error) {
	if err := checkLeaseArgs(key, holder, d); err != nil {
		return Lease{}, err
	}
	now, err := s.clock()
	if err != nil {
		return Lease{}, err
	}
	lease := Lease{Holder: holder, Expires: dbNow(now.Add(leaseFor(d)))}
	fail := func(err error) (Lease, error) {
		return Lease{}, fmt.Errorf("store: renew lease of run %q for %q: %w", key, holder, err)
	}
	n, err := s.affected(ctx, s.dialect.rebind(`UPDATE runs SET lease_expires_at = ?
		WHERE run_key = ? AND status = 'running' AND lease_holder = ?`), s.dialect.timeArg(lease.Expires), key, holder)
	if err != nil {
		return fail(err)
	}
	if n == 1 {
		return lease, nil
	}
	// MySQL counts only changed rows: an UPDATE to the stored expiry matches but changes nothing.
	stored, err := s.Run(ctx, key)
	if err != nil {
		return Lease{}, err
	}
	if err := holding(stored, holder); err != nil {
		return fail(err)
	}
	return stored.Lease, nil
}

// TakeOverRun makes holder the lease holder of the running run key, whose current lease has
// expired, for d from now (0 means DefaultRunLease), and returns the run with Attempt increased
// by one. The swap is one compare-and-swap UPDATE: when several callers race for an expired
// lease exactly one wins; the others get ErrLeaseHeld. When holder already holds the lease
// (the winner retrying after an error, or the starter itself), the run is returned as stored.
// Two round trips: the UPDATE, then a read of the run.
//
// Lease times come from the store's clock, so replicas' clocks must agree to well within a
// lease. Errors: ErrInvalid (wrapped) for an empty or malformed key or holder, a negative d, or a
// bad store clock; ErrRunNotFound; ErrRunFinished (the run has a final status); ErrLeaseHeld
// (another holder's lease is live); ctx's error; the database's (wrapped).
func (s *Store) TakeOverRun(ctx context.Context, key, holder string, d time.Duration) (Run, error) {
	if err := checkLeaseArgs(key, holder, d); err != nil {
		return Run{}, err
	}
	now, err := s.clock()
	if err != nil {
		return Run{}, err
	}
	dl := s.dialect
	if _, err := s.exec(ctx, dl.rebind(`UPDATE runs SET lease_holder = ?, lease_expires_at = ?, attempt = attempt + 1
		WHERE run_key = ? AND status = 'running' AND lease_holder <> ? AND lease_expires_at <= ?`),
		holder, dl.timeArg(now.Add(leaseFor(d))), key, holder, dl.timeArg(now)); err != nil {
		return Run{}, fmt.Errorf("store: take over run %q for %q: %w", key, holder, err)
	}
	stored, err := s.Run(ctx, key)
	if err != nil {
		return Run{}, err
	}
	if stored.Status != RunRunning {
		return Run{}, fmt.Errorf("%w: run %q is %s", ErrRunFinished, key, stored.Status)
	}
	if stored.Lease.Holder != holder {
		return Run{}, fmt.Errorf("%w: run %q is held by %q until %s", ErrLeaseHeld, key, stored.Lease.Holder,
			stored.Lease.Expires.Format(time.RFC3339Nano))
	}
	return stored, nil
}

// FinishRun moves the run key, running under holder's lease, to its final state f, stamped
// with the store's clock, in one UPDATE (one round trip). It returns Stored, or AlreadyStored
// when the run already has exactly this final state from this holder (a retry after an error
// whose commit went through); a retry therefore never fails or changes the stored run. A lease
// that expired can still be finished by its holder as long as nobody took the run over.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or holder, a status other than
// succeeded, failed, skipped or abandoned, a stop reason over 191 characters or not valid
// UTF-8, negative usage, or a bad store clock; ErrRunNotFound; ErrRunFinished when the run has
// another final state (the stored one is kept); ErrLeaseLost when the run is running under
// another holder; ctx's error; the database's (wrapped).
func (s *Store) FinishRun(ctx context.Context, key, holder string, f Finish) (Outcome, error) {
	if err := checkLeaseArgs(key, holder, 0); err != nil {
		return 0, err
	}
	switch f.Status {
	case RunSucceeded, RunFailed, RunSkipped, RunAbandoned:
	default:
		return 0, fmt.Errorf("%w: run %q: final status %q (want succeeded, failed, skipped or abandoned)", ErrInvalid, key, f.Status)
	}
	if err := checkLen("stop reason", f.StopReason, MaxNameChars); err != nil {
		return 0, fmt.Errorf("%w (run %q)", err, key)
	}
	if u := f.Usage; u.InputTokens < 0 || u.OutputTokens < 0 || u.CacheReadTokens < 0 || u.CacheWriteTokens < 0 {
		return 0, fmt.Errorf("%w: run %q: negative usage %+v", ErrInvalid, key, u)
	}
	f.Reason = clipReason(f.Reason)
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	d := s.dialect
	n, err := s.affected(ctx, d.rebind(`UPDATE runs SET status = ?, reason = ?, finished_at = ?, stop_reason = ?,
		input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?
		WHERE run_key = ? AND status = 'running' AND lease_holder = ?`),
		string(f.Status), f.Reason, d.timeArg(now), f.StopReason,
		f.Usage.InputTokens, f.Usage.OutputTokens, f.Usage.CacheReadTokens, f.Usage.CacheWriteTokens, key, holder)
	if err != nil {
		return 0, fmt.Errorf("store: finish run %q: %w", key, err)
	}
	if n == 1 {
		return Stored, nil
	}
	stored, err := s.Run(ctx, key)
	if err != nil {
		return 0, err
	}
	if stored.Status == RunRunning {
		return 0, fmt.Errorf("store: finish run %q: %w", key, holding(stored, holder))
	}
	if stored.Lease.Holder == holder && stored.Status == f.Status && stored.Reason == f.Reason &&
		stored.StopReason == f.StopReason && stored.Usage == f.Usage {
		return AlreadyStored, nil
	}
	return 0, fmt.Errorf("%w: run %q is %s (reason %q)", ErrRunFinished, key, stored.Status, runtime.Clip(stored.Reason, 80))
}

// AbandonRun marks the running run key abandoned with reason (clipped to StoredPayloadLimit
// characters), once its lease has expired: for a worker that died mid-run, so that the run no
// longer blocks its thread or responsibility. One UPDATE, guarded by the expiry, so it never
// abandons a run whose holder renewed in time. It returns Stored, or AlreadyStored when the run
// is already abandoned with this reason (a retry).
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or a bad store clock;
// ErrRunNotFound; ErrLeaseHeld while the lease is live; ErrRunFinished when the run has another
// final state; ctx's error; the database's (wrapped).
func (s *Store) AbandonRun(ctx context.Context, key, reason string) (Outcome, error) {
	if err := checkKey("run key", key, MaxNameChars); err != nil {
		return 0, err
	}
	reason = clipReason(reason)
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	d := s.dialect
	n, err := s.affected(ctx, d.rebind(`UPDATE runs SET status = 'abandoned', reason = ?, finished_at = ?
		WHERE run_key = ? AND status = 'running' AND lease_expires_at <= ?`),
		reason, d.timeArg(now), key, d.timeArg(now))
	if err != nil {
		return 0, fmt.Errorf("store: abandon run %q: %w", key, err)
	}
	if n == 1 {
		return Stored, nil
	}
	stored, err := s.Run(ctx, key)
	if err != nil {
		return 0, err
	}
	switch {
	case stored.Status == RunRunning:
		return 0, fmt.Errorf("%w: run %q is held by %q until %s", ErrLeaseHeld, key, stored.Lease.Holder,
			stored.Lease.Expires.Format(time.RFC3339Nano))
	case stored.Status == RunAbandoned && stored.Reason == reason:
		return AlreadyStored, nil
	}
	return 0, fmt.Errorf("%w: run %q is %s", ErrRunFinished, key, stored.Status)
}

// Run returns the run stored under key. One query. Errors: ErrRunNotFound (wrapped), or the
// database's (wrapped).
func (s *Store) Run(ctx context.Context, key string) (Run, error) {
	r, found, err := s.runWhere(ctx, "run_key = ?", key)
	if err != nil {
		return Run{}, fmt.Errorf("store: read run %q: %w", key, err)
	}
	if !found {
		return Run{}, fmt.Errorf("%w: key %q", ErrRunNotFound, key)
	}
	return r, nil
}

// RunQuery selects runs for Runs; every field left zero selects all.
type RunQuery struct {
	Persona        string
	Kind           RunKind
	ThreadID       string
	Responsibility string
	Status         RunStatus
	// Limit keeps only the Limit most recently started of the selected runs; 0 keeps all.
	Limit int
}

// Runs returns the runs q selects, oldest first in the order they were started (the status
// trail: for a persona's responsibility every fire with its outcome, FireAt the scheduled and
// StartedAt the actual time; for a thread every reply run). One query. Errors: the database's
// (wrapped).
func (s *Store) Runs(ctx context.Context, q RunQuery) ([]Run, error) {
	var conds []string
	var args []any
	for _, c := range []struct{ col, v string }{
		{"persona", q.Persona}, {"kind", string(q.Kind)}, {"thread_id", q.ThreadID},
		{"responsibility", q.Responsibility}, {"status", string(q.Status)},
	} {
		if c.v != "" {
			conds = append(conds, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	query := "SELECT " + runColumns + " FROM runs"
	if len(conds) > 0 {
		query += " WHERE " + strings.Join(conds, " AND ")
	}
	query += " ORDER BY id DESC"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	var rows []runRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(query), args...); err != nil {
		return nil, fmt.Errorf("store: read runs: %w", err)
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	slices.Reverse(out)
	return out, nil
}

// runWhere reads the one run matching where (a condition on runs' columns with '?' args).
func (s *Store) runWhere(ctx context.Context, where string, args ...any) (Run, bool, error) {
	var rows []runRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind("SELECT "+runColumns+" FROM runs WHERE "+where), args...); err != nil {
		return Run{}, false, err
	}
	if len(rows) == 0 {
		return Run{}, false, nil
	}
	return rows[0].run(), true, nil
}

// holding returns nil when the stored run is running under holder's lease, else the error a
// caller that thought it held the run gets.
func holding(r Run, holder string) error {
	if r.Status != RunRunning {
		return fmt.Errorf("%w: run %q is %s", ErrRunFinished, r.Key, r.Status)
	}
	if r.Lease.Holder != holder {
		return fmt.Errorf("%w: run %q was taken over by %q", ErrLeaseLost, r.Key, r.Lease.Holder)
	}
	return nil
}

func checkLeaseArgs(key, holder string, d time.Duration) error {
	if err := checkKey("run key", key, MaxNameChars); err != nil {
		return err
	}
	if err := checkKey("lease holder", holder, MaxNameChars); err != nil {
		return fmt.Errorf("%w (run %q)", err, key)
	}
	if d < 0 {
		return fmt.Errorf("%w: run %q: negative lease %v", ErrInvalid, key, d)
	}
	return nil
}

func leaseFor(d time.Duration) time.Duration {
	if d == 0 {
		return DefaultRunLease
	}
	return d
}

// clipReason makes a run's reason storable: valid UTF-8, at most StoredPayloadLimit characters.
func clipReason(s string) string { return runtime.Clip(toValidUTF8(s), StoredPayloadLimit) }

// dbNow is t as the store stores and reads it back: UTC, truncated to the microsecond.
func dbNow(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func nullInt(v int64) any {
	if v == 0 {
		return nil
	}
	return v
}

func nullString(v string) any {
	if v == "" {
		return nil
	}
	return v
}
