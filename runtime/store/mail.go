package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/personagen/personagen/runtime/history"
)

// AppendMail is AppendMessage in the terms of runtime/mail's Store interface, which mail.Ingest
// stores through (runtime/mail does not import this package): it stores m in mailbox with the
// not-to-answer text and the parse problems and returns the message's seq and thread, and
// duplicate true when the mailbox already held the message id (nothing written; the stored
// copy's seq and thread are returned, the first copy stays). threadStored says another message
// of m.ThreadID is stored (ThreadOf found it), so the thread's row is not written again.
//
// mail.Ingest looks the message's own id up (ThreadOf) before it appends, so AppendMail writes a
// message without attachments or run key as single statements instead of a transaction: the
// message row (one INSERT, atomic by itself, which write-locks the thread's row before the seq
// is handed out, so the thread's messages still become visible in seq order), preceded by the
// thread's row only when the thread is new. Ingesting a reply that joins a thread then costs 2 round trips (lookup, INSERT), a
// message that starts a thread 3; one with attachments is one transaction (BEGIN, thread,
// message, attachments, COMMIT) after the lookup. An interruption between the thread's row and
// the message row leaves an empty thread row, which nothing reads as a message; the retry
// writes the message. Errors as AppendMessage's.
func (s *Store) AppendMail(ctx context.Context, m history.Message, mailbox, notToAnswer string, problems []string, threadStored bool) (seq int64, threadID string, duplicate bool, err error) {
	a, err := s.appendMessage(ctx, Message{Message: m, Mailbox: mailbox, NotToAnswer: notToAnswer, Problems: problems}, threadStored, true)
	if err != nil {
		return 0, "", false, err
	}
	return a.Seq, a.ThreadID, a.Outcome == AlreadyStored, nil
}

// UnsentReplies returns up to limit outbound replies of mailbox (messages stored with a run key)
// that are not marked sent, oldest first, with their attachments' metadata: what the host's
// sender renders (runtime/mail's Render) and sends. A reply enters the outbox in the transaction
// that stores it. Two queries whatever the count. limit must be positive.
func (s *Store) UnsentReplies(ctx context.Context, mailbox string, limit int) ([]Message, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: unsent replies: limit %d (want a positive number)", ErrInvalid, limit)
	}
	d := s.dialect
	var rows []storedMessageRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT `+prefixedColumns("m.", messageColumns)+`, m.thread_id, m.mailbox,
		m.run_key, m.not_to_answer, m.problems FROM mail_outbox o JOIN messages m ON m.seq = o.message_seq
		WHERE o.mailbox = ? AND o.sent_at IS NULL ORDER BY o.message_seq LIMIT ?`), mailbox, limit); err != nil {
		return nil, fmt.Errorf("store: read the unsent replies of %q: %w", mailbox, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]Message, len(rows))
	index := make(map[int64]int, len(rows))
	seqs := make([]any, len(rows))
	for i, r := range rows {
		m, err := r.message()
		if err != nil {
			return nil, fmt.Errorf("store: read the unsent replies of %q: %w", mailbox, err)
		}
		out[i], index[r.Seq], seqs[i] = m, i, r.Seq
	}
	var atts []attachmentRow
	if err := s.db.SelectContext(ctx, &atts, d.rebind(`SELECT message_seq, position, attachment_id, filename,
		content_type, size_bytes FROM attachments WHERE message_seq IN (`+placeholders(len(seqs))+`)
		ORDER BY message_seq, position`), seqs...); err != nil {
		return nil, fmt.Errorf("store: read the attachments of the unsent replies of %q: %w", mailbox, err)
	}
	for _, a := range atts {
		i := index[a.MessageSeq]
		out[i].Attachments = append(out[i].Attachments, history.Attachment{
			ID: a.AttachmentID, Filename: a.Filename, ContentType: a.ContentType, Size: a.SizeBytes,
		})
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
	n, err := s.affected(ctx, `UPDATE mail_outbox SET sent_at = ? WHERE message_seq = ? AND sent_at IS NULL`, s.dialect.timeArg(now), seq)
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

// message converts a row with the store-only columns into a Message (attachments not read).
func (r storedMessageRow) message() (Message, error) {
	hm, err := r.stored(r.ThreadID)
	if err != nil {
		return Message{}, err
	}
	m := Message{Message: hm, Mailbox: r.Mailbox, RunKey: r.RunKey.String, NotToAnswer: r.NotToAnswer.String}
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
