package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

// ErrMessageNotFound is returned (wrapped) when no stored message has the given id or seq.
var ErrMessageNotFound = errors.New("store: message not found")

// ErrInvalid is returned (wrapped, with the field named) when a value cannot be stored: an empty,
// over-long or space-ended key, a text over its limit (see MaxBodyBytes and the other limits) or
// not valid UTF-8, an unknown direction, kind or status, or a time outside years 1000 to 9999
// (the zero time included, also from the store's clock). Both dialects reject the same values,
// before anything is written.
var ErrInvalid = errors.New("store: invalid value")

// NewMessage is one message to append to a thread: an email-like message that came in to the
// persona (DirectionInbound) or went out from it (DirectionOutbound). ThreadID and MessageID are
// required; MessageID is the message's key, unique across all threads. SentAt is stored in UTC
// truncated to the microsecond and must be a real time (year 1000 to 9999). To and Cc are
// stored as JSON arrays. Attachments keep their metadata (ID, Filename, ContentType, Size in
// bytes) in order; Data is not stored. Every field has a limit (MaxThreadIDChars and the
// others), checked before anything is written.
type NewMessage struct {
	ThreadID    string
	MessageID   string
	Direction   history.Direction
	From        string
	To          []string
	Cc          []string
	Subject     string
	SentAt      time.Time
	Text        string
	HTML        string
	Attachments []runtime.Attachment
}

// Appended is what AppendMessage did. Seq is the message's seq, the one this call stored or
// the one stored before. Outcome is Stored, or AlreadyStored when a message with the id was
// already stored (the first copy stays; nothing was written). Differs then names, in the order
// of NewMessage's fields, the fields whose stored value differs from the proposed one ("thread
// id", "direction", "from", "to", "cc", "subject", "sent at", "text body", "html body",
// "attachments"); it is nil when the copies are identical, as after a retry.
type Appended struct {
	Seq     int64
	Outcome Outcome
	Differs []string
}

// AppendMessage stores m at the end of its thread, creating the thread when it is new, in one
// transaction with its attachments' metadata (three round trips plus one per attachment batch:
// BEGIN, thread, message, attachments, COMMIT), and returns the message's seq: the monotonic
// insertion key, which orders Thread and History (SentAt, which the sender sets, is only shown,
// never used to order).
//
// It is idempotent by m.MessageID: when a message with that id is stored (in any thread), it
// writes nothing and returns the stored seq with AlreadyStored, naming the fields in which m
// differs from the stored copy (for example a second delivery of one email with another list
// footer). So after any error — an ambiguous commit included, when the connection broke after
// the server committed — calling AppendMessage again with the same message is safe: it stores
// the message once and always yields its seq.
//
// Errors, with nothing written: ErrInvalid (wrapped) for a missing, over-long or malformed field;
// ctx's error; the database's (wrapped). Lock races are retried up to 5 times.
func (s *Store) AppendMessage(ctx context.Context, m NewMessage) (Appended, error) {
	if err := m.validate(); err != nil {
		return Appended{}, err
	}
	to, cc := encodeAddresses(m.To), encodeAddresses(m.Cc)
	fail := func(err error) (Appended, error) {
		return Appended{}, fmt.Errorf("store: append message %q to thread %q: %w", m.MessageID, m.ThreadID, err)
	}
	// A duplicate whose stored copy vanished before we read it (a concurrent DeleteThread) sends
	// us round again; twice is enough for any real interleaving.
	for range 2 {
		var seq int64
		err := s.inTx(ctx, func(tx *sqlx.Tx) error {
			d := s.dialect
			if _, err := tx.ExecContext(ctx, d.insertIgnoringConflict("threads", []string{"id"}, []string{"id"}), m.ThreadID); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO messages
				(thread_id, message_id, direction, sender, recipients, cc, subject, sent_at, text_body, html_body)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
				m.ThreadID, m.MessageID, string(m.Direction), m.From, to, cc, m.Subject,
				d.timeArg(m.SentAt), m.Text, m.HTML)
			if err != nil {
				return err
			}
			if seq, err = res.LastInsertId(); err != nil {
				return err
			}
			return insertAttachments(ctx, tx, d, seq, m.Attachments)
		})
		if err == nil {
			return Appended{Seq: seq, Outcome: Stored}, nil
		}
		if !isDuplicateKey(err) {
			return fail(err)
		}
		threadID, stored, err := s.messageWhere(ctx, "message_id = ?", m.MessageID)
		if errors.Is(err, ErrMessageNotFound) {
			continue
		}
		if err != nil {
			return fail(err)
		}
		return Appended{Seq: stored.Seq, Outcome: AlreadyStored, Differs: m.differences(threadID, stored)}, nil
	}
	return fail(errors.New("the message id was stored and removed while appending"))
}

// insertAttachments writes the attachments' metadata of message seq in one INSERT.
func insertAttachments(ctx context.Context, tx *sqlx.Tx, d Dialect, seq int64, atts []runtime.Attachment) error {
	if len(atts) == 0 {
		return nil
	}
	const cols = 6
	args := make([]any, 0, cols*len(atts))
	rows := make([]string, len(atts))
	for i, a := range atts {
		rows[i] = "(" + placeholders(cols) + ")"
		args = append(args, seq, i, a.ID, a.Filename, a.ContentType, a.Size)
	}
	_, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO attachments
		(message_seq, position, attachment_id, filename, content_type, size_bytes) VALUES `+strings.Join(rows, ", ")), args...)
	return err
}

// differences names the fields in which m differs from stored (of thread threadID), in
// NewMessage's field order; nil when none does.
func (m NewMessage) differences(threadID string, stored history.Message) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"thread id", threadID == m.ThreadID},
		{"direction", stored.Direction == m.Direction},
		{"from", stored.From == m.From},
		{"to", slices.Equal(stored.To, nonEmpty(m.To))},
		{"cc", slices.Equal(stored.Cc, nonEmpty(m.Cc))},
		{"subject", stored.Subject == m.Subject},
		{"sent at", stored.SentAt.Equal(dbNow(m.SentAt))},
		{"text body", stored.Text == m.Text},
		{"html body", stored.HTML == m.HTML},
		{"attachments", sameAttachments(stored.Attachments, m.Attachments)},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}

// sameAttachments compares attachment metadata (Data is never stored).
func sameAttachments(stored []history.Attachment, proposed []runtime.Attachment) bool {
	return slices.EqualFunc(stored, proposed, func(a history.Attachment, b runtime.Attachment) bool {
		return a.ID == b.ID && a.Filename == b.Filename && a.ContentType == b.ContentType && a.Size == b.Size
	})
}

// nonEmpty returns nil for an empty list, as the store reads one back.
func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func (m NewMessage) validate() error {
	if err := checkKey("thread id", m.ThreadID, MaxThreadIDChars); err != nil {
		return err
	}
	if err := checkKey("message id", m.MessageID, MaxMessageIDChars); err != nil {
		return err
	}
	where := func(err error) error { return fmt.Errorf("%w (message %q)", err, m.MessageID) }
	if m.Direction != history.Inbound && m.Direction != history.Outbound {
		return fmt.Errorf("%w: message %q: direction %q (want inbound or outbound)", ErrInvalid, m.MessageID, m.Direction)
	}
	if err := checkTime("sent at", m.SentAt); err != nil {
		return where(err)
	}
	for _, f := range []struct {
		field string
		v     string
		max   int
	}{
		{"from", m.From, MaxAddressBytes},
		{"subject", m.Subject, MaxSubjectBytes},
		{"text body", m.Text, MaxBodyBytes},
		{"html body", m.HTML, MaxBodyBytes},
	} {
		if err := checkBytes(f.field, f.v, f.max); err != nil {
			return where(err)
		}
	}
	for _, list := range []struct {
		field string
		v     []string
	}{{"to", m.To}, {"cc", m.Cc}} {
		if len(list.v) > MaxAddresses {
			return fmt.Errorf("%w: message %q: %s has %d addresses (at most %d)", ErrInvalid, m.MessageID, list.field, len(list.v), MaxAddresses)
		}
		for i, a := range list.v {
			if err := checkBytes(fmt.Sprintf("%s[%d]", list.field, i), a, MaxAddressBytes); err != nil {
				return where(err)
			}
		}
	}
	if len(m.Attachments) > MaxAttachments {
		return fmt.Errorf("%w: message %q: %d attachments (at most %d)", ErrInvalid, m.MessageID, len(m.Attachments), MaxAttachments)
	}
	for i, a := range m.Attachments {
		if err := checkBytes(fmt.Sprintf("attachment[%d] id", i), a.ID, MaxAttachmentIDBytes); err != nil {
			return where(err)
		}
		if err := checkBytes(fmt.Sprintf("attachment[%d] filename", i), a.Filename, MaxFilenameBytes); err != nil {
			return where(err)
		}
		if err := checkLen(fmt.Sprintf("attachment[%d] content type", i), a.ContentType, MaxContentTypeChars); err != nil {
			return where(err)
		}
		if a.Size < 0 {
			return fmt.Errorf("%w: message %q: attachment[%d] size %d bytes is negative", ErrInvalid, m.MessageID, i, a.Size)
		}
	}
	return nil
}

// encodeAddresses returns the JSON array text of an address list, without HTML escaping (so
// "<" stays one byte): "[]" for none.
func encodeAddresses(list []string) string {
	if len(list) == 0 {
		return "[]"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(list) // a []string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Message returns the stored message whose id is messageID, with its attachments' metadata
// (ToolUses empty), and the id of the thread it belongs to. One query for the message and one
// for its attachments. Errors: ErrMessageNotFound (wrapped), or the database's (wrapped).
func (s *Store) Message(ctx context.Context, messageID string) (threadID string, m history.Message, err error) {
	threadID, m, err = s.messageWhere(ctx, "message_id = ?", messageID)
	if err != nil {
		return "", history.Message{}, fmt.Errorf("store: read message %q: %w", messageID, err)
	}
	return threadID, m, nil
}

// messageWhere reads the one message matching where (a condition on messages' columns) with its
// attachments, and its thread id; ErrMessageNotFound when none matches.
func (s *Store) messageWhere(ctx context.Context, where string, args ...any) (string, history.Message, error) {
	d := s.dialect
	var rows []struct {
		messageRow
		ThreadID string `db:"thread_id"`
	}
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT seq, thread_id, message_id, direction, sender, recipients,
		cc, subject, sent_at, text_body, html_body FROM messages WHERE `+where), args...); err != nil {
		return "", history.Message{}, err
	}
	if len(rows) == 0 {
		return "", history.Message{}, fmt.Errorf("%w: %v", ErrMessageNotFound, args)
	}
	m, err := rows[0].stored()
	if err != nil {
		return "", history.Message{}, err
	}
	var atts []attachmentRow
	if err := s.db.SelectContext(ctx, &atts, d.rebind(`SELECT message_seq, position, attachment_id, filename,
		content_type, size_bytes FROM attachments WHERE message_seq = ? ORDER BY position`), m.Seq); err != nil {
		return "", history.Message{}, err
	}
	for _, a := range atts {
		m.Attachments = append(m.Attachments, history.Attachment{
			ID: a.AttachmentID, Filename: a.Filename, ContentType: a.ContentType, Size: a.SizeBytes,
		})
	}
	return rows[0].ThreadID, m, nil
}

// messageInThread reports whether seq is a message of threadID.
func (s *Store) messageInThread(ctx context.Context, seq int64, threadID string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.dialect.rebind(`SELECT COUNT(*) FROM messages WHERE seq = ? AND thread_id = ?`), seq, threadID)
	return n > 0, err
}

// messageRow is a messages row as Thread and History read it.
type messageRow struct {
	Seq        int64  `db:"seq"`
	MessageID  string `db:"message_id"`
	Direction  string `db:"direction"`
	Sender     string `db:"sender"`
	Recipients string `db:"recipients"`
	Cc         string `db:"cc"`
	Subject    string `db:"subject"`
	SentAt     dbTime `db:"sent_at"`
	TextBody   string `db:"text_body"`
	HTMLBody   string `db:"html_body"`
}

// attachmentRow is an attachments row as Thread and History read it.
type attachmentRow struct {
	MessageSeq   int64  `db:"message_seq"`
	Position     int    `db:"position"`
	AttachmentID string `db:"attachment_id"`
	Filename     string `db:"filename"`
	ContentType  string `db:"content_type"`
	SizeBytes    int64  `db:"size_bytes"`
}

// Thread returns every message of threadID in the order History replays them: by seq, the order
// the store received them in, each with its attachments' metadata in the
// order they were appended (Data nil).
// ToolUses is left empty; the history source reads those. It runs two queries whatever the
// thread's length. An unknown thread yields no messages and no error.
func (s *Store) Thread(ctx context.Context, threadID string) ([]history.Message, error) {
	d := s.dialect
	var rows []messageRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT seq, message_id, direction, sender, recipients, cc,
		subject, sent_at, text_body, html_body FROM messages WHERE thread_id = ? ORDER BY seq`), threadID); err != nil {
		return nil, fmt.Errorf("store: read thread %q: %w", threadID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	var atts []attachmentRow
	if err := s.db.SelectContext(ctx, &atts, d.rebind(`SELECT a.message_seq, a.position, a.attachment_id,
		a.filename, a.content_type, a.size_bytes FROM attachments a JOIN messages m ON m.seq = a.message_seq
		WHERE m.thread_id = ? ORDER BY a.message_seq, a.position`), threadID); err != nil {
		return nil, fmt.Errorf("store: read attachments of thread %q: %w", threadID, err)
	}
	out := make([]history.Message, len(rows))
	index := make(map[int64]int, len(rows))
	for i, r := range rows {
		m, err := r.stored()
		if err != nil {
			return nil, fmt.Errorf("store: read thread %q: %w", threadID, err)
		}
		out[i] = m
		index[r.Seq] = i
	}
	for _, a := range atts {
		i, ok := index[a.MessageSeq]
		if !ok { // appended between the two queries
			continue
		}
		out[i].Attachments = append(out[i].Attachments, history.Attachment{
			ID: a.AttachmentID, Filename: a.Filename, ContentType: a.ContentType, Size: a.SizeBytes,
		})
	}
	return out, nil
}

// stored converts the row to the runtime's form.
func (r messageRow) stored() (history.Message, error) {
	m := history.Message{
		Seq:       r.Seq,
		MessageID: r.MessageID,
		Direction: history.Direction(r.Direction),
		From:      r.Sender,
		SentAt:    r.SentAt.Time,
		Subject:   r.Subject,
		Text:      r.TextBody,
		HTML:      r.HTMLBody,
	}
	if err := decodeAddresses(r.Recipients, &m.To); err != nil {
		return m, fmt.Errorf("message %q recipients: %w", r.MessageID, err)
	}
	if err := decodeAddresses(r.Cc, &m.Cc); err != nil {
		return m, fmt.Errorf("message %q cc: %w", r.MessageID, err)
	}
	return m, nil
}

// decodeAddresses reads a JSON array of strings; an empty array leaves *dst nil.
func decodeAddresses(text string, dst *[]string) error {
	if text == "[]" { // what AppendMessage stores for no addresses: skip the decoder
		return nil
	}
	var v []string
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return err
	}
	if len(v) > 0 {
		*dst = v
	}
	return nil
}

// DeleteThread removes threadID and everything recorded for it, in one transaction: its tool
// uses, its messages' attachments, its compactions, its reply runs, its messages and the thread
// row. Deleting an unknown thread does nothing and returns nil, so a retry after an error is
// safe. Scheduled runs and their tool uses belong to no thread and are kept.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	d := s.dialect
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		for _, q := range []string{
			"DELETE FROM tool_uses WHERE thread_id = ?",
			"DELETE FROM attachments WHERE message_seq IN (SELECT seq FROM messages WHERE thread_id = ?)",
			"DELETE FROM compactions WHERE thread_id = ?",
			"DELETE FROM runs WHERE thread_id = ?",
			"DELETE FROM messages WHERE thread_id = ?",
			"DELETE FROM threads WHERE id = ?",
		} {
			if _, err := tx.ExecContext(ctx, d.rebind(q), threadID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete thread %q: %w", threadID, err)
	}
	return nil
}
