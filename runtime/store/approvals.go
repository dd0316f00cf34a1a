package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/personagen/personagen/runtime"
)

// Approval: a call of a tool whose rule requires approval (runtime.ApprovalRule) is recorded
// with the turn that asks for it (StartTurn, Turn.ApprovalRequests) as waiting, with its
// arguments and its decoded input. The run runs the turn's other calls and pauses (WaitRun:
// status RunWaiting, lease released). A person approves or denies each call (Approve, Deny), or
// its deadline passes; once no call of the turn waits, any worker resumes the run
// (ResumeWaiting), runs each approved call once (StartApprovedCall marks it started first) and
// gives the model a result for each denied or expired one.

// ApprovalStatus is where a call that needs approval stands.
type ApprovalStatus string

// The statuses of an Approval.
const (
	// ApprovalWaiting: no decision yet, and the deadline (Approval.ExpiresAt) has not passed.
	ApprovalWaiting ApprovalStatus = "waiting"
	// ApprovalApproved: a person approved the call; it runs (once) when the run resumes.
	ApprovalApproved ApprovalStatus = "approved"
	// ApprovalDenied: a person denied the call; it does not run, and the model reads why.
	ApprovalDenied ApprovalStatus = "denied"
	// ApprovalExpired: no decision came before the deadline; the call runs when its
	// OnTimeout is runtime.TimeoutApprove, otherwise the model reads that it timed out.
	ApprovalExpired ApprovalStatus = "expired"
)

// Limits of a decision.
const (
	// MaxApprovalNoteBytes bounds the note of a decision (the reason of a denial, which the model
	// reads).
	MaxApprovalNoteBytes = 4 << 10
)

// ErrApprovalNotFound is returned (wrapped) by Approve and Deny when the run has no call of the
// given id that needed approval.
var ErrApprovalNotFound = errors.New("store: no call of the run waits or waited for approval under that id")

// ErrNotWaiting is returned (wrapped) by WaitRun when no call of the run waits for a decision
// any more (each was decided, or its deadline passed): the run goes on instead of pausing.
var ErrNotWaiting = errors.New("store: no call of the run waits for approval")

// ApprovalRequest is a call of a turn that waits for approval, as StartTurn records it with the
// turn (Turn.ApprovalRequests).
type ApprovalRequest struct {
	// Position is the call's index in Turn.ToolCalls.
	Position int
	// Input is the input the tool decodes the call's arguments into, as JSON
	// (runtime.DecodeInput), for the person deciding; nil when the tool cannot decode without
	// running. At most MaxTurnCallBytes bytes of valid UTF-8.
	Input json.RawMessage
	// Timeout is how long the call waits from now (the store's clock); 0 =
	// runtime.DefaultApprovalTimeout, else runtime.MinApprovalTimeout to MaxApprovalTimeout.
	Timeout time.Duration
	// OnTimeout is what the deadline does; "" = runtime.TimeoutDeny.
	OnTimeout runtime.TimeoutAction
	// RevealApprover lets the model read who denied the call.
	RevealApprover bool
}

// Approval is one call that waits or waited for approval, with its run, as Turns, Approvals,
// Approve and Deny read it. Times are UTC to the microsecond.
type Approval struct {
	// ID is the store's id of the approval.
	ID int64
	// The run the call belongs to: its id, key, kind and status, its persona, the message it
	// answers (a reply run) or the fire it carries out (a scheduled run).
	RunID          int64
	RunKey         string
	RunKind        RunKind
	RunStatus      RunStatus
	Persona        string
	ThreadID       string
	MessageSeq     int64
	Responsibility string
	FireAt         time.Time
	// TurnIndex and Position name the call in the run's turns; CallID and ToolName are the
	// call's id and tool.
	TurnIndex int
	Position  int
	CallID    string
	ToolName  string
	// Arguments are the call's arguments as the model produced them (a JSON object); Input the
	// input the tool decodes them into ("" when the tool cannot decode without running). Both are
	// the model's output, so show them escaped.
	Arguments string
	Input     string
	// Status is where the call stands. A waiting call whose deadline passed reads as
	// ApprovalExpired (DecidedAt its deadline) before a worker records it so.
	Status ApprovalStatus
	// OnTimeout is what the deadline does; RevealApprover whether the model reads who denied the
	// call.
	OnTimeout      runtime.TimeoutAction
	RevealApprover bool
	// RequestedAt is when the call was recorded, ExpiresAt its deadline.
	RequestedAt time.Time
	ExpiresAt   time.Time
	// DecidedBy is who approved or denied it ("" for an expired call), DecidedAt when (the
	// deadline for an expired call; zero while it waits), Note the decider's note.
	DecidedBy string
	DecidedAt time.Time
	Note      string
	// StartedAt is when an approved call was started (zero: it has not run). An approved call
	// started without a recorded outcome is in doubt after a crash.
	StartedAt time.Time
}

// Runs reports whether the decision lets the call run: approved, or expired with OnTimeout
// runtime.TimeoutApprove.
func (a Approval) Runs() bool {
	return a.Status == ApprovalApproved || a.Status == ApprovalExpired && a.OnTimeout == runtime.TimeoutApprove
}

// Timeout is how long the call waited or waits at most: ExpiresAt minus RequestedAt.
func (a Approval) Timeout() time.Duration { return a.ExpiresAt.Sub(a.RequestedAt) }

// WaitingError is the error of a run that waits for approval (errors.Is ErrWaiting): ResumeWaiting
// returns it while a call of the run's turn has no decision, and the runner returns it (wrapped)
// when a run pauses. Run is the run as stored, Pending its calls that wait, Until the earliest of
// their deadlines: the run is resumable when the last of them is decided, at Until at the
// latest.
type WaitingError struct {
	Run     Run
	Pending []Approval
	Until   time.Time
}

// Error names the run, the calls it waits for and until when, for example `store: run
// "reply:support/…" waits for approval of escalate_ticket (call toolu_1) until
// 2026-03-09T14:50:00Z at the latest`.
func (e *WaitingError) Error() string {
	calls := make([]string, len(e.Pending))
	for i, a := range e.Pending {
		calls[i] = fmt.Sprintf("%s (call %s)", a.ToolName, a.CallID)
	}
	return fmt.Sprintf("store: run %q waits for approval of %s until %s at the latest", e.Run.Key,
		strings.Join(calls, ", "), e.Until.Format(time.RFC3339Nano))
}

// Is reports whether target is ErrWaiting.
func (e *WaitingError) Is(target error) bool { return target == ErrWaiting }

// approvalRow is a run_approvals row joined with its run, as the store reads it.
type approvalRow struct {
	ID             int64          `db:"id"`
	RunID          int64          `db:"run_id"`
	TurnIndex      int            `db:"turn_index"`
	Position       int            `db:"position"`
	CallID         string         `db:"tool_call_id"`
	ToolName       string         `db:"tool_name"`
	Arguments      string         `db:"arguments"`
	Input          sql.NullString `db:"input"`
	Status         string         `db:"status"`
	OnTimeout      string         `db:"on_timeout"`
	RevealApprover bool           `db:"reveal_approver"`
	RequestedAt    dbTime         `db:"requested_at"`
	ExpiresAt      dbTime         `db:"expires_at"`
	DecidedBy      string         `db:"decided_by"`
	DecidedAt      dbTime         `db:"decided_at"`
	Note           string         `db:"note"`
	StartedAt      dbTime         `db:"started_at"`
	RunKey         string         `db:"run_key"`
	Kind           string         `db:"kind"`
	RunStatus      string         `db:"run_status"`
	Persona        string         `db:"persona"`
	ThreadID       sql.NullString `db:"thread_id"`
	MessageSeq     sql.NullInt64  `db:"message_seq"`
	Responsibility sql.NullString `db:"responsibility"`
	FireAt         dbTime         `db:"fire_at"`
}

const approvalColumns = `a.id, a.run_id, a.turn_index, a.position, a.tool_call_id, a.tool_name, a.arguments, a.input,
	a.status, a.on_timeout, a.reveal_approver, a.requested_at, a.expires_at, a.decided_by, a.decided_at, a.note,
	a.started_at, r.run_key, r.kind, r.status AS run_status, r.persona, r.thread_id, r.message_seq, r.responsibility,
	r.fire_at`

// approval is the row as an Approval read at now: a waiting call past its deadline reads as
// expired.
func (r approvalRow) approval(now time.Time) Approval {
	a := Approval{
		ID: r.ID, RunID: r.RunID, RunKey: r.RunKey, RunKind: RunKind(r.Kind), RunStatus: RunStatus(r.RunStatus),
		Persona: r.Persona, ThreadID: r.ThreadID.String, MessageSeq: r.MessageSeq.Int64,
		Responsibility: r.Responsibility.String, FireAt: r.FireAt.Time,
		TurnIndex: r.TurnIndex, Position: r.Position, CallID: r.CallID, ToolName: r.ToolName,
		Arguments: r.Arguments, Input: r.Input.String, Status: ApprovalStatus(r.Status),
		OnTimeout: runtime.TimeoutAction(r.OnTimeout), RevealApprover: r.RevealApprover,
		RequestedAt: r.RequestedAt.Time, ExpiresAt: r.ExpiresAt.Time,
		DecidedBy: r.DecidedBy, DecidedAt: r.DecidedAt.Time, Note: r.Note, StartedAt: r.StartedAt.Time,
	}
	if a.Status == ApprovalWaiting && !now.Before(a.ExpiresAt) {
		a.Status, a.DecidedAt = ApprovalExpired, a.ExpiresAt
	}
	return a
}

// selectApprovals reads the approvals matching where (a condition on a and r with '?' args),
// ordered by order, as of now.
func (s *Store) selectApprovals(ctx context.Context, now time.Time, where, order string, args ...any) ([]Approval, error) {
	q := "SELECT " + approvalColumns + " FROM run_approvals a JOIN runs r ON r.id = a.run_id WHERE " + where + " ORDER BY " + order
	var rows []approvalRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(q), args...); err != nil {
		return nil, err
	}
	out := make([]Approval, len(rows))
	for i, r := range rows {
		out[i] = r.approval(now)
	}
	return out, nil
}

// checkApprovalRequests validates t's approval requests against its calls.
func checkApprovalRequests(t Turn) error {
	seen := make(map[int]bool, len(t.ApprovalRequests))
	for _, a := range t.ApprovalRequests {
		where := func(format string, args ...any) error {
			return fmt.Errorf("%w: turn %d of run %d: approval of call %d: %s", ErrInvalid, t.TurnIndex, t.RunID, a.Position,
				fmt.Sprintf(format, args...))
		}
		switch {
		case a.Position < 0 || a.Position >= len(t.ToolCalls):
			return where("no such call (the turn has %d)", len(t.ToolCalls))
		case seen[a.Position]:
			return where("requested twice")
		case a.Timeout != 0 && (a.Timeout < runtime.MinApprovalTimeout || a.Timeout > runtime.MaxApprovalTimeout):
			return where("timeout %v (want 0 or %v to %v)", a.Timeout, runtime.MinApprovalTimeout, runtime.MaxApprovalTimeout)
		case a.OnTimeout != "" && a.OnTimeout != runtime.TimeoutDeny && a.OnTimeout != runtime.TimeoutApprove:
			return where("on-timeout action %q (want %q or %q)", a.OnTimeout, runtime.TimeoutDeny, runtime.TimeoutApprove)
		}
		if err := checkBytes("decoded input", string(a.Input), MaxTurnCallBytes); err != nil {
			return where("%v", err)
		}
		seen[a.Position] = true
	}
	return nil
}

// insertApprovals writes t's approval requests, waiting from now, in tx: one multi-row INSERT.
func (s *Store) insertApprovals(ctx context.Context, tx *sqlx.Tx, t Turn, now time.Time) error {
	d := s.dialect
	var b strings.Builder
	b.WriteString(`INSERT INTO run_approvals (run_id, turn_index, position, tool_call_id, tool_name, arguments, input,
		status, on_timeout, reveal_approver, requested_at, expires_at, note, notice_at) VALUES `)
	var args []any
	for i, a := range t.ApprovalRequests {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(" + placeholders(14) + ")")
		c := t.ToolCalls[a.Position]
		arguments := string(c.Input)
		if len(c.Input) == 0 {
			arguments = "{}"
		}
		var input any
		if a.Input != nil {
			input = string(a.Input)
		}
		rule := runtime.ApprovalRule{Timeout: a.Timeout, OnTimeout: a.OnTimeout}
		expires := now.Add(rule.EffectiveTimeout())
		if err := checkTime("approval deadline", expires); err != nil {
			return err
		}
		args = append(args, t.RunID, t.TurnIndex, a.Position, c.ID, c.Name, arguments, input, string(ApprovalWaiting),
			string(rule.EffectiveOnTimeout()), a.RevealApprover, d.timeArg(now), d.timeArg(expires), "", d.timeArg(now))
	}
	_, err := tx.ExecContext(ctx, d.rebind(b.String()), args...)
	return err
}

// ApprovalsOf returns the approvals of run runID's turn turnIndex in call order, as of the
// store's clock. One query. Errors: the database's (wrapped).
func (s *Store) ApprovalsOf(ctx context.Context, runID int64, turnIndex int) ([]Approval, error) {
	now, err := s.clock()
	if err != nil {
		return nil, err
	}
	out, err := s.selectApprovals(ctx, now, "a.run_id = ? AND a.turn_index = ?", "a.position", runID, turnIndex)
	if err != nil {
		return nil, fmt.Errorf("store: read the approvals of turn %d of run %d: %w", turnIndex, runID, err)
	}
	return out, nil
}

// WaitRun pauses the running run key under holder's lease because calls of its current turn
// wait for approval: in one UPDATE, guarded by the run having a call that waits (undecided, before
// its deadline), the run becomes RunWaiting with its lease released (Holder "", Expires now),
// its reason "waiting for approval", its failure class and retry time cleared. It returns the
// run as stored.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or holder or a bad store clock;
// ErrNotWaiting when no call of the run waits any more (every one was decided or timed out:
// the caller goes on with the decisions instead); ErrRunNotFound, ErrRunFinished, ErrLeaseLost
// when the run is not running under holder's lease; ctx's error; the database's (wrapped).
func (s *Store) WaitRun(ctx context.Context, key, holder string) (Run, error) {
	if err := checkLeaseArgs(key, holder, 0); err != nil {
		return Run{}, err
	}
	now, err := s.clock()
	if err != nil {
		return Run{}, err
	}
	d := s.dialect
	fail := func(err error) (Run, error) {
		return Run{}, fmt.Errorf("store: pause run %q for approval: %w", key, err)
	}
	n, err := s.affected(ctx, d.rebind(`UPDATE runs SET status = 'waiting', lease_holder = '', lease_expires_at = ?,
		reason = 'waiting for approval', failure_class = '', retry_at = NULL
		WHERE run_key = ? AND status = 'running' AND lease_holder = ?
		AND EXISTS (SELECT 1 FROM `+d.indexed("run_approvals a", indexRunApprovals)+`
			WHERE a.run_id = runs.id AND a.status = 'waiting' AND a.expires_at > ?)`),
		d.timeArg(now), key, holder, d.timeArg(now))
	if err != nil {
		return fail(err)
	}
	stored, err := s.Run(ctx, key)
	if err != nil {
		return Run{}, err
	}
	switch {
	case n == 1:
		return stored, nil
	case stored.Status == RunWaiting && stored.Lease.Holder == "" && stored.Reason == "waiting for approval":
		return stored, nil // a retry after an error whose commit went through
	}
	if err := holding(stored, holder); err != nil {
		return fail(err)
	}
	return fail(ErrNotWaiting)
}

// ResumeWaiting makes holder the lease holder of the waiting run key for d from now (0 means
// DefaultRunLease) once no call of it waits for a decision: it first records as expired the
// calls whose deadline passed, then, in one compare-and-swap UPDATE guarded by no call
// waiting, makes the run RunRunning again (Attempt plus one, Reason cleared; no fault: the run
// paused cleanly). Of several callers racing, one wins; the others get ErrLeaseHeld. It returns
// the run as stored.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed key or holder, a negative d, or a bad
// store clock; ErrRunNotFound; a *WaitingError (errors.Is ErrWaiting) while a call still waits,
// with the calls and the earliest deadline; ErrLeaseHeld when the run is running (another caller
// resumed it); ErrRunFinished when it has a final status; ctx's error; the database's (wrapped).
func (s *Store) ResumeWaiting(ctx context.Context, key, holder string, d time.Duration) (Run, error) {
	if err := checkLeaseArgs(key, holder, d); err != nil {
		return Run{}, err
	}
	now, err := s.clock()
	if err != nil {
		return Run{}, err
	}
	fail := func(err error) (Run, error) {
		return Run{}, fmt.Errorf("store: resume waiting run %q for %q: %w", key, holder, err)
	}
	run, err := s.Run(ctx, key)
	if err != nil {
		return Run{}, err
	}
	dl := s.dialect
	if run.Status == RunWaiting {
		if err := s.expire(ctx, run.ID, now); err != nil {
			return fail(err)
		}
		n, err := s.affected(ctx, dl.rebind(`UPDATE runs SET status = 'running', lease_holder = ?, lease_expires_at = ?,
			attempt = attempt + 1, reason = ''
			WHERE id = ? AND status = 'waiting'
			AND NOT EXISTS (SELECT 1 FROM `+dl.indexed("run_approvals a", indexRunApprovals)+`
				WHERE a.run_id = runs.id AND a.status = 'waiting' AND a.expires_at > ?)`),
			holder, dl.timeArg(now.Add(leaseFor(d))), run.ID, dl.timeArg(now))
		if err != nil {
			return fail(err)
		}
		if run, err = s.Run(ctx, key); err != nil {
			return Run{}, err
		}
		if n == 1 {
			return run, nil
		}
	}
	switch run.Status {
	case RunWaiting:
		return Run{}, s.waitingError(ctx, run, now)
	case RunRunning:
		if run.Lease.Holder == holder {
			return run, nil // a retry after an error whose commit went through
		}
		return fail(fmt.Errorf("%w: run %q is running under %q until %s", ErrLeaseHeld, key, run.Lease.Holder,
			run.Lease.Expires.Format(time.RFC3339Nano)))
	}
	return fail(fmt.Errorf("%w: run %q is %s", ErrRunFinished, key, run.Status))
}

// waitingError is the *WaitingError of the waiting run as of now.
func (s *Store) waitingError(ctx context.Context, run Run, now time.Time) error {
	pending, err := s.selectApprovals(ctx, now, "a.run_id = ? AND a.status = 'waiting' AND a.expires_at > ?",
		"a.turn_index, a.position", run.ID, s.dialect.timeArg(now))
	if err != nil {
		return fmt.Errorf("store: read the calls run %q waits for: %w", run.Key, err)
	}
	e := &WaitingError{Run: run, Pending: pending}
	for _, a := range pending {
		if e.Until.IsZero() || a.ExpiresAt.Before(e.Until) {
			e.Until = a.ExpiresAt
		}
	}
	return e
}

// expire records as expired the waiting calls of run runID whose deadline is not after now.
func (s *Store) expire(ctx context.Context, runID int64, now time.Time) error {
	_, err := s.exec(ctx, s.dialect.rebind(`UPDATE run_approvals SET status = 'expired', decided_at = expires_at, notice_at = NULL
		WHERE run_id = ? AND status = 'waiting' AND expires_at <= ?`), runID, s.dialect.timeArg(now))
	return err
}

// StartApprovedCall records that holder starts call position of turn turnIndex of run runID,
// which a decision lets run (Approval.Runs), in one statement that writes only while the run is
// running under holder's lease and the call was not started before. A runner calls it right
// before it runs the call: an approved call without a start has not run, one with a start and
// without an outcome (SettleCall) may have and is in doubt.
//
// Errors: ErrConflict (wrapped) when the call was started already or its decision does not let
// it run; ErrRunNotFound, ErrRunFinished or ErrLeaseLost (wrapped) when the run is not running
// under holder's lease; ctx's error; the database's (wrapped).
func (s *Store) StartApprovedCall(ctx context.Context, holder string, runID int64, turnIndex, position int) error {
	if err := checkKey("lease holder", holder, MaxNameChars); err != nil {
		return err
	}
	now, err := s.clock()
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return fmt.Errorf("store: start approved call %d of turn %d of run %d: %w", position, turnIndex, runID, err)
	}
	d := s.dialect
	n, err := s.affected(ctx, d.rebind(`UPDATE run_approvals SET started_at = ?,
		status = CASE WHEN status = 'waiting' THEN 'expired' ELSE status END,
		decided_at = CASE WHEN status = 'approved' THEN decided_at ELSE expires_at END
		WHERE run_id = ? AND turn_index = ? AND position = ? AND started_at IS NULL
		AND (status = 'approved' OR (status IN ('waiting', 'expired') AND on_timeout = 'approve' AND expires_at <= ?))
		AND EXISTS (SELECT 1 FROM runs WHERE id = ? AND status = 'running' AND lease_holder = ?)`),
		d.timeArg(now), runID, turnIndex, position, d.timeArg(now), runID, holder)
	if err != nil {
		return fail(err)
	}
	if n == 1 {
		return nil
	}
	if err := s.notHolding(ctx, runID, holder); err != nil {
		return fail(err)
	}
	list, err := s.selectApprovals(ctx, now, "a.run_id = ? AND a.turn_index = ? AND a.position = ?", "a.id", runID, turnIndex, position)
	switch {
	case err != nil:
		return fail(err)
	case len(list) == 0:
		return fail(fmt.Errorf("%w: the call needs no approval", ErrConflict))
	case !list[0].StartedAt.IsZero():
		return fail(fmt.Errorf("%w: the call was started at %s", ErrConflict, list[0].StartedAt.Format(time.RFC3339Nano)))
	}
	return fail(fmt.Errorf("%w: the call is %s, which does not let it run", ErrConflict, list[0].Status))
}

// Approve records that by approves the call callID of the run runKey, with note (may be
// empty): the call runs, once, when the run resumes. See Decide.
func (s *Store) Approve(ctx context.Context, runKey, callID, by, note string) (Approval, Outcome, error) {
	return s.Decide(ctx, runKey, callID, ApprovalApproved, by, note)
}

// Deny records that by denies the call callID of the run runKey, with note, the reason, which
// the model reads (write it for the model; it may reach the customer): the call does not run.
// See Decide.
func (s *Store) Deny(ctx context.Context, runKey, callID, by, note string) (Approval, Outcome, error) {
	return s.Decide(ctx, runKey, callID, ApprovalDenied, by, note)
}

// Decide records the decision status (ApprovalApproved or ApprovalDenied) of by on the call
// callID of the run runKey — the call of that id in the latest of the run's turns that has one
// needing approval — with note, stamped with the store's clock, and returns the approval as
// stored. It is Stored when this call decided; AlreadyStored when the call already has this
// decision (deciding twice is harmless: the first decider, time and note are kept). When the
// decision leaves no call of the run waiting, the run's work is made available at once
// (WakeRun), so a service resumes it on any replica. One read and one compare-and-swap UPDATE,
// so of two deciders racing one wins and the other gets AlreadyStored or a conflict.
//
// Errors: ErrInvalid (wrapped) for an empty or malformed run key or call id, a status other
// than approved and denied, an empty by or one over MaxNameChars characters, a note over
// MaxApprovalNoteBytes or not valid UTF-8, a bad store clock; ErrRunNotFound; ErrApprovalNotFound
// when the run has no such call; ErrConflict when the call has the other decision or expired
// (the message says which, by whom and when); ErrRunFinished when the run ended before the
// call was decided; ctx's error; the database's (wrapped).
func (s *Store) Decide(ctx context.Context, runKey, callID string, status ApprovalStatus, by, note string) (Approval, Outcome, error) {
	verb := map[ApprovalStatus]string{ApprovalApproved: "approve", ApprovalDenied: "deny"}[status]
	fail := func(err error) (Approval, Outcome, error) {
		return Approval{}, 0, fmt.Errorf("store: %s call %q of run %q: %w", verb, callID, runKey, err)
	}
	if verb == "" {
		return fail(fmt.Errorf("%w: decision %q (want %q or %q)", ErrInvalid, status, ApprovalApproved, ApprovalDenied))
	}
	if err := checkKey("run key", runKey, MaxNameChars); err != nil {
		return fail(err)
	}
	if err := checkKey("call id", callID, MaxToolFieldChars); err != nil {
		return fail(err)
	}
	if err := checkKey("decider (by)", by, MaxNameChars); err != nil {
		return fail(err)
	}
	if err := checkBytes("note", note, MaxApprovalNoteBytes); err != nil {
		return fail(err)
	}
	for range 3 {
		now, err := s.clock()
		if err != nil {
			return fail(err)
		}
		list, err := s.selectApprovals(ctx, now, "r.run_key = ? AND a.tool_call_id = ?", "a.turn_index DESC, a.position LIMIT 1", runKey, callID)
		if err != nil {
			return fail(err)
		}
		if len(list) == 0 {
			if _, err := s.Run(ctx, runKey); err != nil {
				return fail(err)
			}
			return fail(ErrApprovalNotFound)
		}
		a := list[0]
		switch {
		case a.Status == status:
			return a, AlreadyStored, nil
		case a.Status == ApprovalExpired:
			if err := s.expire(ctx, a.RunID, now); err != nil {
				return fail(err)
			}
			return fail(fmt.Errorf("%w: it expired at %s: no decision came within %v", ErrConflict,
				a.ExpiresAt.Format(time.RFC3339Nano), a.Timeout()))
		case a.Status != ApprovalWaiting:
			return fail(fmt.Errorf("%w: it was %s by %q at %s", ErrConflict, a.Status, a.DecidedBy, a.DecidedAt.Format(time.RFC3339Nano)))
		case a.RunStatus != RunRunning && a.RunStatus != RunWaiting:
			return fail(fmt.Errorf("%w: run %q is %s", ErrRunFinished, runKey, a.RunStatus))
		}
		d := s.dialect
		n, err := s.affected(ctx, d.rebind(`UPDATE run_approvals SET status = ?, decided_by = ?, decided_at = ?, note = ?, notice_at = NULL
			WHERE id = ? AND status = 'waiting' AND expires_at > ?`),
			string(status), by, d.timeArg(now), note, a.ID, d.timeArg(now))
		if err != nil {
			return fail(err)
		}
		if n == 0 {
			continue // decided by another, or expired, since it was read: read it again
		}
		a.Status, a.DecidedBy, a.DecidedAt, a.Note = status, by, dbNow(now), note
		if err := s.wakeIfDecided(ctx, a, now); err != nil {
			return a, Stored, fmt.Errorf("store: %s call %q of run %q: decided, but the run's work could not be made available "+
				"(a service resumes it within its poll interval): %w", verb, callID, runKey, err)
		}
		return a, Stored, nil
	}
	return fail(errors.New("the call kept changing while it was decided"))
}

// wakeIfDecided makes a's run available to resume when none of its calls waits any more.
func (s *Store) wakeIfDecided(ctx context.Context, a Approval, now time.Time) error {
	var waiting int
	if err := s.db.GetContext(ctx, &waiting, s.dialect.rebind(`SELECT COUNT(*) FROM run_approvals
		WHERE run_id = ? AND status = 'waiting' AND expires_at > ?`), a.RunID, s.dialect.timeArg(now)); err != nil {
		return err
	}
	if waiting > 0 {
		return nil
	}
	return s.WakeRun(ctx, Run{ID: a.RunID, Key: a.RunKey, Kind: a.RunKind, Persona: a.Persona, ThreadID: a.ThreadID, MessageSeq: a.MessageSeq})
}

// WakeRun makes the work of run r available at once, for a run whose waiting is over (its calls
// decided, or a deadline passed): for a reply run, the reply work of its thread (see
// RequeueReply: created, or widened to r's message and made available when no worker holds it),
// so the next claim of the thread resumes the run; a scheduled run has no work row, and a
// service resumes it by its own poll of DueWaits. Errors: the database's (wrapped).
func (s *Store) WakeRun(ctx context.Context, r Run) error {
	if r.Kind != RunReply {
		return nil
	}
	var mailbox string
	err := s.db.GetContext(ctx, &mailbox, s.dialect.rebind(`SELECT mailbox FROM messages WHERE seq = ?`), r.MessageSeq)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the thread was deleted
	}
	if err != nil {
		return fmt.Errorf("store: wake run %q: %w", r.Key, err)
	}
	if err := s.requeue(ctx, mailbox, r.ThreadID, r.MessageSeq); err != nil {
		return fmt.Errorf("store: wake run %q: %w", r.Key, err)
	}
	return nil
}

// maxDueWaitsPersonas bounds the personas of one DueWaits query (its IN list).
const maxDueWaitsPersonas = 500

// DueWaits returns the waiting runs of the named personas that can resume now, oldest first:
// no call of theirs waits any more (each was decided, or its deadline passed by the store's
// clock). It reads only waiting runs, through their index: one query per 500 personas. No
// personas returns nothing. Errors: ErrInvalid (wrapped) for a bad store clock, the
// database's (wrapped).
func (s *Store) DueWaits(ctx context.Context, personas []string) ([]Run, error) {
	now, err := s.clock()
	if err != nil {
		return nil, err
	}
	var out []Run
	for len(personas) > 0 {
		chunk := personas[:min(len(personas), maxDueWaitsPersonas)]
		personas = personas[len(chunk):]
		args := append(stringArgs(chunk), s.dialect.timeArg(now))
		var rows []runRow
		if err := s.db.SelectContext(ctx, &rows, s.dueWaitsQuery(len(chunk)), args...); err != nil {
			return nil, fmt.Errorf("store: read the waiting runs that can resume: %w", err)
		}
		for _, r := range rows {
			out = append(out, r.run())
		}
	}
	slices.SortFunc(out, func(a, b Run) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// indexRunApprovals is the index of a run's approvals by status and deadline, which the
// checks for a call that still waits read through.
const indexRunApprovals = "run_approvals_run"

// dueWaitsQuery is DueWaits' query for n personas: the waiting runs through their index (on
// SQLite the partial index, named as RunningFires names its own; on MySQL the generated
// column's key), each checked for a call that still waits through the approvals' key.
func (s *Store) dueWaitsQuery(n int) string {
	from, waiting := "runs INDEXED BY runs_waiting", "status = 'waiting' AND persona IN "
	if s.dialect == DialectMySQL {
		from, waiting = "runs", "waiting_persona IN "
	}
	return s.dialect.rebind("SELECT " + runColumns + " FROM " + from + " WHERE " + waiting + "(" + placeholders(n) + `)
		AND NOT EXISTS (SELECT 1 FROM ` + s.dialect.indexed("run_approvals a", indexRunApprovals) + `
			WHERE a.run_id = runs.id AND a.status = 'waiting' AND a.expires_at > ?)`)
}

// ApprovalQuery selects approvals for Approvals; every field left zero selects all.
type ApprovalQuery struct {
	// Status keeps the approvals of that status (as Approval.Status reads it: a call past its
	// deadline is expired). ApprovalWaiting keeps only the calls that can still be decided: of
	// runs that are running or waiting.
	Status ApprovalStatus
	// Persona and RunKey keep the approvals of that persona, of that run.
	Persona string
	RunKey  string
	// Limit keeps only the Limit most recently requested of the selected approvals; 0 keeps
	// all.
	Limit int
}

// Approvals returns the approvals q selects, oldest first in the order they were requested,
// each with its run, arguments and decoded input: what an operator decides from (the
// `personagen approvals` command, the console). One query. Errors: ErrInvalid (wrapped) for an
// unknown status, a negative limit or a bad store clock; the database's (wrapped).
func (s *Store) Approvals(ctx context.Context, q ApprovalQuery) ([]Approval, error) {
	now, err := s.clock()
	if err != nil {
		return nil, err
	}
	if q.Limit < 0 {
		return nil, fmt.Errorf("%w: approvals: negative limit %d", ErrInvalid, q.Limit)
	}
	at := s.dialect.timeArg(now)
	conds, args := []string{"1 = 1"}, []any{}
	switch q.Status {
	case "":
	case ApprovalWaiting:
		conds = append(conds, "a.status = 'waiting' AND a.expires_at > ? AND r.status IN ('running', 'waiting')")
		args = append(args, at)
	case ApprovalExpired:
		conds = append(conds, "(a.status = 'expired' OR (a.status = 'waiting' AND a.expires_at <= ?))")
		args = append(args, at)
	case ApprovalApproved, ApprovalDenied:
		conds = append(conds, "a.status = ?")
		args = append(args, string(q.Status))
	default:
		return nil, fmt.Errorf("%w: approvals: status %q (want waiting, approved, denied or expired)", ErrInvalid, q.Status)
	}
	if q.Persona != "" {
		conds, args = append(conds, "r.persona = ?"), append(args, q.Persona)
	}
	if q.RunKey != "" {
		conds, args = append(conds, "r.run_key = ?"), append(args, q.RunKey)
	}
	order := "a.id DESC"
	if q.Limit > 0 {
		order += " LIMIT ?"
		args = append(args, q.Limit)
	}
	out, err := s.selectApprovals(ctx, now, strings.Join(conds, " AND "), order, args...)
	if err != nil {
		return nil, fmt.Errorf("store: read approvals: %w", err)
	}
	slices.Reverse(out)
	return out, nil
}

// CountWaitingApprovals counts the calls that can still be decided, as Approvals with Status
// ApprovalWaiting selects them: undecided, before their deadline by the store's clock, of runs
// that are running or waiting. One query, through the index of approvals by status and
// deadline. Errors: ErrInvalid (wrapped) for a bad store clock; the database's (wrapped).
func (s *Store) CountWaitingApprovals(ctx context.Context) (int64, error) {
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	var n int64
	if err := s.db.GetContext(ctx, &n, s.dialect.rebind(`SELECT COUNT(*) FROM `+s.dialect.indexed("run_approvals a", indexApprovalsStatus)+`
		`+s.dialect.joinInOrder()+` runs r ON r.id = a.run_id WHERE a.status = 'waiting' AND a.expires_at > ? AND r.status IN ('running', 'waiting')`),
		s.dialect.timeArg(now)); err != nil {
		return 0, fmt.Errorf("store: count the calls waiting for approval: %w", err)
	}
	return n, nil
}

// indexApprovalsStatus is the index of approvals by status and deadline.
const indexApprovalsStatus = "run_approvals_status"

// ClaimApprovalNotice claims the longest-due notification of a waiting call of the named
// personas, for a host's notification hook: its notice is due when the call was recorded, and
// the claim makes it due again at now + lease (so a notifier that died is replaced then). ok is
// false when none is due. A call decided or expired before its notice went out has none. Each
// claim is a compare-and-swap on the notice's due time, so one claimer of several wins. Settle
// it with SettleApprovalNotice. Errors: ErrInvalid (wrapped) for a lease that is not positive or
// a bad store clock; the database's (wrapped).
func (s *Store) ClaimApprovalNotice(ctx context.Context, personas []string, lease time.Duration) (a Approval, ok bool, err error) {
	if lease <= 0 {
		return a, false, fmt.Errorf("%w: approval notice lease %v (want a positive one)", ErrInvalid, lease)
	}
	if len(personas) == 0 {
		return a, false, nil
	}
	now, err := s.clock()
	if err != nil {
		return a, false, err
	}
	d := s.dialect
	chunk := personas[:min(len(personas), maxDueWaitsPersonas)]
	args := append([]any{d.timeArg(now), d.timeArg(now)}, stringArgs(chunk)...)
	type due struct {
		ID       int64  `db:"id"`
		NoticeAt dbTime `db:"notice_at"`
	}
	var rows []due
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT a.id, a.notice_at FROM run_approvals a JOIN runs r ON r.id = a.run_id
		WHERE a.notice_at <= ? AND a.status = 'waiting' AND a.expires_at > ? AND r.persona IN (`+placeholders(len(chunk))+`)
		AND r.status IN ('running', 'waiting') ORDER BY a.notice_at, a.id LIMIT 20`), args...); err != nil {
		return a, false, fmt.Errorf("store: read due approval notices: %w", err)
	}
	for _, r := range rows {
		n, err := s.affected(ctx, d.rebind(`UPDATE run_approvals SET notice_at = ? WHERE id = ? AND notice_at = ?`),
			d.timeArg(now.Add(lease)), r.ID, d.timeArg(r.NoticeAt.Time))
		if err != nil {
			return a, false, fmt.Errorf("store: claim approval notice %d: %w", r.ID, err)
		}
		if n == 0 {
			continue
		}
		list, err := s.selectApprovals(ctx, now, "a.id = ?", "a.id", r.ID)
		if err != nil || len(list) == 0 {
			return a, false, fmt.Errorf("store: read approval %d: %w", r.ID, err)
		}
		return list[0], true, nil
	}
	return a, false, nil
}

// SettleApprovalNotice records the outcome of a claimed notice of approval id: retryAt zero
// says it was sent (no notice is due any more); otherwise it is due again at retryAt (the hook
// failed). Errors: ErrInvalid (wrapped) for a retry time out of range; the database's
// (wrapped).
func (s *Store) SettleApprovalNotice(ctx context.Context, id int64, retryAt time.Time) error {
	var at any
	if !retryAt.IsZero() {
		if err := checkTime("notice retry time", retryAt); err != nil {
			return err
		}
		at = s.dialect.timeArg(retryAt)
	}
	if _, err := s.exec(ctx, s.dialect.rebind(`UPDATE run_approvals SET notice_at = ? WHERE id = ? AND notice_at IS NOT NULL`), at, id); err != nil {
		return fmt.Errorf("store: settle approval notice %d: %w", id, err)
	}
	return nil
}
