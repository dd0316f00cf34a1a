package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"
)

// OperatorAction is one thing an operator did that no run event holds, a row of the
// operator_actions table: a reply sent again, a thread deleted by retention. Actions on runs
// (a run reopened, abandoned) are run events.
type OperatorAction struct {
	// ID orders the actions: a later action has a larger ID.
	ID int64
	// At is when it was done, on the store's clock, in UTC.
	At time.Time
	// By is who did it (an operator's name, "console:ada", "cli:root@host"), as the caller gave it.
	By string
	// Action is what was done: ActionResend or ActionDeleteThread.
	Action string
	// Target is what it was done to: "reply:SEQ" or "thread:ID".
	Target string
	// Reason is why, as the caller gave it ("" for none).
	Reason string
	// Detail is what the target was before (a reply's send state, a thread's size and last
	// activity).
	Detail string
}

// The actions OperatorAction records.
const (
	// ActionResend: a reply was put back into the outbox (Resend).
	ActionResend = "resend"
	// ActionDeleteThread: a thread was deleted by retention (Prune).
	ActionDeleteThread = "delete_thread"
)

// ReplyTarget is the OperatorAction.Target of the reply seq: "reply:SEQ".
func ReplyTarget(seq int64) string { return "reply:" + strconv.FormatInt(seq, 10) }

// ThreadTarget is the OperatorAction.Target of the thread threadID: "thread:ID".
func ThreadTarget(threadID string) string { return "thread:" + threadID }

// recordAction inserts an operator action in tx, stamped now.
func (s *Store) recordAction(ctx context.Context, tx *sqlx.Tx, now time.Time, by, action, target, reason, detail string) error {
	_, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO operator_actions (happened_at, actor, action, target, reason, detail)
		VALUES (?, ?, ?, ?, ?, ?)`), s.dialect.timeArg(now), by, action, target, clipReason(reason), clipReason(detail))
	return err
}

// OperatorActions returns the operator actions on target ("" for every target), the latest
// first, at most limit of them (0 = DefaultListLimit, at most MaxListLimit). One query, by the
// index (target, id) or the primary key. Errors: ErrInvalid (wrapped) for a bad limit; the
// database's (wrapped).
func (s *Store) OperatorActions(ctx context.Context, target string, limit int) ([]OperatorAction, error) {
	n, err := listLimit("operator actions", limit)
	if err != nil {
		return nil, err
	}
	q := `SELECT id, happened_at, actor, action, target, reason, detail FROM operator_actions`
	args := []any{}
	if target != "" {
		q += ` WHERE target = ?`
		args = append(args, target)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	var rows []struct {
		ID     int64  `db:"id"`
		At     dbTime `db:"happened_at"`
		By     string `db:"actor"`
		Action string `db:"action"`
		Target string `db:"target"`
		Reason string `db:"reason"`
		Detail string `db:"detail"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(q), append(args, n)...); err != nil {
		return nil, fmt.Errorf("store: read operator actions: %w", err)
	}
	out := make([]OperatorAction, len(rows))
	for i, r := range rows {
		out[i] = OperatorAction{ID: r.ID, At: r.At.Time, By: r.By, Action: r.Action, Target: r.Target, Reason: r.Reason, Detail: r.Detail}
	}
	return out, nil
}

// checkActor checks who asks for an action (required, at most MaxNameChars characters).
func checkActor(by string) error { return checkKey("actor", by, MaxNameChars) }

// Resend puts the reply seq back into the outbox, to be sent at once with the same Message-ID
// (it is the same message): after a permanent failure, a bounce (its bounce is cleared, so a
// second bounce is recorded again; the first is kept in the action's detail), or a send an
// operator wants repeated. by names who asks (required) and reason why; both are recorded as an
// OperatorAction (ActionResend, with the reply's send state before) in the transaction that
// changes the outbox. It returns Stored, or AlreadyStored when the reply is already waiting to
// be sent (nothing is changed or recorded), so a repeated request sends it once. Errors:
// ErrInvalid (wrapped) for an empty or malformed by; ErrMessageNotFound (wrapped) when seq is
// not a reply in the outbox; the database's (wrapped).
func (s *Store) Resend(ctx context.Context, seq int64, by, reason string) (Outcome, error) {
	if err := checkActor(by); err != nil {
		return 0, fmt.Errorf("%w (resend of reply %d)", err, seq)
	}
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	var outcome Outcome
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var rows []outboxRow
		if err := tx.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT `+outboxStateColumns+`
			FROM mail_outbox WHERE message_seq = ?`+s.dialect.forUpdate()), seq); err != nil {
			return err
		}
		if len(rows) == 0 {
			return fmt.Errorf("%w: not a reply in the outbox", ErrMessageNotFound)
		}
		before := rows[0].state()
		if rows[0].NextAt.Valid {
			outcome = AlreadyStored
			return nil
		}
		if _, err := tx.ExecContext(ctx, s.dialect.rebind(`UPDATE mail_outbox SET sent_at = NULL, failed_at = NULL, available_at = ?, holder = '',
			bounced_at = NULL, bounce_status = NULL, bounce_diagnostic = NULL WHERE message_seq = ?`), s.dialect.timeArg(notBefore), seq); err != nil {
			return err
		}
		outcome = Stored
		return s.recordAction(ctx, tx, now, by, ActionResend, ReplyTarget(seq), reason, before.describe())
	})
	if err != nil {
		return 0, fmt.Errorf("store: resend reply %d: %w", seq, err)
	}
	return outcome, nil
}

// describe says where a reply stood, for an operator action's detail.
func (st SendState) describe() string {
	var s string
	switch st.Status {
	case "bounced":
		s = fmt.Sprintf("bounced at %s (%s: %s)", st.BouncedAt.Format(time.RFC3339Nano), st.BounceStatus, st.BounceDiagnostic)
	case "sent":
		s = "sent at " + st.SentAt.Format(time.RFC3339Nano)
	case "failed":
		s = "failed at " + st.FailedAt.Format(time.RFC3339Nano)
	default:
		s = st.Status
	}
	s += fmt.Sprintf(" after %d attempts", st.Attempts)
	if st.LastError != "" {
		s += "; last error: " + st.LastError
	}
	return s
}
