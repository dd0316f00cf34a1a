package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"

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

// Message is a message as the store holds it: the thread's history.Message and the fields only
// the store keeps. AppendMessage takes one; Message returns one.
//
// Of the history.Message, ThreadID and MessageID are required; Seq and ToolUses are ignored on
// append (the store assigns the seq; rounds are recorded with RecordRound); Direction is
// history.Inbound or history.Outbound; Date is stored in UTC truncated to the microsecond and
// must be a real time (years 1000 to 9999); To, Cc, ReplyTo and References are stored as JSON
// arrays;
// attachments keep their metadata (ID, Filename, ContentType, Size in bytes) in order, never
// Data. Every field has a limit (MaxThreadIDChars and the others), checked before anything is
// written.
type Message struct {
	history.Message
	// Mailbox scopes MessageID: a message id is unique per mailbox (a persona's mailbox, say its
	// address), so one email delivered to two personas is stored once for each. "" is the default
	// mailbox. At most 191 characters.
	Mailbox string
	// RunKey is, for an outbound reply, the key of the run that wrote it (Run.Key); a run has at
	// most one reply. "" otherwise.
	RunKey string
	// NotToAnswer says why the message must not be answered (an auto-reply, bulk mail, a
	// delivery report, mail from the persona's own address); "" means answer it.
	NotToAnswer string
	// Problems lists what was wrong with the message as received (a malformed address list, an
	// unknown charset), kept for the record.
	Problems []string
}

// Appended is what AppendMessage did. Seq is the message's seq and ThreadID its thread: the ones
// this call stored, or the stored copy's. Outcome is Stored, or AlreadyStored when a message
// with the id was already stored in the mailbox (the first copy stays; nothing was written).
// Differs then names, in the order of the fields, the fields whose stored value differs from the
// proposed one ("thread id", "in reply to", "references", "direction", "from", "to", "cc",
// "reply to", "date", "subject", "text body", "html body", "attachments", "run key", "not to
// answer", "problems"); it is nil when the copies are identical, as after a retry.
type Appended struct {
	Seq      int64
	ThreadID string
	Outcome  Outcome
	Differs  []string
}

// AppendMessage stores m at the end of its thread, creating the thread when it is new, in one
// transaction with its attachments' metadata and, for an outbound reply (a run key), its outbox
// entry (BEGIN, thread, message, attachments, outbox, COMMIT), and returns the message's seq: the
// monotonic insertion key, which orders Thread and History (Date, which the sender sets, is only
// shown, never used to order).
//
// It is idempotent by (m.Mailbox, m.MessageID): when a message with that id is stored in the
// mailbox (in any thread), it writes nothing and returns the stored seq with AlreadyStored,
// naming the fields in which m differs from the stored copy (for example a second delivery of
// one email with another list footer). So after any error — an ambiguous commit included, when
// the connection broke after the server committed — calling AppendMessage again with the same
// message is safe: it stores the message once and always yields its seq.
//
// Errors, with nothing written: ErrInvalid (wrapped) for a missing, over-long or malformed field;
// ErrConflict (wrapped) when m.RunKey already has another reply; ctx's error; the database's
// (wrapped). Lock races are retried up to 5 times.
func (s *Store) AppendMessage(ctx context.Context, m Message) (Appended, error) {
	return s.appendMessage(ctx, m, false, false)
}

// appendMessage is AppendMessage with two shortcuts for a caller that has just looked the
// mailbox up (AppendMail). rowAtATime lets a message without attachments or run key be written
// as single statements that commit on their own (see appendRow) — the thread's row when it is
// new, then the message row, atomic by itself and taking the thread row's lock — instead of a
// transaction; an interruption between them, or a duplicate the lookup missed, leaves at most
// an empty thread row, which nothing reads as a message. threadStored says another message of
// m.ThreadID is stored, so such a single-statement write does not write the thread's row first
// (a thread deleted in between is noticed, and its row written). A transaction always starts
// with the thread's upsert, which is its lock.
func (s *Store) appendMessage(ctx context.Context, m Message, threadStored, rowAtATime bool) (Appended, error) {
	if err := m.validate(); err != nil {
		return Appended{}, err
	}
	d := s.dialect
	to, cc, replyTo, refs := encodeList(m.To), encodeList(m.Cc), encodeList(m.ReplyTo), encodeList(m.References)
	problems := encodeList(m.Problems)
	fail := func(err error) (Appended, error) {
		return Appended{}, fmt.Errorf("store: append message %q to thread %q: %w", m.MessageID, m.ThreadID, err)
	}
	insertThread := d.insertIgnoringConflict("threads", []string{"id"}, []string{"id"})
	insertMessage := d.rebind(`INSERT INTO messages (thread_id, mailbox, message_id, in_reply_to,
		refs, direction, sender, recipients, cc, reply_to, subject, sent_at, text_body, html_body, run_key,
		not_to_answer, problems) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	args := []any{m.ThreadID, m.Mailbox, m.MessageID, m.InReplyTo, refs, string(m.Direction), m.From, to, cc, replyTo,
		m.Subject, d.timeArg(m.Date), m.Text, m.HTML, nullString(m.RunKey), m.NotToAnswer, problems}
	single := rowAtATime && len(m.Attachments) == 0 && m.RunKey == ""
	// A duplicate whose stored copy vanished before we read it (a concurrent DeleteThread) sends
	// us round again; twice is enough for any real interleaving.
	for range 2 {
		var seq int64
		var err error
		if single {
			seq, err = s.appendRow(ctx, m.ThreadID, threadStored, insertThread, args)
		} else {
			err = s.inTx(ctx, func(tx *sqlx.Tx) error {
				// First, even for a thread known to be stored: the upsert takes the thread row's
				// write lock, held to the commit, so the thread's seqs commit in the order they
				// are handed out (see the package doc, Concurrency). Do not skip it or move it
				// after the message's insert.
				if _, err := tx.ExecContext(ctx, insertThread, m.ThreadID); err != nil {
					return err
				}
				res, err := tx.ExecContext(ctx, insertMessage, args...)
				if err != nil {
					return err
				}
				if seq, err = res.LastInsertId(); err != nil {
					return err
				}
				if m.RunKey != "" && m.Direction == history.Outbound {
					// A reply enters the outbox with it (see UnsentReplies).
					if _, err := tx.ExecContext(ctx, d.rebind(`INSERT INTO mail_outbox (message_seq, mailbox) VALUES (?, ?)`), seq, m.Mailbox); err != nil {
						return err
					}
				}
				return insertAttachments(ctx, tx, d, seq, m.Attachments)
			})
		}
		if err == nil {
			return Appended{Seq: seq, ThreadID: m.ThreadID, Outcome: Stored}, nil
		}
		if !isDuplicateKey(err) {
			return fail(err)
		}
		stored, err := s.messageWhere(ctx, "mailbox = ? AND message_id = ?", m.Mailbox, m.MessageID)
		if errors.Is(err, ErrMessageNotFound) {
			if m.RunKey != "" {
				if reply, err := s.messageWhere(ctx, "run_key = ?", m.RunKey); err == nil {
					return fail(fmt.Errorf("%w: run %q already has the reply %q", ErrConflict, m.RunKey, reply.MessageID))
				}
			}
			threadStored = false
			continue
		}
		if err != nil {
			return fail(err)
		}
		return Appended{Seq: stored.Seq, ThreadID: stored.ThreadID, Outcome: AlreadyStored, Differs: m.differences(stored)}, nil
	}
	return fail(errors.New("the message id was stored and removed while appending"))
}

// appendRow writes a message without attachments or run key as single statements: the thread's
// row when it is new, then the message row in one INSERT … SELECT that write-locks the thread's
// row first (FOR UPDATE; SQLite's single writer needs no clause), so that, as in AppendMessage's
// transaction, the seq is handed out under the thread's lock and the thread's seqs commit in the
// order they were handed out. Inserting the message from the thread's row also finds a thread
// deleted since the caller's lookup: no row is inserted, and the thread's row is written and the
// insert repeated.
func (s *Store) appendRow(ctx context.Context, threadID string, threadStored bool, insertThread string, args []any) (int64, error) {
	d := s.dialect
	insertMessage := d.rebind(`INSERT INTO messages (thread_id, mailbox, message_id, in_reply_to, refs, direction,
		sender, recipients, cc, reply_to, subject, sent_at, text_body, html_body, run_key, not_to_answer, problems)
		SELECT ` + placeholders(len(args)) + ` FROM threads WHERE id = ?` + d.forUpdate())
	args = append(args[:len(args):len(args)], threadID)
	for range 2 {
		if !threadStored {
			if _, err := s.exec(ctx, insertThread, threadID); err != nil {
				return 0, err
			}
		}
		res, err := s.exec(ctx, insertMessage, args...)
		if err != nil {
			return 0, err
		}
		if n, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if n == 1 {
			return res.LastInsertId()
		}
		threadStored = false // the thread's row went away since the lookup
	}
	return 0, fmt.Errorf("the thread %q was deleted while appending", threadID)
}

// insertAttachments writes the attachments' metadata of message seq in one INSERT.
func insertAttachments(ctx context.Context, tx *sqlx.Tx, d Dialect, seq int64, atts []history.Attachment) error {
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

// differences names the fields in which m differs from stored, in Message's field order; nil
// when none does.
func (m Message) differences(stored Message) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"thread id", stored.ThreadID == m.ThreadID},
		{"in reply to", stored.InReplyTo == m.InReplyTo},
		{"references", slices.Equal(stored.References, nonEmpty(m.References))},
		{"direction", stored.Direction == m.Direction},
		{"from", stored.From == m.From},
		{"to", slices.Equal(stored.To, nonEmpty(m.To))},
		{"cc", slices.Equal(stored.Cc, nonEmpty(m.Cc))},
		{"reply to", slices.Equal(stored.ReplyTo, nonEmpty(m.ReplyTo))},
		{"date", stored.Date.Equal(dbNow(m.Date))},
		{"subject", stored.Subject == m.Subject},
		{"text body", stored.Text == m.Text},
		{"html body", stored.HTML == m.HTML},
		{"attachments", sameAttachments(stored.Attachments, m.Attachments)},
		{"run key", stored.RunKey == m.RunKey},
		{"not to answer", stored.NotToAnswer == m.NotToAnswer},
		{"problems", slices.Equal(stored.Problems, nonEmpty(m.Problems))},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}

// sameAttachments compares attachment metadata (Data is never stored).
func sameAttachments(stored, proposed []history.Attachment) bool {
	return slices.EqualFunc(stored, proposed, func(a, b history.Attachment) bool {
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

func (m Message) validate() error {
	if err := checkKey("thread id", m.ThreadID, MaxThreadIDChars); err != nil {
		return err
	}
	if err := checkKey("message id", m.MessageID, MaxMessageIDChars); err != nil {
		return err
	}
	where := func(err error) error { return fmt.Errorf("%w (message %q)", err, m.MessageID) }
	if err := checkLen("mailbox", m.Mailbox, MaxNameChars); err != nil {
		return where(err)
	}
	if strings.HasSuffix(m.Mailbox, " ") {
		return where(fmt.Errorf("%w: mailbox %q ends with a space", ErrInvalid, m.Mailbox))
	}
	if m.RunKey != "" {
		if err := checkKey("run key", m.RunKey, MaxNameChars); err != nil {
			return where(err)
		}
	}
	if m.Direction != history.Inbound && m.Direction != history.Outbound {
		return fmt.Errorf("%w: message %q: direction %q (want inbound or outbound)", ErrInvalid, m.MessageID, m.Direction)
	}
	if err := checkTime("date", m.Date); err != nil {
		return where(err)
	}
	if err := checkLen("in reply to", m.InReplyTo, MaxMessageIDChars); err != nil {
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
		{"not to answer", m.NotToAnswer, MaxNoteBytes},
	} {
		if err := checkBytes(f.field, f.v, f.max); err != nil {
			return where(err)
		}
	}
	for _, list := range []struct {
		field string
		v     []string
		max   int
		check func(field, v string) error
	}{
		{"to", m.To, MaxAddresses, func(f, v string) error { return checkBytes(f, v, MaxAddressBytes) }},
		{"cc", m.Cc, MaxAddresses, func(f, v string) error { return checkBytes(f, v, MaxAddressBytes) }},
		{"reply to", m.ReplyTo, MaxAddresses, func(f, v string) error { return checkBytes(f, v, MaxAddressBytes) }},
		{"references", m.References, MaxReferences, func(f, v string) error { return checkLen(f, v, MaxMessageIDChars) }},
		{"problems", m.Problems, MaxProblems, func(f, v string) error { return checkBytes(f, v, MaxNoteBytes) }},
	} {
		if len(list.v) > list.max {
			return fmt.Errorf("%w: message %q: %s has %d entries (at most %d)", ErrInvalid, m.MessageID, list.field, len(list.v), list.max)
		}
		for i, v := range list.v {
			if err := list.check(fmt.Sprintf("%s[%d]", list.field, i), v); err != nil {
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

// encodeList returns the JSON array text of a list of strings, without HTML escaping (so "<"
// stays one byte): "[]" for none.
func encodeList(list []string) string {
	if len(list) == 0 {
		return "[]"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(list) // a []string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// Message returns the message stored under messageID in mailbox, with its attachments'
// metadata (ToolUses empty) and the store-only fields. One query for the message and one for
// its attachments. Errors: ErrMessageNotFound (wrapped), or the database's (wrapped).
func (s *Store) Message(ctx context.Context, mailbox, messageID string) (Message, error) {
	m, err := s.messageWhere(ctx, "mailbox = ? AND message_id = ?", mailbox, messageID)
	if err != nil {
		return Message{}, fmt.Errorf("store: read message %q of mailbox %q: %w", messageID, mailbox, err)
	}
	return m, nil
}

// ThreadOf returns the thread of the first of messageIDs that is stored in mailbox, and that
// id: how an email joins the thread of the first message it references that the store knows
// (its References, then its In-Reply-To). found is false when none is stored. One query; at
// most MaxReferences+1 ids. Errors: ErrInvalid for too many ids, or the database's (wrapped).
func (s *Store) ThreadOf(ctx context.Context, mailbox string, messageIDs []string) (threadID, messageID string, found bool, err error) {
	if len(messageIDs) == 0 {
		return "", "", false, nil
	}
	if len(messageIDs) > MaxReferences+1 {
		return "", "", false, fmt.Errorf("%w: %d message ids to look up (at most %d)", ErrInvalid, len(messageIDs), MaxReferences+1)
	}
	var rows []struct {
		MessageID string `db:"message_id"`
		ThreadID  string `db:"thread_id"`
	}
	args := append([]any{mailbox}, anySlice(messageIDs)...)
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT message_id, thread_id FROM messages
		WHERE mailbox = ? AND message_id IN (`+placeholders(len(messageIDs))+`)`), args...); err != nil {
		return "", "", false, fmt.Errorf("store: look up the threads of %d message ids: %w", len(messageIDs), err)
	}
	threads := make(map[string]string, len(rows))
	for _, r := range rows {
		threads[r.MessageID] = r.ThreadID
	}
	for _, id := range messageIDs {
		if t, ok := threads[id]; ok {
			return t, id, true, nil
		}
	}
	return "", "", false, nil
}

func anySlice(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

// storedMessageRow is a messages row with the store-only columns, as Message reads it.
type storedMessageRow struct {
	messageRow
	ThreadID    string         `db:"thread_id"`
	Mailbox     string         `db:"mailbox"`
	RunKey      sql.NullString `db:"run_key"`
	NotToAnswer sql.NullString `db:"not_to_answer"`
	Problems    sql.NullString `db:"problems"`
}

// messageWhere reads the one message matching where (a condition on messages' columns) with its
// attachments; ErrMessageNotFound when none matches.
func (s *Store) messageWhere(ctx context.Context, where string, args ...any) (Message, error) {
	d := s.dialect
	var rows []storedMessageRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT `+messageColumns+`, thread_id, mailbox, run_key,
		not_to_answer, problems FROM messages WHERE `+where), args...); err != nil {
		return Message{}, err
	}
	if len(rows) == 0 {
		return Message{}, fmt.Errorf("%w: %v", ErrMessageNotFound, args)
	}
	r := rows[0]
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
	var atts []attachmentRow
	if err := s.db.SelectContext(ctx, &atts, d.rebind(`SELECT message_seq, position, attachment_id, filename,
		content_type, size_bytes FROM attachments WHERE message_seq = ? ORDER BY position`), m.Seq); err != nil {
		return Message{}, err
	}
	for _, a := range atts {
		m.Attachments = append(m.Attachments, history.Attachment{
			ID: a.AttachmentID, Filename: a.Filename, ContentType: a.ContentType, Size: a.SizeBytes,
		})
	}
	return m, nil
}

// messageInThread reports whether seq is a message of threadID.
func (s *Store) messageInThread(ctx context.Context, seq int64, threadID string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.dialect.rebind(`SELECT COUNT(*) FROM messages WHERE seq = ? AND thread_id = ?`), seq, threadID)
	return n > 0, err
}

// messageRow is a messages row as Thread and History read it (messageColumns).
type messageRow struct {
	Seq        int64          `db:"seq"`
	MessageID  string         `db:"message_id"`
	InReplyTo  string         `db:"in_reply_to"`
	Refs       sql.NullString `db:"refs"`
	Direction  string         `db:"direction"`
	Sender     string         `db:"sender"`
	Recipients string         `db:"recipients"`
	Cc         string         `db:"cc"`
	ReplyTo    sql.NullString `db:"reply_to"`
	Subject    string         `db:"subject"`
	SentAt     dbTime         `db:"sent_at"`
	TextBody   string         `db:"text_body"`
	HTMLBody   string         `db:"html_body"`
}

// messageColumns are the columns of a messageRow, for SELECTs from messages.
const messageColumns = `seq, message_id, in_reply_to, refs, direction, sender, recipients, cc, reply_to, subject,
	sent_at, text_body, html_body`

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
	if err := s.db.SelectContext(ctx, &rows, d.rebind(`SELECT `+messageColumns+` FROM messages
		WHERE thread_id = ? ORDER BY seq`), threadID); err != nil {
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

// stored converts the row to the runtime's form.
func (r messageRow) stored(threadID string) (history.Message, error) {
	m := history.Message{
		Seq:       r.Seq,
		ThreadID:  threadID,
		MessageID: r.MessageID,
		InReplyTo: r.InReplyTo,
		Direction: history.Direction(r.Direction),
		From:      r.Sender,
		Date:      r.SentAt.Time,
		Subject:   r.Subject,
		Text:      r.TextBody,
		HTML:      r.HTMLBody,
	}
	if err := decodeList(r.Recipients, &m.To); err != nil {
		return m, fmt.Errorf("message %q recipients: %w", r.MessageID, err)
	}
	if err := decodeList(r.Cc, &m.Cc); err != nil {
		return m, fmt.Errorf("message %q cc: %w", r.MessageID, err)
	}
	if r.ReplyTo.Valid { // NULL for messages stored before migration 00006
		if err := decodeList(r.ReplyTo.String, &m.ReplyTo); err != nil {
			return m, fmt.Errorf("message %q reply-to: %w", r.MessageID, err)
		}
	}
	if r.Refs.Valid { // NULL for messages stored before migration 00004
		if err := decodeList(r.Refs.String, &m.References); err != nil {
			return m, fmt.Errorf("message %q references: %w", r.MessageID, err)
		}
	}
	return m, nil
}

// decodeList reads a JSON array of strings; an empty array leaves *dst nil.
func decodeList(text string, dst *[]string) error {
	if text == "[]" { // what AppendMessage stores for an empty list: skip the decoder
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
			"DELETE FROM mail_outbox WHERE message_seq IN (SELECT seq FROM messages WHERE thread_id = ?)",
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
