package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/personagen/personagen/runtime/history"
)

// ErrDuplicateMessage is returned (wrapped) by AppendMessage when a message with the same
// MessageID is already stored, in any thread. Nothing is written then.
var ErrDuplicateMessage = errors.New("store: message id already stored")

// ErrInvalid is returned (wrapped, with the field named) when a value cannot be stored: an empty,
// over-long or space-ended key, an unknown direction or status, a zero time, or text that is not valid
// UTF-8. Both dialects reject the same values, before anything is written.
var ErrInvalid = errors.New("store: invalid value")

// Key lengths in characters, as the MySQL columns declare them; the store checks them in Go so
// SQLite (which does not enforce VARCHAR sizes) rejects the same values.
const (
	maxThreadIDLen    = 191
	maxMessageIDLen   = 255
	maxContentTypeLen = 255
	maxNameLen        = 191 // persona, responsibility, run id
	maxToolFieldLen   = 255 // tool call id, tool name
)

// NewMessage is one message to append to a thread: an email-like message that came in to the
// persona (history.Inbound) or went out from it (history.Outbound). ThreadID and MessageID are
// required; MessageID is unique across all threads. SentAt is stored in UTC truncated to the
// microsecond and must be a real time (year 1000 to 9999). To and Cc are stored as JSON arrays.
// Attachments keep their metadata (ID, Filename, ContentType, Size in bytes) in order; Data is
// not stored.
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
	Attachments []history.Attachment
}

// AppendMessage stores m at the end of its thread, creating the thread when it is new, in one
// transaction with its attachments' metadata, and returns the message's seq: the monotonic
// insertion key, which orders Thread and History (SentAt, which the sender sets, is only shown,
// never used to order). Errors: ErrInvalid for a missing or malformed field, ErrDuplicateMessage when
// m.MessageID is already stored (nothing is written), or the database's error.
func (s *Store) AppendMessage(ctx context.Context, m NewMessage) (int64, error) {
	if err := m.validate(); err != nil {
		return 0, err
	}
	to, err := json.Marshal(nonNil(m.To))
	if err != nil {
		return 0, fmt.Errorf("store: append message %s: %w", m.MessageID, err)
	}
	cc, err := json.Marshal(nonNil(m.Cc))
	if err != nil {
		return 0, fmt.Errorf("store: append message %s: %w", m.MessageID, err)
	}
	var seq int64
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		d := s.dialect
		if _, err := tx.ExecContext(ctx, d.insertIgnoringConflict("threads", []string{"id"}, []string{"id"}), m.ThreadID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO messages
			(thread_id, message_id, direction, sender, recipients, cc, subject, sent_at, text_body, html_body)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			m.ThreadID, m.MessageID, string(m.Direction), m.From, string(to), string(cc), m.Subject,
			d.timeArg(m.SentAt), m.Text, m.HTML)
		if err != nil {
			if isDuplicateKey(err) {
				return fmt.Errorf("%w: %q (%v)", ErrDuplicateMessage, m.MessageID, err)
			}
			return err
		}
		if seq, err = res.LastInsertId(); err != nil {
			return err
		}
		if len(m.Attachments) == 0 {
			return nil
		}
		const cols = 6
		args := make([]any, 0, cols*len(m.Attachments))
		rows := make([]string, len(m.Attachments))
		for i, a := range m.Attachments {
			rows[i] = "(" + placeholders(cols) + ")"
			args = append(args, seq, i, a.ID, a.Filename, a.ContentType, a.Size)
		}
		_, err = tx.ExecContext(ctx, d.rebind(`INSERT INTO attachments
			(message_seq, position, attachment_id, filename, content_type, size_bytes) VALUES `+strings.Join(rows, ", ")), args...)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrDuplicateMessage) {
			return 0, err
		}
		return 0, fmt.Errorf("store: append message %q to thread %q: %w", m.MessageID, m.ThreadID, err)
	}
	return seq, nil
}

func (m NewMessage) validate() error {
	if err := checkKey("thread id", m.ThreadID, maxThreadIDLen); err != nil {
		return err
	}
	if err := checkKey("message id", m.MessageID, maxMessageIDLen); err != nil {
		return err
	}
	if m.Direction != history.Inbound && m.Direction != history.Outbound {
		return fmt.Errorf("%w: message %q: direction %q (want inbound or outbound)", ErrInvalid, m.MessageID, m.Direction)
	}
	if y := m.SentAt.UTC().Year(); m.SentAt.IsZero() || y < 1000 || y > 9999 {
		return fmt.Errorf("%w: message %q: sent_at %v (want a time in years 1000 to 9999)", ErrInvalid, m.MessageID, m.SentAt)
	}
	texts := map[string]string{"from": m.From, "subject": m.Subject, "text body": m.Text, "html body": m.HTML}
	for i, v := range m.To {
		texts[fmt.Sprintf("to[%d]", i)] = v
	}
	for i, v := range m.Cc {
		texts[fmt.Sprintf("cc[%d]", i)] = v
	}
	for i, a := range m.Attachments {
		texts[fmt.Sprintf("attachment[%d] id", i)] = a.ID
		texts[fmt.Sprintf("attachment[%d] filename", i)] = a.Filename
		if err := checkLen(fmt.Sprintf("attachment[%d] content type", i), a.ContentType, maxContentTypeLen); err != nil {
			return err
		}
		if a.Size < 0 {
			return fmt.Errorf("%w: message %q: attachment[%d] size %d bytes is negative", ErrInvalid, m.MessageID, i, a.Size)
		}
	}
	for name, v := range texts {
		if !utf8.ValidString(v) {
			return fmt.Errorf("%w: message %q: %s is not valid UTF-8", ErrInvalid, m.MessageID, name)
		}
	}
	return nil
}

// checkKey rejects an empty key, one ending in a space, one longer than max characters, or one
// that is not UTF-8. A trailing space is refused because MySQL's PAD SPACE collations (such as
// MariaDB's utf8mb4_bin) compare "a " equal to "a" while SQLite does not: both dialects must
// treat keys alike.
func checkKey(field, v string, max int) error {
	if v == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	}
	if strings.HasSuffix(v, " ") {
		return fmt.Errorf("%w: %s %q ends with a space", ErrInvalid, field, v)
	}
	return checkLen(field, v, max)
}

// checkLen rejects a value longer than max characters or not valid UTF-8.
func checkLen(field, v string, max int) error {
	if !utf8.ValidString(v) {
		return fmt.Errorf("%w: %s %q is not valid UTF-8", ErrInvalid, field, v)
	}
	if n := utf8.RuneCountInString(v); n > max {
		return fmt.Errorf("%w: %s has %d characters (at most %d)", ErrInvalid, field, n, max)
	}
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
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
		m, err := r.stored(threadID)
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

// stored converts the row to a history.Message of threadID.
func (r messageRow) stored(threadID string) (history.Message, error) {
	m := history.Message{
		Seq:       r.Seq,
		ThreadID:  threadID,
		MessageID: r.MessageID,
		Direction: history.Direction(r.Direction),
		From:      r.Sender,
		Date:      r.SentAt.Time,
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
// uses, its messages' attachments, its compactions (when the compactions table exists), its
// messages and the thread row. Deleting an unknown thread does nothing and returns nil. Tool uses
// of responsibility runs belong to no thread and are kept.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	d := s.dialect
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		stmts := []string{
			"DELETE FROM tool_uses WHERE thread_id = ?",
			"DELETE FROM attachments WHERE message_seq IN (SELECT seq FROM messages WHERE thread_id = ?)",
		}
		ok, err := d.tableExists(ctx, tx, "compactions")
		if err != nil {
			return err
		}
		if ok {
			stmts = append(stmts, "DELETE FROM compactions WHERE thread_id = ?")
		}
		stmts = append(stmts, "DELETE FROM messages WHERE thread_id = ?", "DELETE FROM threads WHERE id = ?")
		for _, q := range stmts {
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
