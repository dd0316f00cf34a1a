package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// The operator's reads: what the console (runtime/console, `personagen threads`, `runs`, …)
// lists. Every listing reads one page through an index that holds its order, so its cost
// follows the page, not the store (TestConsoleQueryPlans pins the plans).

// Indexes the console's listings read through (migration 00070).
const (
	indexThreadActivity        = "thread_activity_last"
	indexThreadActivityMailbox = "thread_activity_mailbox_last"
	indexRunsStarted           = "runs_started"
	indexRunsStatus            = "runs_status_started"
	indexRunsClass             = "runs_class_started"
	indexRunsPersona           = "runs_persona_started"
	indexOutboxFailed          = "mail_outbox_failed"
)

// DefaultListLimit is the page size of a listing that asks for none; MaxListLimit the largest
// page a listing returns.
const (
	DefaultListLimit = 50
	MaxListLimit     = 1000
)

// listLimit returns n, DefaultListLimit for 0, or ErrInvalid for a negative n or one over
// MaxListLimit.
func listLimit(what string, n int) (int, error) {
	switch {
	case n == 0:
		return DefaultListLimit, nil
	case n < 0 || n > MaxListLimit:
		return 0, fmt.Errorf("%w: %s: limit %d (want 1 to %d, or 0 for %d)", ErrInvalid, what, n, MaxListLimit, DefaultListLimit)
	}
	return n, nil
}

// ThreadState says where a thread stands for its persona.
type ThreadState string

// The states of a thread, in the order ThreadSummary.State decides them.
const (
	// ThreadRunning: its latest run is running — worked on now, or stopped and waiting to be
	// resumed.
	ThreadRunning ThreadState = "running"
	// ThreadPending: mail of the thread waits for an answer and no run of it is running.
	ThreadPending ThreadState = "pending"
	// ThreadFailed: its latest run failed or was abandoned.
	ThreadFailed ThreadState = "failed"
	// ThreadAnswered: its latest run succeeded.
	ThreadAnswered ThreadState = "answered"
	// ThreadNotAnswered: its latest run was skipped (its message was not to be answered).
	ThreadNotAnswered ThreadState = "not_answered"
	// ThreadQuiet: it has no run and nothing pending (only the persona's own mail, say).
	ThreadQuiet ThreadState = "quiet"
)

// threadState decides a thread's state from its latest run (nil for none) and whether reply
// work of it is pending.
func threadState(last *Run, pending bool) ThreadState {
	switch {
	case last != nil && last.Status == RunRunning:
		return ThreadRunning
	case pending:
		return ThreadPending
	case last == nil:
		return ThreadQuiet
	}
	switch last.Status {
	case RunSucceeded:
		return ThreadAnswered
	case RunSkipped:
		return ThreadNotAnswered
	}
	return ThreadFailed
}

// ThreadSummary is one thread as a listing shows it: its first message's subject and
// participants, its size and last activity, and where it stands.
type ThreadSummary struct {
	ThreadID string
	// Mailbox is the persona's mailbox the thread belongs to (its first message's).
	Mailbox string
	// Subject, From, To and Cc are the thread's first message's.
	Subject string
	From    string
	To      []string
	Cc      []string
	// Messages counts the thread's messages; FirstSeq and LastSeq are its first and newest.
	Messages int64
	FirstSeq int64
	LastSeq  int64
	// LastActivity is when the store received the thread's newest message, in UTC.
	LastActivity time.Time
	// Pending says reply work of the thread waits (see PendingReplies).
	Pending bool
	// LastRun is the thread's latest reply run of its persona (nil for none).
	LastRun *Run
	State   ThreadState
}

// ThreadCursor marks where a page of Threads ended: the next page starts after it.
type ThreadCursor struct {
	LastActivity time.Time
	ThreadID     string
}

// Cursor returns the cursor after t, for ThreadQuery.After.
func (t ThreadSummary) Cursor() ThreadCursor {
	return ThreadCursor{LastActivity: t.LastActivity, ThreadID: t.ThreadID}
}

// ThreadQuery selects a page of Threads.
type ThreadQuery struct {
	// Mailbox keeps one persona's threads ("" for all).
	Mailbox string
	// After continues a listing after the thread it names (the zero cursor starts with the
	// most recently active thread).
	After ThreadCursor
	// Limit is the page size (0 = DefaultListLimit, at most MaxListLimit).
	Limit int
}

// Threads returns a page of threads, the most recently active first (ties by thread id,
// descending), each with its first message's subject and participants and its state. Two
// queries: the page through the index of thread activity (thread_activity_last, or
// thread_activity_mailbox_last for one mailbox) with, per thread, its first message (by
// thread_start), its pending work (by key) and its latest run's id (one probe of
// runs_persona_thread), then those runs by id. Errors: ErrInvalid (wrapped) for a bad limit;
// the database's (wrapped).
func (s *Store) Threads(ctx context.Context, q ThreadQuery) ([]ThreadSummary, error) {
	limit, err := listLimit("threads", q.Limit)
	if err != nil {
		return nil, err
	}
	d := s.dialect
	var conds []string
	var args []any
	from := d.indexed("thread_activity a", indexThreadActivity)
	if q.Mailbox != "" {
		from = d.indexed("thread_activity a", indexThreadActivityMailbox)
		conds = append(conds, "a.mailbox = ?")
		args = append(args, q.Mailbox)
	}
	if !q.After.LastActivity.IsZero() {
		at := d.timeArg(q.After.LastActivity)
		conds = append(conds, "a.last_at <= ? AND (a.last_at < ? OR a.thread_id < ?)")
		args = append(args, at, at, q.After.ThreadID)
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	out, err := s.threadSummaries(ctx, from, where+" ORDER BY a.last_at DESC, a.thread_id DESC LIMIT ?", append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: list threads: %w", err)
	}
	return out, nil
}

// threadSummaries reads the summaries of the thread_activity rows (alias a) of from (the FROM
// item) that tail (WHERE, ORDER BY and LIMIT clauses, with args) selects. Two queries.
func (s *Store) threadSummaries(ctx context.Context, from, tail string, args ...any) ([]ThreadSummary, error) {
	query := `SELECT a.thread_id, a.mailbox, a.first_seq, a.last_seq, a.messages, a.last_at,
		f.subject, f.sender, f.recipients, f.cc,
		(SELECT COUNT(*) FROM pending_replies p WHERE p.mailbox = a.mailbox AND p.thread_id = a.thread_id) AS pending,
		(SELECT MAX(r.id) FROM runs r WHERE r.persona = a.mailbox AND r.thread_id = a.thread_id) AS last_run
		FROM ` + from + ` JOIN messages f ON f.thread_start = a.thread_id` + tail
	var rows []struct {
		ThreadID   string        `db:"thread_id"`
		Mailbox    string        `db:"mailbox"`
		FirstSeq   int64         `db:"first_seq"`
		LastSeq    int64         `db:"last_seq"`
		Messages   int64         `db:"messages"`
		LastAt     dbTime        `db:"last_at"`
		Subject    string        `db:"subject"`
		Sender     string        `db:"sender"`
		Recipients string        `db:"recipients"`
		Cc         string        `db:"cc"`
		Pending    int           `db:"pending"`
		LastRun    sql.NullInt64 `db:"last_run"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(query), args...); err != nil {
		return nil, err
	}
	var ids []int64
	for _, r := range rows {
		if r.LastRun.Valid {
			ids = append(ids, r.LastRun.Int64)
		}
	}
	runs, err := s.runsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]ThreadSummary, len(rows))
	for i, r := range rows {
		t := ThreadSummary{ThreadID: r.ThreadID, Mailbox: r.Mailbox, Subject: r.Subject, From: r.Sender,
			Messages: r.Messages, FirstSeq: r.FirstSeq, LastSeq: r.LastSeq, LastActivity: r.LastAt.Time, Pending: r.Pending > 0}
		if err := decodeList(r.Recipients, &t.To); err != nil {
			return nil, fmt.Errorf("thread %q recipients: %w", r.ThreadID, err)
		}
		if err := decodeList(r.Cc, &t.Cc); err != nil {
			return nil, fmt.Errorf("thread %q cc: %w", r.ThreadID, err)
		}
		if run, ok := runs[r.LastRun.Int64]; ok && r.LastRun.Valid {
			t.LastRun = &run
		}
		t.State = threadState(t.LastRun, t.Pending)
		out[i] = t
	}
	return out, nil
}

// runsByID reads the runs of ids (by primary key, in chunks of 500), keyed by id.
func (s *Store) runsByID(ctx context.Context, ids []int64) (map[int64]Run, error) {
	out := make(map[int64]Run, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 500)]
		ids = ids[len(chunk):]
		var rows []runRow
		if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind("SELECT "+runColumns+" FROM runs WHERE id IN ("+
			placeholders(len(chunk))+")"), seqArgs(chunk)...); err != nil {
			return nil, err
		}
		for _, r := range rows {
			out[r.ID] = r.run()
		}
	}
	return out, nil
}

// ThreadSummaryOf returns the summary of one thread, as Threads lists it. Two queries, by the
// thread's key. Errors: ErrMessageNotFound (wrapped) for a thread the store does not hold; the
// database's (wrapped).
func (s *Store) ThreadSummaryOf(ctx context.Context, threadID string) (ThreadSummary, error) {
	out, err := s.threadSummaries(ctx, "thread_activity a", " WHERE a.thread_id = ?", threadID)
	if err != nil {
		return ThreadSummary{}, fmt.Errorf("store: thread %q: %w", threadID, err)
	}
	if len(out) == 0 {
		return ThreadSummary{}, fmt.Errorf("store: thread %q: %w", threadID, ErrMessageNotFound)
	}
	return out[0], nil
}

// ThreadDetail is one thread as its conversation view shows it: its messages in the order the
// store received them, each with the tool rounds recorded for it; its reply runs; the send state
// of each of its replies; its compactions.
type ThreadDetail struct {
	Summary ThreadSummary
	// Messages are the newest Limit messages of the thread, oldest first, each with the tool
	// uses recorded for it (Message.ToolUses, in round order); Omitted counts the earlier ones
	// left out.
	Messages []Message
	Omitted  int64
	// Runs are the thread's reply runs, oldest first.
	Runs []Run
	// Sends holds the outbox state of each reply of Messages, by its seq.
	Sends map[int64]SendState
	// Compactions are the thread's completed compactions, by boundary.
	Compactions []history.Compaction
}

// DefaultThreadMessages is how many messages ThreadDetailOf returns when asked for none.
const DefaultThreadMessages = 200

// ThreadDetailOf returns the thread threadID as its conversation view shows it, with its
// newest limit messages (0 = DefaultThreadMessages, at most MaxListLimit). Six queries, each by
// the thread's key: the summary (two), the messages (backwards along messages_thread_window),
// their tool uses (tool_uses_thread_owner), the runs (runs_thread), the replies' send states
// and the compactions. Errors: ErrMessageNotFound (wrapped) for a thread the store does not
// hold; ErrInvalid (wrapped) for a bad limit; the database's (wrapped).
func (s *Store) ThreadDetailOf(ctx context.Context, threadID string, limit int) (ThreadDetail, error) {
	if limit == 0 {
		limit = DefaultThreadMessages
	}
	if limit < 0 || limit > MaxListLimit {
		return ThreadDetail{}, fmt.Errorf("%w: thread %q: limit %d (want 1 to %d)", ErrInvalid, threadID, limit, MaxListLimit)
	}
	sum, err := s.ThreadSummaryOf(ctx, threadID)
	if err != nil {
		return ThreadDetail{}, err
	}
	fail := func(err error) (ThreadDetail, error) {
		return ThreadDetail{}, fmt.Errorf("store: read thread %q: %w", threadID, err)
	}
	d := s.dialect
	var rows []storedMessageRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT `+storedMessageColumns+` FROM `+
		d.indexed("messages", indexThreadWindow)+` WHERE thread_id = ? ORDER BY seq DESC LIMIT ?`), threadID, limit); err != nil {
		return fail(err)
	}
	slices.Reverse(rows)
	detail := ThreadDetail{Summary: sum, Sends: map[int64]SendState{}}
	detail.Omitted = max(sum.Messages-int64(len(rows)), 0)
	bySeq := map[int64]int{}
	var replies []int64
	for _, r := range rows {
		m, err := r.message()
		if err != nil {
			return fail(err)
		}
		bySeq[m.Seq] = len(detail.Messages)
		detail.Messages = append(detail.Messages, m)
		if m.RunKey != "" {
			replies = append(replies, m.Seq)
		}
	}
	if len(rows) > 0 {
		var uses []historyToolUseRow
		if err := s.db.SelectContext(ctx, &uses, d.rebind(`SELECT seq, owner_id, run_id, turn_index, position, tool_call_id,
			tool_name, arguments, result, succeeded FROM `+d.indexed("tool_uses", indexUsesThread)+`
			WHERE thread_id = ? AND owner_id >= ? ORDER BY owner_id, seq`), threadID, rows[0].Seq); err != nil {
			return fail(err)
		}
		for _, u := range uses {
			if i, ok := bySeq[u.OwnerID]; ok {
				detail.Messages[i].ToolUses = append(detail.Messages[i].ToolUses, history.ToolUse{Seq: u.Seq, RunID: u.RunID,
					TurnIndex: u.TurnIndex, Position: u.Position, ToolCallID: u.ToolCallID, ToolName: u.ToolName,
					Arguments: u.Arguments, Result: u.Result, HasResult: true, Succeeded: u.Succeeded})
			}
		}
		for _, m := range detail.Messages {
			slices.SortStableFunc(m.ToolUses, func(a, b history.ToolUse) int {
				if a.TurnIndex != b.TurnIndex {
					return a.TurnIndex - b.TurnIndex
				}
				return a.Position - b.Position
			})
		}
	}
	var runs []runRow
	if err := s.db.SelectContext(ctx, &runs, d.rebind("SELECT "+runColumns+" FROM runs WHERE thread_id = ? ORDER BY id"), threadID); err != nil {
		return fail(err)
	}
	for _, r := range runs {
		detail.Runs = append(detail.Runs, r.run())
	}
	if len(replies) > 0 {
		var states []outboxRow
		if err := s.db.SelectContext(ctx, &states, d.rebind(`SELECT `+outboxStateColumns+`
			FROM mail_outbox WHERE message_seq IN (`+placeholders(len(replies))+`)`), seqArgs(replies)...); err != nil {
			return fail(err)
		}
		for _, st := range states {
			detail.Sends[st.Seq] = st.state()
		}
	}
	var comps []struct {
		compactionRow
		CompletedAt dbTime `db:"completed_at"`
	}
	if err := s.db.SelectContext(ctx, &comps, d.rebind(`SELECT boundary_seq, boundary_message_id, status, summary, claim_token,
		claimed_at, completed_at FROM compactions WHERE thread_id = ? AND status = 'completed' ORDER BY boundary_seq`), threadID); err != nil {
		return fail(err)
	}
	for _, c := range comps {
		detail.Compactions = append(detail.Compactions, *c.compaction(threadID))
	}
	return detail, nil
}

// outboxRow is a mail_outbox row's send state columns (outboxStateColumns).
type outboxRow struct {
	Seq              int64          `db:"message_seq"`
	SentAt           dbTime         `db:"sent_at"`
	FailedAt         dbTime         `db:"failed_at"`
	NextAt           dbTime         `db:"available_at"`
	Attempts         int            `db:"attempts"`
	LastError        sql.NullString `db:"last_error"`
	BouncedAt        dbTime         `db:"bounced_at"`
	BounceStatus     sql.NullString `db:"bounce_status"`
	BounceDiagnostic sql.NullString `db:"bounce_diagnostic"`
}

// outboxStateColumns are the columns of an outboxRow.
const outboxStateColumns = `message_seq, sent_at, failed_at, available_at, attempts, last_error, bounced_at, bounce_status, bounce_diagnostic`

// state is the SendState the row says: bounced, sent, failed for good, or unsent (NextAt set
// while a claim or a retry time keeps it).
func (r outboxRow) state() SendState {
	st := SendState{Attempts: r.Attempts, LastError: r.LastError.String}
	if r.SentAt.Valid {
		st.SentAt = r.SentAt.Time
	}
	switch {
	case r.BouncedAt.Valid:
		st.Status, st.BouncedAt = "bounced", r.BouncedAt.Time
		st.BounceStatus, st.BounceDiagnostic = r.BounceStatus.String, r.BounceDiagnostic.String
	case r.SentAt.Valid:
		st.Status = "sent"
	case r.FailedAt.Valid:
		st.Status, st.FailedAt = "failed", r.FailedAt.Time
	default:
		st.Status = "unsent"
		if r.NextAt.Valid && !r.NextAt.Time.Equal(notBefore) {
			st.NextAt = r.NextAt.Time
		}
	}
	return st
}

// RunCursor marks where a page of ListRuns ended: the next page starts after it.
type RunCursor struct {
	StartedAt time.Time
	ID        int64
}

// Cursor returns the cursor after r, for RunFilter.After.
func (r Run) Cursor() RunCursor { return RunCursor{StartedAt: r.StartedAt, ID: r.ID} }

// RunFilter selects a page of ListRuns; every field left zero selects all.
type RunFilter struct {
	Persona string
	Kind    RunKind
	Status  RunStatus
	Class   FailureClass
	// Since keeps the runs started at or after it.
	Since time.Time
	// After continues a listing after the run it names (the zero cursor starts with the run
	// started last).
	After RunCursor
	// Limit is the page size (0 = DefaultListLimit, at most MaxListLimit).
	Limit int
}

// ListRuns returns a page of the runs f selects, the last started first (ties by id,
// descending). One query, reading one index in its order from the newest run on, stopped after
// the page: by failure class (runs_class_started) when f.Class is set, else by status
// (runs_status_started), else by persona (runs_persona_started), else all runs (runs_started);
// the other filters are checked on the rows that index yields. Errors: ErrInvalid (wrapped)
// for an unknown kind, status or class, or a bad limit; the database's (wrapped).
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	limit, err := listLimit("runs", f.Limit)
	if err != nil {
		return nil, err
	}
	switch {
	case f.Kind != "" && f.Kind != RunReply && f.Kind != RunScheduled:
		return nil, fmt.Errorf("%w: runs: kind %q (want reply or scheduled)", ErrInvalid, f.Kind)
	case f.Status != "" && !slices.Contains(RunStatuses, f.Status):
		return nil, fmt.Errorf("%w: runs: status %q (want one of %v)", ErrInvalid, f.Status, RunStatuses)
	case f.Class != "" && !f.Class.Valid():
		return nil, fmt.Errorf("%w: runs: failure class %q (want one of %v)", ErrInvalid, f.Class, FailureClasses)
	}
	d := s.dialect
	index := indexRunsStarted
	switch {
	case f.Class != "":
		index = indexRunsClass
	case f.Status != "":
		index = indexRunsStatus
	case f.Persona != "":
		index = indexRunsPersona
	}
	var conds []string
	var args []any
	for _, c := range []struct{ col, v string }{
		{"failure_class", string(f.Class)}, {"status", string(f.Status)}, {"persona", f.Persona}, {"kind", string(f.Kind)},
	} {
		if c.v != "" {
			conds = append(conds, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if !f.Since.IsZero() {
		conds = append(conds, "started_at >= ?")
		args = append(args, d.timeArg(f.Since))
	}
	if !f.After.StartedAt.IsZero() {
		at := d.timeArg(f.After.StartedAt)
		conds = append(conds, "started_at <= ? AND (started_at < ? OR id < ?)")
		args = append(args, at, at, f.After.ID)
	}
	query := "SELECT " + runColumns + " FROM " + d.indexed("runs", index)
	if len(conds) > 0 {
		query += " WHERE " + strings.Join(conds, " AND ")
	}
	query += " ORDER BY started_at DESC, id DESC LIMIT ?"
	var rows []runRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(query), append(args, limit)...); err != nil {
		return nil, fmt.Errorf("store: list runs: %w", err)
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, nil
}

// RunStatuses lists every run status, in the order of their declaration.
var RunStatuses = []RunStatus{RunRunning, RunWaiting, RunSucceeded, RunFailed, RunSkipped, RunAbandoned}

// CallState says what is known of one tool call of a run's timeline.
type CallState string

// The states of a call.
const (
	// CallRecorded: the call's round is recorded (CallTrace.Result holds what the model read).
	CallRecorded CallState = "recorded"
	// CallSettled: the round is not recorded, but the call's outcome is (a tool that is not
	// idempotent returned; CallTrace.Result holds it).
	CallSettled CallState = "settled"
	// CallUnsettled: neither: the call was started and its outcome is unknown. A tool that is
	// not idempotent may have run; a resumed run reports it to the model as of unknown outcome
	// and does not run it again. An idempotent tool runs again.
	CallUnsettled CallState = "unsettled"
)

// CallTrace is one tool call of a turn, with what the store knows of its outcome.
type CallTrace struct {
	Call  chat.ToolCall
	State CallState
	// Result is the recorded result (CallRecorded) or outcome (CallSettled); zero for
	// CallUnsettled.
	Result Result
}

// TurnTrace is one model call of a run and its tool calls.
type TurnTrace struct {
	Turn
	Calls []CallTrace
}

// Timeline is one run as its timeline shows it: the run, the message it answers, every model
// call with its usage, stop reason and tool calls (each with its outcome, or none), and the
// reply it wrote with its send state.
type Timeline struct {
	Run Run
	// Message is the message a reply run answers (nil for a scheduled run, or when it was
	// deleted).
	Message *Message
	// Turns are the run's model calls in order.
	Turns []TurnTrace
	// Reply is the run's reply (nil for none) and ReplyState its outbox state.
	Reply      *Message
	ReplyState *SendState
	// Events are the run's events (who reopened or abandoned it, when, why), oldest first.
	Events []RunEvent
}

// RunTimeline returns the timeline of the run key. Eight queries at most, each by the run's
// keys: the run, the answered message, the turns and their outcomes (two), the recorded rounds,
// the reply and its send state, the events. Errors: ErrRunNotFound (wrapped); the database's (wrapped).
func (s *Store) RunTimeline(ctx context.Context, key string) (Timeline, error) {
	run, err := s.Run(ctx, key)
	if err != nil {
		return Timeline{}, err
	}
	fail := func(err error) (Timeline, error) {
		return Timeline{}, fmt.Errorf("store: timeline of run %q: %w", key, err)
	}
	tl := Timeline{Run: run}
	owner := Owner{Type: OwnerRun, ID: run.ID}
	if run.Kind == RunReply {
		owner = Owner{Type: OwnerMessage, ID: run.MessageSeq}
		if m, err := s.MessageBySeq(ctx, run.MessageSeq); err == nil {
			tl.Message = &m
		} else if !isNotFound(err) {
			return fail(err)
		}
	}
	turns, err := s.Turns(ctx, run.ID)
	if err != nil {
		return fail(err)
	}
	rounds, err := s.Rounds(ctx, owner, run.Key)
	if err != nil {
		return fail(err)
	}
	recorded := map[int]Round{}
	for _, r := range rounds {
		recorded[r.TurnIndex] = r
	}
	for _, t := range turns {
		tt := TurnTrace{Turn: t}
		round, hasRound := recorded[t.TurnIndex]
		settled := map[int]Result{}
		for _, o := range t.Outcomes {
			settled[o.Position] = o.Result
		}
		for i, c := range t.ToolCalls {
			ct := CallTrace{Call: c, State: CallUnsettled}
			if res, ok := settled[i]; ok {
				ct.State, ct.Result = CallSettled, res
			}
			if hasRound && i < len(round.Results) {
				ct.State, ct.Result = CallRecorded, round.Results[i]
			}
			tt.Calls = append(tt.Calls, ct)
		}
		tl.Turns = append(tl.Turns, tt)
	}
	if run.Kind == RunReply {
		reply, err := s.ReplyOf(ctx, run.Key)
		switch {
		case err == nil:
			tl.Reply = &reply
			st, err := s.ReplyState(ctx, reply.Seq)
			if err == nil {
				tl.ReplyState = &st
			} else if !isNotFound(err) {
				return fail(err)
			}
		case !isNotFound(err):
			return fail(err)
		}
	}
	if tl.Events, err = s.RunEvents(ctx, key); err != nil {
		return fail(err)
	}
	return tl, nil
}

// isNotFound reports whether err says a message or run is not stored.
func isNotFound(err error) bool {
	return errors.Is(err, ErrMessageNotFound) || errors.Is(err, ErrRunNotFound)
}

// FireTrail is the status trail of one responsibility: its fires with a run, the latest first.
type FireTrail struct {
	Persona        string
	Responsibility string
	Fires          []Run
}

// FireTrails returns the trail of every responsibility with a run (of persona, or of every
// persona for ""), ordered by persona and responsibility, each with its latest n fires (0 =
// 10, at most MaxListLimit) by fire instant. One query for the responsibilities (the fire index,
// runs_fire, grouped: MariaDB reads one entry per responsibility, SQLite the whole index), then
// one per responsibility reading its latest n entries of runs_fire. Errors: ErrInvalid
// (wrapped) for a bad n; the database's (wrapped).
func (s *Store) FireTrails(ctx context.Context, persona string, n int) ([]FireTrail, error) {
	if n == 0 {
		n = 10
	}
	if n < 0 || n > MaxListLimit {
		return nil, fmt.Errorf("%w: fire trails: %d fires each (want 1 to %d)", ErrInvalid, n, MaxListLimit)
	}
	d := s.dialect
	q := `SELECT persona, responsibility FROM ` + d.indexed("runs", "runs_fire") + ` WHERE responsibility IS NOT NULL`
	var args []any
	if persona != "" {
		q += " AND persona = ?"
		args = append(args, persona)
	}
	q += " GROUP BY persona, responsibility ORDER BY persona, responsibility"
	var rows []struct {
		Persona        string `db:"persona"`
		Responsibility string `db:"responsibility"`
	}
	if err := s.db.SelectContext(ctx, &rows, d.rebind(q), args...); err != nil {
		return nil, fmt.Errorf("store: list fire trails: %w", err)
	}
	out := make([]FireTrail, 0, len(rows))
	for _, p := range rows {
		fires, err := s.fireTrail(ctx, p.Persona, p.Responsibility, n)
		if err != nil {
			return nil, err
		}
		out = append(out, FireTrail{Persona: p.Persona, Responsibility: p.Responsibility, Fires: fires})
	}
	return out, nil
}

// fireTrail reads the latest n fires of one responsibility.
func (s *Store) fireTrail(ctx context.Context, persona, responsibility string, n int) ([]Run, error) {
	var rows []runRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind("SELECT "+runColumns+" FROM "+s.dialect.indexed("runs", "runs_fire")+
		" WHERE persona = ? AND responsibility = ? ORDER BY fire_at DESC LIMIT ?"), persona, responsibility, n); err != nil {
		return nil, fmt.Errorf("store: read the fires of %s/%s: %w", persona, responsibility, err)
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, nil
}

// OutboxEntry is one reply of the outbox with its send state.
type OutboxEntry struct {
	Seq       int64
	Mailbox   string
	ThreadID  string
	MessageID string
	RunKey    string
	Subject   string
	To        []string
	// Date is the reply's Date header.
	Date  time.Time
	State SendState
}

// Outbox statuses OutboxQuery.Status selects.
const (
	// OutboxUnsent: replies waiting to be sent (or being sent), the longest waiting first.
	OutboxUnsent = "unsent"
	// OutboxFailed: replies whose sending failed for good, the latest failure first.
	OutboxFailed = "failed"
	// OutboxBounced: replies a delivery report said could not be delivered (MarkBounced), the
	// latest reply first.
	OutboxBounced = "bounced"
)

// OutboxQuery selects a page of Outbox.
type OutboxQuery struct {
	// Status is OutboxUnsent, OutboxFailed or OutboxBounced.
	Status string
	// Mailbox keeps one persona's replies ("" for all).
	Mailbox string
	// Limit is the page size (0 = DefaultListLimit, at most MaxListLimit).
	Limit int
}

// Outbox returns a page of the outbox's replies in q.Status: the unsent ones in the order they
// are claimed (mail_outbox_available), the failed ones, the latest failure first
// (mail_outbox_failed), or the bounced ones, the latest reply first, each joined with its
// message by seq. One query. The bounced ones have no index of their own (the bounce columns
// came without one): that page reads the outbox backwards from its newest reply until it found
// Limit bounced ones, which on an outbox of few bounces is most of it. Errors: ErrInvalid
// (wrapped) for an unknown status or a bad limit; the database's (wrapped).
func (s *Store) Outbox(ctx context.Context, q OutboxQuery) ([]OutboxEntry, error) {
	limit, err := listLimit("outbox", q.Limit)
	if err != nil {
		return nil, err
	}
	d := s.dialect
	var from, where, order string
	switch q.Status {
	case OutboxUnsent:
		from, where, order = d.indexed("mail_outbox o", indexOutbox), "o.available_at IS NOT NULL", "o.available_at, o.message_seq"
	case OutboxFailed:
		from, where, order = d.indexed("mail_outbox o", indexOutboxFailed), "o.failed_at IS NOT NULL AND o.bounced_at IS NULL", "o.failed_at DESC, o.message_seq DESC"
	case OutboxBounced:
		from, where, order = "mail_outbox o", "o.bounced_at IS NOT NULL", "o.message_seq DESC"
	default:
		return nil, fmt.Errorf("%w: outbox: status %q (want %s, %s or %s)", ErrInvalid, q.Status, OutboxUnsent, OutboxFailed, OutboxBounced)
	}
	args := []any{}
	if q.Mailbox != "" {
		where += " AND o.mailbox = ?"
		args = append(args, q.Mailbox)
	}
	var rows []struct {
		outboxRow
		Mailbox    string         `db:"mailbox"`
		ThreadID   string         `db:"thread_id"`
		MessageID  string         `db:"message_id"`
		RunKey     sql.NullString `db:"run_key"`
		Subject    string         `db:"subject"`
		Recipients string         `db:"recipients"`
		Date       dbTime         `db:"sent_on"`
	}
	query := `SELECT ` + prefixedColumns("o.", outboxStateColumns) + `, o.mailbox,
		m.thread_id, m.message_id, m.run_key, m.subject, m.recipients, m.sent_at AS sent_on
		FROM ` + from + ` ` + d.joinInOrder() + ` messages m ON m.seq = o.message_seq WHERE ` + where + ` ORDER BY ` + order + ` LIMIT ?`
	if err := s.db.SelectContext(ctx, &rows, d.rebind(query), append(args, limit)...); err != nil {
		return nil, fmt.Errorf("store: list the outbox: %w", err)
	}
	out := make([]OutboxEntry, len(rows))
	for i, r := range rows {
		e := OutboxEntry{Seq: r.Seq, Mailbox: r.Mailbox, ThreadID: r.ThreadID, MessageID: r.MessageID, RunKey: r.RunKey.String,
			Subject: r.Subject, Date: r.Date.Time, State: r.state()}
		if err := decodeList(r.Recipients, &e.To); err != nil {
			return nil, fmt.Errorf("store: list the outbox: reply %d recipients: %w", r.Seq, err)
		}
		out[i] = e
	}
	return out, nil
}

// OutboxCounts counts the outbox's replies by state: Unsent waiting (or being sent), Failed
// for good.
type OutboxCounts struct {
	Unsent int64
	Failed int64
}

// CountOutbox counts the outbox's replies by state. One query, reading two indexes.
func (s *Store) CountOutbox(ctx context.Context) (OutboxCounts, error) {
	var c OutboxCounts
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM mail_outbox WHERE available_at IS NOT NULL),
		(SELECT COUNT(*) FROM mail_outbox WHERE failed_at IS NOT NULL)`).Scan(&c.Unsent, &c.Failed); err != nil {
		return OutboxCounts{}, fmt.Errorf("store: count the outbox: %w", err)
	}
	return c, nil
}

// CountRunning counts the runs that are running (worked on, or stopped and resumable). One
// query, reading the index of runs by status.
func (s *Store) CountRunning(ctx context.Context) (int64, error) {
	var n int64
	if err := s.db.GetContext(ctx, &n, s.dialect.rebind(`SELECT COUNT(*) FROM `+s.dialect.indexed("runs", indexRunsStatus)+
		` WHERE status = 'running'`)); err != nil {
		return 0, fmt.Errorf("store: count running runs: %w", err)
	}
	return n, nil
}

// RunCount counts the runs of one status started in one hour.
type RunCount struct {
	// Hour is the hour's start, in UTC.
	Hour   time.Time
	Status RunStatus
	Runs   int64
}

// RunsPerHour counts the runs started at or after since, by the UTC hour they started in and
// their status, oldest hour first (statuses in RunStatuses order). One query over the runs
// started since (runs_started). Errors: the database's (wrapped).
func (s *Store) RunsPerHour(ctx context.Context, since time.Time) ([]RunCount, error) {
	d := s.dialect
	var rows []struct {
		Hour   string `db:"hour"`
		Status string `db:"status"`
		Runs   int64  `db:"runs"`
	}
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT `+d.hourOf("started_at")+` AS hour, status, COUNT(*) AS runs FROM `+
		d.indexed("runs", indexRunsStarted)+` WHERE started_at >= ? GROUP BY hour, status`), d.timeArg(since)); err != nil {
		return nil, fmt.Errorf("store: count runs per hour: %w", err)
	}
	out := make([]RunCount, 0, len(rows))
	for _, r := range rows {
		h, err := time.Parse("2006-01-02 15", r.Hour)
		if err != nil {
			return nil, fmt.Errorf("store: count runs per hour: hour %q: %w", r.Hour, err)
		}
		out = append(out, RunCount{Hour: h, Status: RunStatus(r.Status), Runs: r.Runs})
	}
	slices.SortFunc(out, func(a, b RunCount) int {
		if c := a.Hour.Compare(b.Hour); c != 0 {
			return c
		}
		return slices.Index(RunStatuses, a.Status) - slices.Index(RunStatuses, b.Status)
	})
	return out, nil
}

// DayUsage is the model usage of the runs started on one day.
type DayUsage struct {
	// Day is the day's start (midnight UTC).
	Day   time.Time
	Runs  int64
	Usage chat.Usage
}

// UsagePerDay sums the model usage of the runs started at or after since, by the UTC day they
// started on, oldest day first. A run's usage is its total as FinishRun stored it (0 while it
// runs). One query over the runs started since (runs_started). Errors: the database's
// (wrapped).
func (s *Store) UsagePerDay(ctx context.Context, since time.Time) ([]DayUsage, error) {
	d := s.dialect
	var rows []struct {
		Day        string `db:"day"`
		Runs       int64  `db:"runs"`
		Input      int64  `db:"input"`
		Output     int64  `db:"output"`
		CacheRead  int64  `db:"cache_read"`
		CacheWrite int64  `db:"cache_write"`
	}
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT `+d.dayOf("started_at")+` AS day, COUNT(*) AS runs,
		SUM(input_tokens) AS input, SUM(output_tokens) AS output, SUM(cache_read_tokens) AS cache_read,
		SUM(cache_write_tokens) AS cache_write FROM `+d.indexed("runs", indexRunsStarted)+` WHERE started_at >= ? GROUP BY day ORDER BY day`),
		d.timeArg(since)); err != nil {
		return nil, fmt.Errorf("store: sum usage per day: %w", err)
	}
	out := make([]DayUsage, 0, len(rows))
	for _, r := range rows {
		day, err := time.Parse(time.DateOnly, r.Day)
		if err != nil {
			return nil, fmt.Errorf("store: sum usage per day: day %q: %w", r.Day, err)
		}
		out = append(out, DayUsage{Day: day, Runs: r.Runs, Usage: chat.Usage{InputTokens: r.Input, OutputTokens: r.Output,
			CacheReadTokens: r.CacheRead, CacheWriteTokens: r.CacheWrite}})
	}
	return out, nil
}
