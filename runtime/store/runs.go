package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

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
// and moves exactly once to a final status; Run.Reason says why. On the way it may pause as
// RunWaiting, as often as its turns ask for approval, and go back to RunRunning when the calls
// it waits for are decided.
type RunStatus string

// The statuses of a run.
const (
	// RunRunning: started, not finished; Run.Lease says who works on it and until when.
	RunRunning RunStatus = "running"
	// RunWaiting: paused until a person decided the calls of its current turn that need
	// approval (see Approval), or their deadline passed. A waiting run holds no lease (Lease.Holder
	// "", Lease.Expires when it paused) and no worker works on it, but it keeps its thread (or
	// responsibility) as a running run does: StartRun of another run there returns a *BusyError.
	// ResumeWaiting makes it running again once every call is decided.
	RunWaiting RunStatus = "waiting"
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

// DefaultRunLease is the lease StartRun, RenewLease, TakeOverRun and ResumeRun grant when the
// caller asks for none.
const DefaultRunLease = 5 * time.Minute

// FailureClass says what kind of error stopped a run's attempt or ended the run: Run.FailureClass
// of a running run is the class of its last attempt's stop (the run is resumable), of a failed run
// the class of the error that ended it. The classes are a closed set (the runs table refuses any
// other value); "" means none. Which classes end a run and which leave it resumable is the
// runner's rule (see runtime/agent and docs/reliability.md); the store records them.
type FailureClass string

// The failure classes. The first six are transient (the run stays running with its lease
// released, for any worker to resume), the last seven are permanent (the run is failed and never
// calls the model again). FailureUnclassified and FailureCrashed are faults (Run.Faults): the run
// is retried until it has had a bounded number of them, then failed with that class.
const (
	// FailureShutdown: the attempt's context was cancelled, as in a graceful stop of the worker.
	FailureShutdown FailureClass = "shutdown"
	// FailureTimeout: a deadline passed (the attempt's context deadline, or a network timeout
	// outside a model call).
	FailureTimeout FailureClass = "timeout"
	// FailureModelUnavailable: a model call failed in a way that may go away (a network error, a
	// timeout, status 408, 409, 429 or 5xx); Run.RetryAt holds the provider's retry time when it
	// gave one.
	FailureModelUnavailable FailureClass = "model_unavailable"
	// FailureUnavailable: the database or another service could not be reached: a lost
	// connection, a network error, a lock race that outlasted the store's retries, a server
	// shutting down or read-only during a failover.
	FailureUnavailable FailureClass = "unavailable"
	// FailureBusy: another worker holds something the run needs (the thread's compaction claim).
	FailureBusy FailureClass = "busy"
	// FailureUnclassified: an error of no known class (say a resolver's own error). It is a
	// fault: retried, and the class a run fails with at its last allowed fault.
	FailureUnclassified FailureClass = "unclassified"
	// FailureCrashed: an attempt panicked, or its worker died without releasing the lease. A
	// fault, like FailureUnclassified.
	FailureCrashed FailureClass = "crashed"
	// FailureInvalidAnswer: the model's answer is malformed (provider.ErrMalformedResponse) or
	// cannot be carried out or recorded (too many tool calls, a call without a name, fields over
	// the store's limits).
	FailureInvalidAnswer FailureClass = "invalid_answer"
	// FailureRequestRefused: the provider refused the request itself (a permanent model call
	// error: status 400, 401, 403, 404, 413, 422, …, or settings an adapter cannot send).
	FailureRequestRefused FailureClass = "request_refused"
	// FailureContextWindow: the request does not fit the model's context window, even after the
	// thread was compacted.
	FailureContextWindow FailureClass = "context_window"
	// FailureMaxTurns: the run made its limit of model calls without a final answer.
	FailureMaxTurns FailureClass = "max_turns"
	// FailureNoAnswer: the model ended without a usable final answer (no text, or a refusal).
	FailureNoAnswer FailureClass = "no_answer"
	// FailureHostError: the host's code or configuration failed the run: Compose failed or
	// returned nil, the persona has no mailbox address, the answered message has nobody to reply
	// to, or the reply Compose built cannot be stored.
	FailureHostError FailureClass = "host_error"
)

// FailureClasses lists every failure class, transient ones first, in the order of their
// declaration.
var FailureClasses = []FailureClass{FailureShutdown, FailureTimeout, FailureModelUnavailable, FailureUnavailable,
	FailureBusy, FailureUnclassified, FailureCrashed, FailureInvalidAnswer, FailureRequestRefused,
	FailureContextWindow, FailureMaxTurns, FailureNoAnswer, FailureHostError}

// Valid reports whether c is one of FailureClasses.
func (c FailureClass) Valid() bool { return slices.Contains(FailureClasses, c) }

// Transient reports whether c leaves a run resumable: FailureShutdown, FailureTimeout,
// FailureModelUnavailable, FailureUnavailable, FailureBusy, and the faults FailureUnclassified
// and FailureCrashed (until the runner's bound on faults).
func (c FailureClass) Transient() bool {
	i := slices.Index(FailureClasses, c)
	return i >= 0 && i <= slices.Index(FailureClasses, FailureCrashed)
}

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

// ErrWaiting matches a *WaitingError with errors.Is: the run waits for approval.
var ErrWaiting = errors.New("store: the run waits for approval")

// BusyError is returned by StartRun when the new run would be the second unfinished run of its
// persona and thread (a reply run) or of its persona and responsibility (a scheduled run): a
// thread or responsibility stays owned by its unfinished run — running or waiting — until that
// run finishes. Running is that run, as stored, read at At (the store's clock); Resumable says
// whether it could be resumed then (Run.Resumable: it is running, no live lease holds it and its
// retry time, if any, has come), so the caller resumes it (ResumeRun, or the runner's Reply of its
// message) instead of waiting for it. A waiting run (Running.Status RunWaiting) is not Resumable:
// it resumes when its calls are decided (ResumeWaiting). Nothing was written.
type BusyError struct {
	Running   Run
	At        time.Time
	Resumable bool
}

// Error names the running run and whether it is resumable now, for example `store: persona
// "support" already has run "reply:support/…" running on thread "t-1" (resumable now: its lease
// was released at 2026-03-06T14:50:00Z; last stop: model_unavailable)`, or (lease held by "w1"
// until …), or (resumable from its retry time …; last stop: model_unavailable).
func (e *BusyError) Error() string {
	r := e.Running
	on := fmt.Sprintf("thread %q", r.ThreadID)
	if r.Kind == RunScheduled {
		on = fmt.Sprintf("responsibility %q", r.Responsibility)
	}
	var state string
	switch {
	case r.Status == RunWaiting:
		state = "waiting for approval since " + r.Lease.Expires.Format(time.RFC3339Nano)
	case r.Lease.Live(e.At):
		state = fmt.Sprintf("lease held by %q until %s", r.Lease.Holder, r.Lease.Expires.Format(time.RFC3339Nano))
	case r.RetryAt.After(e.At):
		state = "resumable from its retry time " + r.RetryAt.Format(time.RFC3339Nano)
	case r.Lease.Holder == "":
		state = "resumable now: its lease was released at " + r.Lease.Expires.Format(time.RFC3339Nano)
	default:
		state = fmt.Sprintf("resumable now: the lease of %q expired at %s", r.Lease.Holder, r.Lease.Expires.Format(time.RFC3339Nano))
	}
	if r.FailureClass != "" {
		state += "; last stop: " + string(r.FailureClass)
	}
	return fmt.Sprintf("store: persona %q already has run %q %s on %s (%s)", r.Persona, r.Key, r.Status, on, state)
}

// Is reports whether target is ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Lease says who works on a running run and until when. Holder is the caller-chosen identity of
// the worker (unique per worker: a replica and process id, or a random token kept across the
// worker's retries); Expires is when other callers may take the run over (TakeOverRun, ResumeRun)
// or abandon it (AbandonRun), in UTC to the microsecond. A skipped run has no lease (Holder "",
// Expires zero); a running run whose last attempt stopped (StopRun) has a released lease (Holder
// "", Expires the release time), which any caller may take at once.
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
	// abandoned, the error that stopped the last attempt of a running run (StopRun); "" for
	// none. At most StoredPayloadLimit characters.
	Reason string
	// FailureClass is the class of the error Reason holds ("" for none): of the stop of a
	// running run's last attempt, or of the error that ended a failed (or abandoned) run.
	FailureClass FailureClass
	// RetryAt is when a stopped run may be resumed (ResumeRun refuses it before then); zero for
	// at once. Set by StopRun from Stop.RetryAfter, cleared when the run finishes.
	RetryAt time.Time
	// Lease is the lease of the run's current holder (the last one for a finished run; a released
	// lease, Holder "", for a run whose last attempt stopped).
	Lease Lease
	// Attempt counts the run's holders: 1 for the starter, plus one per takeover or resume (0 for
	// a run recorded skipped).
	Attempt int
	// Faults counts the run's attempts that ended by a fault: a Stop or Finish with Fault set (a
	// panic, an error of no known class), and each takeover or resume of a lease its holder did
	// not release (the worker died, or restarted under the same name).
	Faults int
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

// Resumable reports whether ResumeRun would let a caller resume r at now: r is running, no live
// lease holds it (released or expired), and its retry time, if any, is not after now.
func (r Run) Resumable(now time.Time) bool {
	return r.Status == RunRunning && !r.Lease.Live(now) && !r.RetryAt.After(now)
}

// Finish is the final state FinishRun records.
type Finish struct {
	// Status is RunSucceeded, RunFailed, RunSkipped or RunAbandoned.
	Status RunStatus
	// Reason says why (the error of a failed run); invalid UTF-8 becomes U+FFFD and the text is
	// clipped to StoredPayloadLimit characters.
	Reason string
	// Class is the failure class of a failed or abandoned run's error ("" for none); a
	// succeeded or skipped run has none.
	Class FailureClass
	// Fault counts the attempt that ends here as a fault (Run.Faults grows by one): the run
	// fails at a panic or an error of no known class.
	Fault bool
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
	FailureClass     string         `db:"failure_class"`
	RetryAt          dbTime         `db:"retry_at"`
	LeaseHolder      string         `db:"lease_holder"`
	LeaseExpires     dbTime         `db:"lease_expires_at"`
	Attempt          int            `db:"attempt"`
	Faults           int            `db:"faults"`
	StartedAt        dbTime         `db:"started_at"`
	FinishedAt       dbTime         `db:"finished_at"`
	StopReason       string         `db:"stop_reason"`
	InputTokens      int64          `db:"input_tokens"`
	OutputTokens     int64          `db:"output_tokens"`
	CacheReadTokens  int64          `db:"cache_read_tokens"`
	CacheWriteTokens int64          `db:"cache_write_tokens"`
}

const runColumns = `id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq,
	view_seq, status, reason, failure_class, retry_at, lease_holder, lease_expires_at, attempt, faults, started_at,
	finished_at, stop_reason,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens`

func (r runRow) run() Run {
	return Run{
		ID: r.ID, Key: r.Key, Kind: RunKind(r.Kind), Persona: r.Persona,
		ThreadID: r.ThreadID.String, MessageSeq: r.MessageSeq.Int64,
		Responsibility: r.Responsibility.String, FireAt: r.FireAt.Time,
		CompactionSeq: r.CompactionSeq, ViewSeq: r.ViewSeq, Status: RunStatus(r.Status), Reason: r.Reason,
		FailureClass: FailureClass(r.FailureClass), RetryAt: r.RetryAt.Time,
		Lease:   Lease{Holder: r.LeaseHolder, Expires: r.LeaseExpires.Time},
		Attempt: r.Attempt, Faults: r.Faults, StartedAt: r.StartedAt.Time, FinishedAt: r.FinishedAt.Time,
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
			where, arg := "persona = ? AND thread_id = ? AND status IN ('running', 'waiting')", r.ThreadID
			if r.Kind == RunScheduled {
				where, arg = "persona = ? AND responsibility = ? AND status IN ('running', 'waiting')", r.Responsibility
			}
			stored, found, err = s.runWhere(ctx, where, r.Persona, arg)
			if err != nil {
				return fail(err)
			}
			if found {
				return Run{}, 0, &BusyError{Running: stored, At: dbNow(now), Resumable: stored.Resumable(now)}
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
// when another holder holds it or it waits for approval (RunWaiting); ctx's error; the
// database's (wrapped).
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
// expired or was released (StopRun), for d from now (0 means DefaultRunLease), and returns the
// run with Attempt increased by one, and Faults by one when the lease was not released (its
// holder died). The swap is one compare-and-swap UPDATE: when several callers race for an
// expired lease exactly one wins; the others get ErrLeaseHeld. When holder already holds the
// lease (the winner retrying after an error, or the starter itself), the run is returned as
// stored. Two round trips: the UPDATE, then a read of the run.
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
	// MySQL evaluates SET assignments left to right, so faults reads lease_holder before it is
	// replaced.
	if _, err := s.exec(ctx, dl.rebind(`UPDATE runs SET faults = faults + CASE WHEN lease_holder = '' THEN 0 ELSE 1 END,
		lease_holder = ?, lease_expires_at = ?, attempt = attempt + 1
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

// ErrRetryLater is returned (wrapped) by ResumeRun when the run's retry time (Run.RetryAt) has
// not come: resume it then.
var ErrRetryLater = errors.New("store: the run's retry time has not come")

// ResumeRun makes holder the lease holder of the running run key for d from now (0 means
// DefaultRunLease), for a worker that is not working on it, and returns the run as stored after
// the UPDATE. It takes the run when no other worker's live lease holds it: its lease was
// released (StopRun), expired, or is holder's own — a worker that restarted under the same
// name, or whose attempt stopped without recording it, is not working on it any more. Attempt
// grows by one, and Faults by one unless the lease was released (the previous attempt did not
// stop cleanly). A run whose retry time is after now is not taken. One compare-and-swap UPDATE,
// then a read of the run: of several callers racing, one wins and the others get ErrLeaseHeld.
// It is not idempotent (a retry after an ambiguous commit counts one more fault); a caller that
// may already hold the run (an attempt in progress) must not call it.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or holder, a negative d, or a bad
// store clock; ErrRunNotFound; ErrRunFinished (the run has a final status); ErrRetryLater (the
// run's retry time has not come); ErrLeaseHeld (another holder's lease is live); ctx's error;
// the database's (wrapped).
func (s *Store) ResumeRun(ctx context.Context, key, holder string, d time.Duration) (Run, error) {
	if err := checkLeaseArgs(key, holder, d); err != nil {
		return Run{}, err
	}
	now, err := s.clock()
	if err != nil {
		return Run{}, err
	}
	dl := s.dialect
	fail := func(err error) (Run, error) {
		return Run{}, fmt.Errorf("store: resume run %q for %q: %w", key, holder, err)
	}
	// MySQL evaluates SET assignments left to right: faults reads lease_holder before it is
	// replaced.
	n, err := s.affected(ctx, dl.rebind(`UPDATE runs SET faults = faults + CASE WHEN lease_holder = '' THEN 0 ELSE 1 END,
		attempt = attempt + 1, lease_holder = ?, lease_expires_at = ?
		WHERE run_key = ? AND status = 'running' AND (retry_at IS NULL OR retry_at <= ?)
		AND (lease_holder = '' OR lease_holder = ? OR lease_expires_at <= ?)`),
		holder, dl.timeArg(now.Add(leaseFor(d))), key, dl.timeArg(now), holder, dl.timeArg(now))
	if err != nil {
		return fail(err)
	}
	stored, err := s.Run(ctx, key)
	switch {
	case err != nil:
		return Run{}, err
	case n == 1 && stored.Status == RunRunning && stored.Lease.Holder == holder:
		return stored, nil
	case stored.Status != RunRunning:
		return fail(fmt.Errorf("%w: run %q is %s", ErrRunFinished, key, stored.Status))
	case stored.RetryAt.After(now):
		return fail(fmt.Errorf("%w: run %q may be resumed from %s (its last stop: %s)", ErrRetryLater, key,
			stored.RetryAt.Format(time.RFC3339Nano), runtime.Clip(stored.Reason, 200)))
	}
	return fail(fmt.Errorf("%w: run %q is held by %q until %s", ErrLeaseHeld, key, stored.Lease.Holder,
		stored.Lease.Expires.Format(time.RFC3339Nano)))
}

// Stop is how an attempt that did not finish its run ended, as StopRun records it.
type Stop struct {
	// Reason is the error that stopped the attempt; invalid UTF-8 becomes U+FFFD and the text is
	// clipped to StoredPayloadLimit characters.
	Reason string
	// Class is the error's failure class (required).
	Class FailureClass
	// RetryAfter is how long from now the run must not be resumed (a provider's Retry-After);
	// 0 for at once.
	RetryAfter time.Duration
	// Fault counts the attempt as a fault (Run.Faults grows by one): it panicked, or stopped with
	// an error of no known class.
	Fault bool
}

// StopRun records that holder's attempt at the running run key stopped without finishing it,
// in one UPDATE (one round trip): Reason, FailureClass, RetryAt (now + RetryAfter, none for 0),
// Faults plus one when st.Fault, and the lease released — Holder "", Expires now — so any
// worker, this one included, may resume the run at once (ResumeRun), or from RetryAt. The run
// stays running: it keeps its thread or responsibility until it finishes. It returns Stored, or
// AlreadyStored when the run already stands released with this reason and class (a retry after
// an error whose commit went through).
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or holder, a class that is not one
// of FailureClasses, a negative RetryAfter, or a bad store clock; ErrRunNotFound;
// ErrRunFinished when the run has a final status; ErrLeaseLost when another holder holds it, its
// lease is already released, or it waits for approval; ctx's error; the database's (wrapped).
func (s *Store) StopRun(ctx context.Context, key, holder string, st Stop) (Outcome, error) {
	if err := checkLeaseArgs(key, holder, 0); err != nil {
		return 0, err
	}
	switch {
	case !st.Class.Valid():
		return 0, fmt.Errorf("%w: run %q: failure class %q (want one of %v)", ErrInvalid, key, st.Class, FailureClasses)
	case st.RetryAfter < 0:
		return 0, fmt.Errorf("%w: run %q: negative retry delay %v", ErrInvalid, key, st.RetryAfter)
	}
	st.Reason = clipReason(st.Reason)
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	var retryAt time.Time
	if st.RetryAfter > 0 {
		retryAt = now.Add(st.RetryAfter)
		if err := checkTime("retry time", retryAt); err != nil {
			return 0, fmt.Errorf("%w (run %q)", err, key)
		}
	}
	fault := 0
	if st.Fault {
		fault = 1
	}
	d := s.dialect
	n, err := s.affected(ctx, d.rebind(`UPDATE runs SET reason = ?, failure_class = ?, retry_at = ?,
		faults = faults + ?, lease_holder = '', lease_expires_at = ?
		WHERE run_key = ? AND status = 'running' AND lease_holder = ?`),
		st.Reason, string(st.Class), d.nullTime(dbNow(retryAt)), fault, d.timeArg(now), key, holder)
	if err != nil {
		return 0, fmt.Errorf("store: stop run %q: %w", key, err)
	}
	if n == 1 {
		return Stored, nil
	}
	stored, err := s.Run(ctx, key)
	if err != nil {
		return 0, err
	}
	if stored.Status == RunRunning && stored.Lease.Holder == "" && stored.Reason == st.Reason && stored.FailureClass == st.Class {
		return AlreadyStored, nil
	}
	return 0, fmt.Errorf("store: stop run %q: %w", key, holding(stored, holder))
}

// FinishRun moves the run key, running under holder's lease, to its final state f, stamped
// with the store's clock, in one UPDATE (one round trip). It returns Stored, or AlreadyStored
// when the run already has exactly this final state from this holder (a retry after an error
// whose commit went through); a retry therefore never fails or changes the stored run. A lease
// that expired can still be finished by its holder as long as nobody took the run over.
//
// f.Class is stored as the run's FailureClass, and its RetryAt is cleared.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or holder, a status other than
// succeeded, failed, skipped or abandoned, a class that is not one of FailureClasses (or any
// class for a succeeded or skipped run), a stop reason over 191 characters or not valid UTF-8,
// negative usage, or a bad store clock; ErrRunNotFound; ErrRunFinished when the run has another
// final state (the stored one is kept); ErrLeaseLost when the run is running under another
// holder, its lease was released, or it waits for approval (a waiting run resumes before it
// finishes: ResumeWaiting); ctx's error; the database's (wrapped).
func (s *Store) FinishRun(ctx context.Context, key, holder string, f Finish) (Outcome, error) {
	if err := checkLeaseArgs(key, holder, 0); err != nil {
		return 0, err
	}
	switch f.Status {
	case RunSucceeded, RunFailed, RunSkipped, RunAbandoned:
	default:
		return 0, fmt.Errorf("%w: run %q: final status %q (want succeeded, failed, skipped or abandoned)", ErrInvalid, key, f.Status)
	}
	switch {
	case f.Class != "" && !f.Class.Valid():
		return 0, fmt.Errorf("%w: run %q: failure class %q (want one of %v)", ErrInvalid, key, f.Class, FailureClasses)
	case f.Class != "" && (f.Status == RunSucceeded || f.Status == RunSkipped):
		return 0, fmt.Errorf("%w: run %q: a %s run has no failure class (got %q)", ErrInvalid, key, f.Status, f.Class)
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
	fault := 0
	if f.Fault {
		fault = 1
	}
	n, err := s.affected(ctx, d.rebind(`UPDATE runs SET status = ?, reason = ?, failure_class = ?, retry_at = NULL,
		faults = faults + ?, finished_at = ?, stop_reason = ?,
		input_tokens = ?, output_tokens = ?, cache_read_tokens = ?, cache_write_tokens = ?
		WHERE run_key = ? AND status = 'running' AND lease_holder = ?`),
		string(f.Status), f.Reason, string(f.Class), fault, d.timeArg(now), f.StopReason,
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
	if stored.Status == RunRunning || stored.Status == RunWaiting {
		return 0, fmt.Errorf("store: finish run %q: %w", key, holding(stored, holder))
	}
	if stored.Lease.Holder == holder && stored.Status == f.Status && stored.Reason == f.Reason &&
		stored.FailureClass == f.Class && stored.StopReason == f.StopReason && stored.Usage == f.Usage {
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
// ErrRunNotFound; ErrLeaseHeld while the lease is live; ErrWaiting (wrapped) for a run that
// waits for approval; ErrRunFinished when the run has another final state; ctx's error; the
// database's (wrapped).
func (s *Store) AbandonRun(ctx context.Context, key, reason string) (Outcome, error) {
	if err := checkKey("run key", key, MaxNameChars); err != nil {
		return 0, err
	}
	reason = clipReason(reason)
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.retrying(ctx, func() (err error) { n, err = s.abandonIn(ctx, s.db, key, reason, now); return err })
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
	case stored.Status == RunWaiting:
		return 0, fmt.Errorf("%w: run %q has no lease to expire: decide its calls, or let their deadline pass", ErrWaiting, key)
	case stored.Status == RunAbandoned && stored.Reason == reason:
		return AlreadyStored, nil
	}
	return 0, fmt.Errorf("%w: run %q is %s", ErrRunFinished, key, stored.Status)
}

// abandonIn is AbandonRun's statement, on ex (the store or a transaction): the run key is
// abandoned with reason at now when it is running and its lease has ended (expired, or
// released). It returns how many rows it changed.
func (s *Store) abandonIn(ctx context.Context, ex execer, key, reason string, now time.Time) (int64, error) {
	d := s.dialect
	res, err := ex.ExecContext(ctx, d.rebind(`UPDATE runs SET status = 'abandoned', reason = ?, finished_at = ?, retry_at = NULL
		WHERE run_key = ? AND status = 'running' AND lease_expires_at <= ?`),
		reason, d.timeArg(now), key, d.timeArg(now))
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
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
	if r.Status == RunWaiting {
		return fmt.Errorf("%w: run %q is waiting for approval: its lease was released when it paused", ErrLeaseLost, r.Key)
	}
	if r.Status != RunRunning {
		return fmt.Errorf("%w: run %q is %s", ErrRunFinished, r.Key, r.Status)
	}
	switch r.Lease.Holder {
	case holder:
		return nil
	case "":
		return fmt.Errorf("%w: run %q has a released lease (resume it with ResumeRun)", ErrLeaseLost, r.Key)
	}
	return fmt.Errorf("%w: run %q was taken over by %q", ErrLeaseLost, r.Key, r.Lease.Holder)
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

// MySQL server errors after which the same statement may succeed later: the server is out of
// connections, shutting down, read-only during a failover, or killed the connection.
var mysqlUnavailable = []uint16{
	1040, // ER_CON_COUNT_ERROR: too many connections
	1053, // ER_SERVER_SHUTDOWN
	1290, // ER_OPTION_PREVENTS_STATEMENT: --read-only (a replica during a failover)
	1836, // ER_READ_ONLY_MODE
	1927, // ER_CONNECTION_KILLED (MariaDB)
	mysqlLockWaitTimeout,
	mysqlLockDeadlock,
}

// Unavailable reports whether err (a store method's error) says the database could not be
// reached or could not serve the statement for now, so that the same call may succeed later:
// a broken connection (driver.ErrBadConn, the MySQL driver's ErrInvalidConn, sql.ErrConnDone),
// a network error, a lock race that outlasted the store's retries (MySQL 1205 and 1213, SQLite
// BUSY and LOCKED), or a MySQL server that is out of connections, shutting down, read-only or
// killed the connection (1040, 1053, 1290, 1836, 1927). Judged by error types and codes, never
// by message text; ctx's errors are not included.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	var me *mysql.MySQLError
	switch {
	case isBadConn(err), errors.Is(err, sql.ErrConnDone), isRetryable(err), errors.As(err, &ne):
		return true
	case errors.As(err, &me):
		return slices.Contains(mysqlUnavailable, me.Number)
	}
	return false
}
