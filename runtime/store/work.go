package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

// Pending work is rows, kept at write time, that any number of workers (runtime/service
// processes) claim under a lease:
//
//   - reply work: one pending_replies row per mailbox and thread with inbound messages to
//     answer. A trigger writes it in the statement that stores such a message (inbound, no
//     not-to-answer reason, no run key), so no stored message is ever without its work and a
//     redelivered message, which stores nothing, adds none. FirstSeq and LastSeq are the oldest
//     and newest unanswered messages of the thread.
//   - send work: the unsent replies of the outbox (mail_outbox), written with each reply.
//
// A claim is one statement that reads the index of available work only and changes one row: on
// MySQL an UPDATE … ORDER BY … LIMIT 1 that hands the claimed key back through
// LAST_INSERT_ID(expr) in its OK packet, on SQLite an UPDATE … RETURNING under the database's one
// writer. The claimed row becomes available again when the claim's lease ends, so a worker that
// died loses nothing: another claims the row when the lease is over.

// notBefore is the available_at of work that may be claimed at once (the earliest DATETIME).
var notBefore = time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)

// DefaultWorkLease is how long a claim of pending work lasts when the claimer gives no lease.
// A reply's run is protected by its own run lease; this one only keeps other workers from
// claiming the same thread while the run starts and finishes.
const DefaultWorkLease = 5 * time.Minute

// ReplyClaim asks ClaimReply for the next thread to answer.
type ReplyClaim struct {
	// Mailboxes are the mailboxes (persona names) to claim work of; at least one. A mailbox
	// left out (a persona at its concurrency limit, say) is skipped, not waited for.
	Mailboxes []string
	// EachMessage are the mailboxes, of Mailboxes, whose personas answer every message of a
	// thread on its own: their claims answer FirstSeq. Every other mailbox answers LastSeq, with
	// the messages before it in the run's view (one run answers them all).
	EachMessage []string
	// Holder names the claiming worker (at most MaxNameChars characters, not empty).
	Holder string
	// LeaseFor is how long the claim lasts; 0 = DefaultWorkLease.
	LeaseFor time.Duration
}

// ClaimedReply is the work ClaimReply claimed: the message to answer and its mailbox.
type ClaimedReply struct {
	Seq     int64
	Mailbox string
}

// MaxClaimMailboxes bounds ReplyClaim.Mailboxes.
const MaxClaimMailboxes = 1000

// ClaimReply claims the longest-waiting available thread of c.Mailboxes and returns the message
// to answer — the thread's newest unanswered message, or its oldest for a mailbox in
// c.EachMessage — and its mailbox. ok is false when no work is available. Work is available when it was never
// claimed, when its claim's lease ended, or when its retry time (ReleaseReply) passed; among
// available threads the one available longest goes first, ties by the oldest message, so one
// busy thread or mailbox cannot starve the others beyond its turn. One statement. Errors:
// ErrInvalid (wrapped) for an empty Mailboxes, more than MaxClaimMailboxes of them, or a bad
// Holder, or the database's (wrapped).
func (s *Store) ClaimReply(ctx context.Context, c ReplyClaim) (w ClaimedReply, ok bool, err error) {
	if len(c.Mailboxes) == 0 || len(c.Mailboxes) > MaxClaimMailboxes {
		return w, false, fmt.Errorf("%w: claim reply: %d mailboxes (want 1 to %d)", ErrInvalid, len(c.Mailboxes), MaxClaimMailboxes)
	}
	if err := checkKey("work holder", c.Holder, MaxNameChars); err != nil {
		return w, false, err
	}
	now, err := s.clock()
	if err != nil {
		return w, false, err
	}
	until := now.Add(workLease(c.LeaseFor))
	args := s.dialect.replyClaimArgs(c.Holder, until, now, c.EachMessage, c.Mailboxes)
	q := s.dialect.replyClaimQuery(len(c.EachMessage), len(c.Mailboxes))
	if s.dialect == DialectSQLite {
		err = s.retrying(ctx, func() error { return s.db.QueryRowContext(ctx, q, args...).Scan(&w.Seq, &w.Mailbox) })
		if errors.Is(err, sql.ErrNoRows) {
			return w, false, nil
		}
		if err != nil {
			return w, false, fmt.Errorf("store: claim reply work: %w", err)
		}
		return w, true, nil
	}
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return w, false, fmt.Errorf("store: claim reply work: %w", err)
	}
	code, ok, err := claimed(res)
	if err != nil || !ok {
		return w, false, err
	}
	i := int(code % claimMailboxCode)
	if i < 1 || i > len(c.Mailboxes) {
		return w, false, fmt.Errorf("store: claim reply work: the claim answered mailbox number %d of %d", i, len(c.Mailboxes))
	}
	return ClaimedReply{Seq: code / claimMailboxCode, Mailbox: c.Mailboxes[i-1]}, true, nil
}

// claimMailboxCode is how a MySQL reply claim hands back two values through LAST_INSERT_ID's
// one integer: the claimed seq times claimMailboxCode plus the 1-based position of the row's
// mailbox in the claim's list (FIELD).
const claimMailboxCode = 1024

// Indexes the claims read through (named in the statements, so that no statistics can turn
// a claim into a scan; TestWorkClaimPlans pins the plans).
const (
	indexPendingReplies = "pending_replies_available"
	indexOutbox         = "mail_outbox_available"
)

// replyClaimQuery is ClaimReply's statement for each EachMessage and mailboxes Mailboxes. Its
// arguments: holder, lease end, the EachMessage mailboxes, on MySQL the mailboxes (for FIELD),
// now, the mailboxes.
func (d Dialect) replyClaimQuery(each, mailboxes int) string {
	answer := "last_seq"
	if each > 0 {
		answer = "CASE WHEN mailbox IN (" + placeholders(each) + ") THEN first_seq ELSE last_seq END"
	}
	where := `available_at <= ? AND mailbox IN (` + placeholders(mailboxes) + `) ORDER BY available_at, first_seq LIMIT 1`
	if d == DialectSQLite {
		return d.rebind(`UPDATE pending_replies SET holder = ?, available_at = ?, claim_seq = ` + answer + `
			WHERE rowid = (SELECT rowid FROM ` + d.indexed("pending_replies", indexPendingReplies) + ` WHERE ` + where + `)
			RETURNING claim_seq, mailbox`)
	}
	// MySQL has no UPDATE … RETURNING: the claimed seq and the mailbox's position come back
	// through LAST_INSERT_ID(expr) (see claimMailboxCode), evaluated in the last assignment,
	// after claim_seq got its value (MySQL assigns left to right).
	return d.rebind(`UPDATE ` + d.indexed("pending_replies", indexPendingReplies) + `
		SET holder = ?, available_at = ?, claim_seq = ` + answer + `,
			attempts = attempts + 0 * LAST_INSERT_ID(claim_seq * 1024 + FIELD(mailbox, ` + placeholders(mailboxes) + `))
		WHERE ` + where)
}

// replyClaimArgs are replyClaimQuery's arguments, in its order.
func (d Dialect) replyClaimArgs(holder string, until, now time.Time, each, mailboxes []string) []any {
	args := append([]any{holder, d.timeArg(until)}, stringArgs(each)...)
	if d == DialectMySQL {
		args = append(args, stringArgs(mailboxes)...) // FIELD's list
	}
	return append(append(args, d.timeArg(now)), stringArgs(mailboxes)...)
}

// sendClaimQuery is ClaimSend's statement for mailboxes Mailboxes. Its arguments: holder, lease
// end, now, the mailboxes.
func (d Dialect) sendClaimQuery(mailboxes int) string {
	where := `available_at <= ? AND mailbox IN (` + placeholders(mailboxes) + `) ORDER BY available_at, message_seq LIMIT 1`
	if d == DialectSQLite {
		return d.rebind(`UPDATE mail_outbox SET holder = ?, available_at = ?, attempts = attempts + 1
			WHERE message_seq = (SELECT message_seq FROM ` + d.indexed("mail_outbox", indexOutbox) + ` WHERE ` + where + `)
			RETURNING message_seq`)
	}
	return d.rebind(`UPDATE ` + d.indexed("mail_outbox", indexOutbox) + `
		SET holder = ?, available_at = ?, attempts = attempts + 1, message_seq = LAST_INSERT_ID(message_seq) WHERE ` + where)
}

// claimed reads a MySQL claim's result: the key LAST_INSERT_ID(expr) handed back, when the
// statement changed a row.
func claimed(res sql.Result) (int64, bool, error) {
	n, err := res.RowsAffected()
	if err != nil || n == 0 {
		return 0, false, err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, false, err
	}
	return id, true, nil
}

// CompleteReply records that the run answering seq of the thread threadID in mailbox finished
// (succeeded, failed or skipped), as the holder of the thread's claim: the messages up to seq
// are answered. When no later message arrived, the thread's work is removed; when one did, the
// work moves on to the first unanswered message after seq and is available at once. One
// statement when the thread is done, three when it moved on. A claim that is no longer the
// holder's (its lease ended and another worker claimed the thread) is left alone, and done is
// false; so is work that is gone already (a retry). Errors: the database's (wrapped).
func (s *Store) CompleteReply(ctx context.Context, mailbox, threadID string, seq int64, holder string) (done bool, err error) {
	n, err := s.affected(ctx, s.dialect.rebind(`DELETE FROM pending_replies WHERE mailbox = ? AND thread_id = ? AND holder = ? AND last_seq <= ?`),
		mailbox, threadID, holder, seq)
	if err != nil {
		return false, fmt.Errorf("store: complete reply work of thread %q: %w", threadID, err)
	}
	if n == 1 {
		return true, nil
	}
	// A later message arrived while the run worked (or the claim is not ours): the next
	// unanswered message, read apart from the write so that the write locks no message row.
	var next sql.NullInt64
	if err := s.db.GetContext(ctx, &next, s.dialect.rebind(`SELECT MIN(seq) FROM messages WHERE thread_id = ? AND mailbox = ? AND seq > ?
		AND direction = 'inbound' AND COALESCE(not_to_answer, '') = '' AND run_key IS NULL`), threadID, mailbox, seq); err != nil {
		return false, fmt.Errorf("store: complete reply work of thread %q: %w", threadID, err)
	}
	if !next.Valid {
		// The later row's message must exist; without one the row is stale (its messages were
		// deleted): remove it.
		n, err = s.affected(ctx, s.dialect.rebind(`DELETE FROM pending_replies WHERE mailbox = ? AND thread_id = ? AND holder = ?`), mailbox, threadID, holder)
	} else {
		n, err = s.affected(ctx, s.dialect.rebind(`UPDATE pending_replies SET first_seq = ?, available_at = ?, holder = '', attempts = 0, last_error = NULL
			WHERE mailbox = ? AND thread_id = ? AND holder = ? AND first_seq <= ?`),
			next.Int64, s.dialect.timeArg(notBefore), mailbox, threadID, holder, next.Int64)
	}
	if err != nil {
		return false, fmt.Errorf("store: complete reply work of thread %q: %w", threadID, err)
	}
	return n == 1, nil
}

// ReleaseReply gives back the holder's claim of the thread threadID in mailbox without its work
// done, to be claimed again at at (a retry time; the zero time means at once): after a
// transient failure, a busy thread, or a worker's graceful stop. cause, when not empty, is
// recorded as the work's last error (clipped to StoredPayloadLimit characters), and failed
// adds one to its attempts; a stop that was no failure (a shutdown) passes false. A claim that
// is no longer the holder's is left alone (released false). Errors: the database's (wrapped).
func (s *Store) ReleaseReply(ctx context.Context, mailbox, threadID, holder string, at time.Time, cause string, failed bool) (released bool, err error) {
	if at.IsZero() {
		at = notBefore
	}
	if err := checkTime("retry time", at); err != nil {
		return false, err
	}
	inc := 0
	if failed {
		inc = 1
	}
	n, err := s.affected(ctx, s.dialect.rebind(`UPDATE pending_replies SET available_at = ?, holder = '', attempts = attempts + ?,
		last_error = CASE WHEN ? = '' THEN last_error ELSE ? END WHERE mailbox = ? AND thread_id = ? AND holder = ?`),
		s.dialect.timeArg(at), inc, cause, clipReason(cause), mailbox, threadID, holder)
	if err != nil {
		return false, fmt.Errorf("store: release reply work of thread %q: %w", threadID, err)
	}
	return n == 1, nil
}

// ReleaseHolder gives back every claim holder holds — threads' reply work and replies to send —
// to be claimed again at once, and returns how many of each it gave back. A worker calls it as
// it starts under the name it had before (a replica's stable name, see runtime/service
// Config.Holder): holder names are unique among the workers running at once, so any claim under
// its name is its earlier process's, cut off by a crash, and another wait for the claims' leases
// would only delay the work. Two statements, each reading the claimed and retry-waiting rows of
// the available-work index only (a claim's available_at is its lease's end, in the future).
// Errors: ErrInvalid (wrapped) for a bad holder, or the database's (wrapped).
func (s *Store) ReleaseHolder(ctx context.Context, holder string) (replies, sends int64, err error) {
	if err := checkKey("work holder", holder, MaxNameChars); err != nil {
		return 0, 0, err
	}
	now, err := s.clock()
	if err != nil {
		return 0, 0, err
	}
	q, args := s.dialect.releaseHolderQuery("pending_replies", indexPendingReplies, holder, now)
	if replies, err = s.affected(ctx, q, args...); err != nil {
		return 0, 0, fmt.Errorf("store: give back the reply claims of %q: %w", holder, err)
	}
	q, args = s.dialect.releaseHolderQuery("mail_outbox", indexOutbox, holder, now)
	if sends, err = s.affected(ctx, q, args...); err != nil {
		return replies, 0, fmt.Errorf("store: give back the send claims of %q: %w", holder, err)
	}
	return replies, sends, nil
}

// releaseHolderQuery is ReleaseHolder's statement on table (pending_replies or mail_outbox,
// through its available-work index) and its arguments.
func (d Dialect) releaseHolderQuery(table, index, holder string, now time.Time) (string, []any) {
	return d.rebind(`UPDATE ` + d.indexed(table, index) + ` SET available_at = ?, holder = '' WHERE available_at > ? AND holder = ?`),
		[]any{d.timeArg(notBefore), d.timeArg(now), holder}
}

// PendingReply is one thread with inbound messages waiting for an answer.
type PendingReply struct {
	Mailbox  string
	ThreadID string
	// FirstSeq and LastSeq are the oldest and newest unanswered inbound messages of the thread.
	FirstSeq int64
	LastSeq  int64
	// ClaimSeq is the message the current or last claim answers (0 before the first claim).
	ClaimSeq int64
	// AvailableAt is when the work may be claimed next: the zero time for at once, the end of
	// its claim's lease while a worker holds it (Holder set), or its retry time.
	AvailableAt time.Time
	Holder      string
	// Attempts counts the claims that ended in a failure; LastError is the newest one's text.
	Attempts  int
	LastError string
}

// PendingReplies returns the pending reply work of mailbox ("" for every mailbox), the
// longest-waiting first, at most limit rows (limit must be positive). One query.
func (s *Store) PendingReplies(ctx context.Context, mailbox string, limit int) ([]PendingReply, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: pending replies: limit %d (want a positive number)", ErrInvalid, limit)
	}
	q := `SELECT mailbox, thread_id, first_seq, last_seq, claim_seq, available_at, holder, attempts, last_error FROM pending_replies`
	args := []any{}
	if mailbox != "" {
		q += ` WHERE mailbox = ?`
		args = append(args, mailbox)
	}
	q += ` ORDER BY available_at, first_seq LIMIT ?`
	rows, err := s.db.QueryContext(ctx, s.dialect.rebind(q), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("store: read pending replies: %w", err)
	}
	defer rows.Close()
	var out []PendingReply
	for rows.Next() {
		var p PendingReply
		var at dbTime
		var last sql.NullString
		if err := rows.Scan(&p.Mailbox, &p.ThreadID, &p.FirstSeq, &p.LastSeq, &p.ClaimSeq, &at, &p.Holder, &p.Attempts, &last); err != nil {
			return nil, fmt.Errorf("store: read pending replies: %w", err)
		}
		if !at.Time.Equal(notBefore) {
			p.AvailableAt = at.Time
		}
		p.LastError = last.String
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read pending replies: %w", err)
	}
	return out, nil
}

// SendClaim asks ClaimSend for the next unsent reply.
type SendClaim struct {
	// Mailboxes are the mailboxes whose replies to claim; at least one.
	Mailboxes []string
	// Holder names the claiming worker (at most MaxNameChars characters, not empty).
	Holder string
	// LeaseFor is how long the claim lasts; 0 = DefaultWorkLease.
	LeaseFor time.Duration
}

// ClaimSend claims the longest-waiting available unsent reply of c.Mailboxes and returns its
// seq (ok false when there is none), adding one to its attempts. A reply is available when it
// was never claimed, when its claim's lease ended, or when its retry time (SendFailed) passed;
// a sent reply and one whose sending failed for good are never claimed. One statement. Errors:
// ErrInvalid (wrapped) for an empty Mailboxes or a bad Holder, or the database's (wrapped).
func (s *Store) ClaimSend(ctx context.Context, c SendClaim) (seq int64, ok bool, err error) {
	if len(c.Mailboxes) == 0 {
		return 0, false, fmt.Errorf("%w: claim send: no mailboxes", ErrInvalid)
	}
	if err := checkKey("work holder", c.Holder, MaxNameChars); err != nil {
		return 0, false, err
	}
	now, err := s.clock()
	if err != nil {
		return 0, false, err
	}
	args := append([]any{c.Holder, s.dialect.timeArg(now.Add(workLease(c.LeaseFor))), s.dialect.timeArg(now)}, stringArgs(c.Mailboxes)...)
	q := s.dialect.sendClaimQuery(len(c.Mailboxes))
	if s.dialect == DialectSQLite {
		err = s.retrying(ctx, func() error { return s.db.QueryRowContext(ctx, q, args...).Scan(&seq) })
		if errors.Is(err, sql.ErrNoRows) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, fmt.Errorf("store: claim send work: %w", err)
		}
		return seq, true, nil
	}
	res, err := s.exec(ctx, q, args...)
	if err != nil {
		return 0, false, fmt.Errorf("store: claim send work: %w", err)
	}
	return claimed(res)
}

// SendFailed records a failed attempt to send the reply seq by the holder of its claim: with
// retryAt set, the failure is transient and the reply is available again then; with retryAt
// zero it is permanent, the reply leaves the outbox unsent and ReplyState reports it failed.
// cause is the failure's text (the server's reply, say), clipped to StoredPayloadLimit
// characters. A claim that is no longer the holder's, or a reply already sent, is left alone
// (recorded false). Errors: the database's (wrapped).
func (s *Store) SendFailed(ctx context.Context, seq int64, holder string, retryAt time.Time, cause string) (recorded bool, err error) {
	now, err := s.clock()
	if err != nil {
		return false, err
	}
	var q string
	var args []any
	if retryAt.IsZero() {
		q = `UPDATE mail_outbox SET available_at = NULL, failed_at = ?, holder = '', last_error = ?
			WHERE message_seq = ? AND holder = ? AND sent_at IS NULL`
		args = []any{s.dialect.timeArg(now), clipReason(cause), seq, holder}
	} else {
		if err := checkTime("retry time", retryAt); err != nil {
			return false, err
		}
		q = `UPDATE mail_outbox SET available_at = ?, holder = '', last_error = ?
			WHERE message_seq = ? AND holder = ? AND sent_at IS NULL AND failed_at IS NULL`
		args = []any{s.dialect.timeArg(retryAt), clipReason(cause), seq, holder}
	}
	n, err := s.affected(ctx, s.dialect.rebind(q), args...)
	if err != nil {
		return false, fmt.Errorf("store: record the failed send of reply %d: %w", seq, err)
	}
	return n == 1, nil
}

// SendState is where a reply stands in the outbox.
type SendState struct {
	// Status is "unsent" (waiting, or being sent), "sent", "failed" (permanently) or "bounced"
	// (a delivery report said it could not be delivered: MarkBounced; SentAt is set when it was
	// marked sent too, which a crash between the relay's 250 and the mark can leave undone).
	Status string
	// SentAt is when it was marked sent; FailedAt when its sending failed for good.
	SentAt   time.Time
	FailedAt time.Time
	// Attempts counts the claims to send it; LastError is the last failure's text.
	Attempts  int
	LastError string
	// NextAt is when an unsent reply may be claimed next (zero for at once).
	NextAt time.Time
	// BouncedAt is when its bounce was recorded, BounceStatus the report's enhanced status code
	// ("5.1.1") and BounceDiagnostic its text; zero values when it did not bounce.
	BouncedAt        time.Time
	BounceStatus     string
	BounceDiagnostic string
}

// ReplyState returns the outbox state of the reply seq. ErrMessageNotFound (wrapped) when seq is
// not a reply in the outbox; the database's errors (wrapped).
func (s *Store) ReplyState(ctx context.Context, seq int64) (SendState, error) {
	var rows []outboxRow
	err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT `+outboxStateColumns+` FROM mail_outbox WHERE message_seq = ?`), seq)
	if err != nil {
		return SendState{}, fmt.Errorf("store: read the outbox state of reply %d: %w", seq, err)
	}
	if len(rows) == 0 {
		return SendState{}, fmt.Errorf("store: reply %d: %w: not a reply in the outbox", seq, ErrMessageNotFound)
	}
	return rows[0].state(), nil
}

// workLease returns d, or DefaultWorkLease for 0.
func workLease(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultWorkLease
	}
	return d
}

// stringArgs converts strings into query arguments.
func stringArgs(list []string) []any {
	out := make([]any, len(list))
	for i, v := range list {
		out[i] = v
	}
	return out
}

// PendingCounts counts pending work: Replies, the threads with inbound messages waiting for an
// answer; Sends, the replies waiting to be sent (a reply whose sending failed for good is not
// counted).
type PendingCounts struct {
	Replies int64
	Sends   int64
}

// CountPending counts the pending work. One query, reading the two indexes of pending work.
func (s *Store) CountPending(ctx context.Context) (PendingCounts, error) {
	var c PendingCounts
	err := s.db.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM pending_replies),
		(SELECT COUNT(*) FROM mail_outbox WHERE available_at IS NOT NULL)`).Scan(&c.Replies, &c.Sends)
	if err != nil {
		return PendingCounts{}, fmt.Errorf("store: count pending work: %w", err)
	}
	return c, nil
}

// RequeueReply makes the message seq of the thread threadID in mailbox pending again, to be
// claimed at once: the thread's reply work is created, or widened to include seq and made
// available now when it exists (a claim in progress keeps its holder until it ends). An
// operator's retry of a failed reply run uses it after reopening the run, so a service answers
// the message again; it changes no run. Errors: ErrMessageNotFound (wrapped) when seq is not an
// inbound message of that thread and mailbox; the database's (wrapped).
func (s *Store) RequeueReply(ctx context.Context, mailbox, threadID string, seq int64) error {
	m, err := s.messageWhere(ctx, "seq = ?", seq)
	if err != nil {
		return fmt.Errorf("store: requeue message %d: %w", seq, err)
	}
	if m.Mailbox != mailbox || m.ThreadID != threadID || m.Direction != history.Inbound {
		return fmt.Errorf("store: requeue message %d: %w: not an inbound message of thread %q in mailbox %q", seq, ErrMessageNotFound, threadID, mailbox)
	}
	if err := s.requeue(ctx, mailbox, threadID, seq); err != nil {
		return fmt.Errorf("store: requeue message %d: %w", seq, err)
	}
	return nil
}

// requeue creates the reply work of the thread threadID in mailbox with the message seq, or
// widens it to include seq and makes it available now when no worker holds it. One statement.
func (s *Store) requeue(ctx context.Context, mailbox, threadID string, seq int64) error {
	at := s.dialect.timeArg(notBefore)
	var q string
	if s.dialect == DialectSQLite {
		q = `INSERT INTO pending_replies (mailbox, thread_id, first_seq, last_seq, available_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (mailbox, thread_id) DO UPDATE SET first_seq = min(first_seq, excluded.first_seq),
				last_seq = max(last_seq, excluded.last_seq),
				available_at = CASE WHEN holder = '' THEN excluded.available_at ELSE available_at END`
	} else {
		q = `INSERT INTO pending_replies (mailbox, thread_id, first_seq, last_seq, available_at) VALUES (?, ?, ?, ?, ?)
			ON DUPLICATE KEY UPDATE first_seq = LEAST(first_seq, VALUES(first_seq)), last_seq = GREATEST(last_seq, VALUES(last_seq)),
				available_at = CASE WHEN holder = '' THEN VALUES(available_at) ELSE available_at END`
	}
	_, err := s.exec(ctx, s.dialect.rebind(q), mailbox, threadID, seq, seq, at)
	return err
}
