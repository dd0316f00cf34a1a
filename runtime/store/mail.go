package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
)

// AppendMail is AppendMessage in the terms of runtime/mail's Store interface, which mail.Ingest
// stores through: it stores m in mailbox with rec's not-to-answer text, parse problems and
// subject key, and returns the message's seq and thread, and duplicate true when the mailbox
// already held the message id (nothing written; the stored copy's seq and thread are returned,
// the first copy stays). rec.ThreadStored says ThreadOf found another message of m.ThreadID, so
// the first statement is the append to a stored thread; otherwise it is the thread's start
// (either guess, when wrong, costs one statement more).
//
// An inbound message, or the persona's own sent mail, is one INSERT that commits on its own,
// attachments' metadata included (see AppendMessage), except that on MySQL an append to a
// stored thread is AppendMessage's transaction (BEGIN, the lock of the thread's first row, the
// INSERT, COMMIT): with mail.Ingest's lookup a message costs two round trips, or five when it
// joins a thread on MySQL. Errors as AppendMessage's.
func (s *Store) AppendMail(ctx context.Context, m history.Message, mailbox string, rec mail.MailRecord) (seq int64, threadID string, duplicate bool, err error) {
	a, err := s.appendMessage(ctx, Message{Message: m, Mailbox: mailbox, NotToAnswer: rec.NotToAnswer, Problems: rec.Problems, SubjectKey: rec.SubjectKey}, rec.ThreadStored)
	if err != nil {
		return 0, "", false, err
	}
	return a.Seq, a.ThreadID, a.Outcome == AlreadyStored, nil
}

// UnsentReplies returns up to limit outbound replies of mailbox (messages stored with a run key)
// that are not marked sent, oldest first, with their attachments' metadata: what the host's
// sender renders (runtime/mail's Render) and sends. A reply enters the outbox in the transaction
// that stores it. One query whatever the count. limit must be positive.
func (s *Store) UnsentReplies(ctx context.Context, mailbox string, limit int) ([]Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: unsent replies: limit %d (want a positive number)", ErrInvalid, limit)
	}
	var rows []storedMessageRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT `+prefixedColumns("m.", storedMessageColumns)+`
		FROM mail_outbox o JOIN messages m ON m.seq = o.message_seq
		WHERE o.mailbox = ? AND o.sent_at IS NULL ORDER BY o.message_seq LIMIT ?`), mailbox, limit); err != nil {
		return nil, fmt.Errorf("store: read the unsent replies of %q: %w", mailbox, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]Message, len(rows))
	for i, r := range rows {
		m, err := r.message()
		if err != nil {
			return nil, fmt.Errorf("store: read the unsent replies of %q: %w", mailbox, err)
		}
		out[i] = m
	}
	return out, nil
}

// MarkSent records that the reply with seq was sent, at the store's clock time: it leaves the
// outbox. It returns Stored, or AlreadyStored when it was marked before (a retry), so calling it
// again after any error is safe. ErrMessageNotFound (wrapped) when seq is not a reply in the
// outbox.
//
// Delivery is at least once: a crash between sending a reply and marking it sent sends it again
// on the next pass, with the same Message-ID (runtime/mail derives it from the run key), which
// receivers use to recognise the copy.
func (s *Store) MarkSent(ctx context.Context, seq int64) (Outcome, error) {
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	n, err := s.affected(ctx, `UPDATE mail_outbox SET sent_at = ?, available_at = NULL, holder = '' WHERE message_seq = ? AND sent_at IS NULL`, s.dialect.timeArg(now), seq)
	if err != nil {
		return 0, fmt.Errorf("store: mark reply %d sent: %w", seq, err)
	}
	if n == 1 {
		return Stored, nil
	}
	var count int
	if err := s.db.GetContext(ctx, &count, s.dialect.rebind(`SELECT COUNT(*) FROM mail_outbox WHERE message_seq = ?`), seq); err != nil {
		return 0, fmt.Errorf("store: mark reply %d sent: %w", seq, err)
	}
	if count == 0 {
		return 0, fmt.Errorf("store: mark reply %d sent: %w: not a reply in the outbox", seq, ErrMessageNotFound)
	}
	return AlreadyStored, nil
}

// message converts a row with the store-only columns into a Message.
func (r storedMessageRow) message() (Message, error) {
	hm, err := r.stored(r.ThreadID)
	if err != nil {
		return Message{}, err
	}
	m := Message{Message: hm, Mailbox: r.Mailbox, RunKey: r.RunKey.String, NotToAnswer: r.NotToAnswer.String, SubjectKey: r.SubjectKey.String}
	if r.Problems.Valid {
		if err := decodeList(r.Problems.String, &m.Problems); err != nil {
			return Message{}, fmt.Errorf("message %q problems: %w", r.MessageID, err)
		}
	}
	return m, nil
}

// prefixedColumns qualifies each column of a comma-separated list with prefix ("m.seq, m.…").
func prefixedColumns(prefix, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
