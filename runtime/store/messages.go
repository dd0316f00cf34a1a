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
	"github.com/personagen/personagen/runtime/mail"
)

// ErrMessageNotFound is returned (wrapped) when no stored message has the given id or seq.
var ErrMessageNotFound = errors.New("store: message not found")

// ErrInvalid is returned (wrapped, with the field named) when a value cannot be stored: an empty,
// over-long or space-ended key, a text over its limit (see MaxBodyBytes and the other limits) or
// not valid UTF-8, an unknown direction, kind or status, or a time outside years 1000 to 9999
// (the zero time included, also from the store's clock). Both dialects reject the same values,
// before anything is written.
var ErrInvalid = errors.New("store: invalid value")

// Message is one stored email, a row of the messages table: the thread's history.Message and
// the fields only the store keeps (mailbox, run key, whether to answer it, problems).
// AppendMessage takes one; Message returns one; mail.Ingest builds one from a mail.Message.
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
	// SubjectKey is the key under which ThreadOf's subject lookup finds the message
	// (runtime/mail's SubjectKey: ASCII, at most MaxSubjectKeyChars characters); "" for none,
	// stored as NULL.
	SubjectKey string
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

// AppendMessage stores m at the end of its thread, creating the thread when it is new, and
// returns the message's seq: the monotonic insertion key, which orders Thread and History (Date,
// which the sender sets, is only shown, never used to order). The message is one row, written
// by one INSERT: its attachments' metadata is a column of the row, and a message that starts a
// thread is the thread's first row. So nothing can be left half-written: the row with its
// attachments is there or it is not.
//
// An append into a stored thread first write-locks the thread's first row and holds the lock
// until it commits, so a thread's seqs commit in the order they are handed out (see the package
// doc, Concurrency). On SQLite that is the INSERT alone, committing on its own (one round trip;
// two when the thread is new, since AppendMessage first assumes it is stored). On MySQL it is a
// transaction: BEGIN, the locking read of the first row, the INSERT (which starts the thread
// when there is no first row), COMMIT — four round trips. A message that starts a thread its
// caller knows is new (AppendMail) is the INSERT alone on both. Two more cases take a
// transaction: an outbound reply with a run key, whose outbox entry is written with it, and a
// message too large for one statement (see maxRowStatementBytes), whose attachments follow in an
// UPDATE of the same transaction.
//
// It is idempotent by (m.Mailbox, m.MessageID): when a message with that id is stored in the
// mailbox (in any thread), it writes nothing and returns the stored seq with AlreadyStored,
// naming the fields in which m differs from the stored copy (for example a second delivery of
// one email with another list footer); finding that out costs one more read. So after any error
// — an ambiguous commit included, when the connection broke after the server committed —
// calling AppendMessage again with the same message is safe: it stores the message once and
// always yields its seq.
//
// Errors, with nothing written: ErrInvalid (wrapped) for a missing, over-long or malformed field;
// ErrConflict (wrapped) when m.RunKey already has another reply; ctx's error; the database's
// (wrapped). Lock races are retried up to 5 times.
func (s *Store) AppendMessage(ctx context.Context, m Message) (Appended, error) {
	return s.appendMessage(ctx, m, true)
}

// maxRowStatementBytes bounds the SQL text of a message's INSERT: the text of its values as the
// MySQL driver escapes them into the statement (interpolateParams), every quote, backslash, NUL
// and line break doubled. A larger message (possible only near several limits at once: both
// bodies and hundreds of long attachment names) is written as the INSERT without its
// attachments and an UPDATE that sets them, in one transaction, so that no statement exceeds
// MariaDB's default max_allowed_packet of 16 MiB.
const maxRowStatementBytes = 12 << 20

// appendMessage is AppendMessage with a hint: threadStored says whether the caller believes
// m.ThreadID is stored (AppendMail's caller has just looked it up), so the first statement is
// the one that appends to a stored thread, or the one that starts a thread. A wrong guess costs
// one statement more and nothing else: the append finds no first row to lock and starts the
// thread, or the start meets the thread's first row (a duplicate thread_start) and joins it.
func (s *Store) appendMessage(ctx context.Context, m Message, threadStored bool) (Appended, error) {
	if err := m.validate(); err != nil {
		return Appended{}, err
	}
	fail := func(err error) (Appended, error) {
		return Appended{}, fmt.Errorf("store: append message %q to thread %q: %w", m.MessageID, m.ThreadID, err)
	}
	row := newMessageRow(s.dialect, m)
	join := threadStored
	// Each round is one of: stored; the thread had no first row (start it); a duplicate key,
	// which is the message id (already stored: done) or the thread's first row, written by
	// another append since (join it). Three rounds cover any real interleaving, a concurrent
	// DeleteThread included.
	for range 3 {
		seq, err := s.writeMessage(ctx, m, row, join)
		if err == nil {
			return Appended{Seq: seq, ThreadID: m.ThreadID, Outcome: Stored}, nil
		}
		if errors.Is(err, errNoThreadRow) {
			join = false
			continue
		}
		if !isDuplicateKey(err) {
			return fail(err)
		}
		stored, err := s.messageWhere(ctx, "mailbox = ? AND message_id = ?", m.Mailbox, m.MessageID)
		if err == nil {
			return Appended{Seq: stored.Seq, ThreadID: stored.ThreadID, Outcome: AlreadyStored, Differs: m.differences(stored)}, nil
		}
		if !errors.Is(err, ErrMessageNotFound) {
			return fail(err)
		}
		if m.RunKey != "" {
			if reply, err := s.messageWhere(ctx, "run_key = ?", m.RunKey); err == nil {
				return fail(fmt.Errorf("%w: run %q already has the reply %q", ErrConflict, m.RunKey, reply.MessageID))
			}
		}
		join = true // the key was thread_start: another append started the thread meanwhile
	}
	return fail(errors.New("the thread was started and removed while appending"))
}

// errNoThreadRow says an append to a stored thread found no first row: the thread is new, or
// was deleted since the caller looked.
var errNoThreadRow = errors.New("store: the thread has no first row")

// writeMessage writes row: one statement that commits on its own, or, for an append to a stored
// thread on MySQL, an outbound reply with a run key or a message over maxRowStatementBytes, that
// statement and the rest in one transaction. join says which statement: the append to a stored
// thread (errNoThreadRow when it has no first row; inside a transaction the start follows at
// once) or the thread's start.
func (s *Store) writeMessage(ctx context.Context, m Message, row messageWrite, join bool) (int64, error) {
	outbox := m.RunKey != "" && m.Direction == history.Outbound
	// On MySQL an append to a stored thread takes the thread's lock in a statement of its own,
	// inside a transaction, then INSERTs under it: a record lock on the first row's primary
	// key, which appends queued behind it cannot deadlock against (see the package doc,
	// Concurrency). SQLite hands out the rowid inside its database-wide write lock, so there
	// the join INSERT alone is enough.
	lockFirst := join && s.dialect == DialectMySQL
	if !outbox && !row.split && !lockFirst {
		return row.insert(ctx, storeExec{s}, join)
	}
	var seq int64
	err := s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		join := join // per attempt: inTx may run this again
		if lockFirst {
			// The lock is on the first row's primary key: a record lock without a gap. (A
			// locking read through the nullable unique thread_start index takes a next-key
			// lock whose gap is where every append's NULL thread_start goes, and appends
			// queued behind the lock then deadlock the one that holds it.)
			var first int64
			err := tx.GetContext(ctx, &first, s.dialect.rebind(`SELECT seq FROM messages
				WHERE seq = (SELECT f.seq FROM messages f WHERE f.thread_start = ?) FOR UPDATE`), m.ThreadID)
			if errors.Is(err, sql.ErrNoRows) {
				join = false // the thread is new: start it in this transaction
			} else if err != nil {
				return err
			}
		}
		if lockFirst && join {
			seq, err = row.insertLocked(ctx, tx)
		} else {
			seq, err = row.insert(ctx, tx, join)
		}
		if errors.Is(err, errNoThreadRow) {
			seq, err = row.insert(ctx, tx, false)
		}
		if err != nil {
			return err
		}
		if row.split {
			if _, err := tx.ExecContext(ctx, s.dialect.rebind(`UPDATE messages SET attachments = ? WHERE seq = ?`), row.attachments, seq); err != nil {
				return err
			}
		}
		if outbox {
			// A reply enters the outbox with it (see UnsentReplies).
			if _, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO mail_outbox (message_seq, mailbox) VALUES (?, ?)`), seq, m.Mailbox); err != nil {
				return err
			}
		}
		return nil
	})
	return seq, err
}

// execer runs one statement: a transaction, or the store outside one (storeExec).
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// storeExec runs each statement on its own, retrying lost lock races (Store.exec).
type storeExec struct{ s *Store }

func (e storeExec) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return e.s.exec(ctx, query, args...)
}

// messageWrite is a message's row ready to insert: the two statements that write it and their
// arguments.
type messageWrite struct {
	start, join         string // the INSERTs that start the thread and that append to it
	startArgs, joinArgs []any
	lockedArgs          []any // start's statement appending to a thread whose first row is locked
	attachments         any   // the attachments column's value (NULL or JSON text)
	split               bool  // the attachments are set by an UPDATE after the INSERT
}

// messageInsertColumns are the columns AppendMessage writes, in the order of messageWrite's
// arguments; thread_start is the second.
const messageInsertColumns = `thread_id, thread_start, mailbox, message_id, in_reply_to, refs, direction, sender,
	recipients, cc, reply_to, subject, sent_at, text_body, html_body, attachments, run_key, not_to_answer, problems,
	subject_key`

// newMessageRow prepares m's row (m is valid).
func newMessageRow(d Dialect, m Message) messageWrite {
	w := messageWrite{attachments: encodeAttachments(m.Attachments)}
	values := []any{m.MessageID, m.InReplyTo, encodeList(m.References), string(m.Direction), m.From, encodeList(m.To),
		encodeList(m.Cc), encodeList(m.ReplyTo), m.Subject, d.timeArg(m.Date), m.Text, m.HTML, w.attachments,
		nullString(m.RunKey), m.NotToAnswer, encodeList(m.Problems), nullString(m.SubjectKey)}
	if statementBytes(m.Mailbox, m.ThreadID, values) > maxRowStatementBytes {
		w.split, values[12] = true, nil
	}
	// The thread's first row carries thread_start; the others NULL. start writes a thread's
	// first row; lockedArgs make the same statement a later row of a thread whose first row the
	// transaction has locked (MySQL). join, the append on its own (SQLite, under the database's
	// write lock), takes its thread_id from the thread's first row; without a first row the
	// thread_id is NULL, which the column refuses. (A subquery in VALUES, not INSERT ... SELECT,
	// which MariaDB runs under its table-wide AUTO-INC lock; the derived table with LIMIT is
	// what MySQL needs to read the table it inserts into.)
	w.start = d.rebind(`INSERT INTO messages (` + messageInsertColumns + `) VALUES (` + placeholders(20) + `)`)
	w.startArgs = append([]any{m.ThreadID, m.ThreadID, m.Mailbox}, values...)
	w.lockedArgs = append([]any{m.ThreadID, nil, m.Mailbox}, values...)
	w.join = d.rebind(`INSERT INTO messages (` + messageInsertColumns + `) VALUES ((SELECT f.thread_start FROM
		(SELECT thread_start FROM messages WHERE thread_start = ? LIMIT 1` + d.forUpdate() + `) f), NULL, ` + placeholders(18) + `)`)
	w.joinArgs = append([]any{m.ThreadID, m.Mailbox}, values...)
	return w
}

// insertLocked appends the row to a thread whose first row the transaction ex has locked
// (thread_id given, thread_start NULL) and returns its seq.
func (w messageWrite) insertLocked(ctx context.Context, ex execer) (int64, error) {
	res, err := ex.ExecContext(ctx, w.start, w.lockedArgs...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// insert runs the INSERT that appends to a stored thread (join) or the one that starts the
// thread, and returns the new row's seq. An append that finds no first row inserts nothing and
// returns errNoThreadRow.
func (w messageWrite) insert(ctx context.Context, ex execer, join bool) (int64, error) {
	query, args := w.start, w.startArgs
	if join {
		query, args = w.join, w.joinArgs
	}
	res, err := ex.ExecContext(ctx, query, args...)
	if join && isNotNull(err) {
		return 0, errNoThreadRow
	}
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// statementBytes returns the length of the SQL text the MySQL driver writes for a message's
// string values (each quoted, its quotes, backslashes, NULs, line breaks and ^Z escaped).
func statementBytes(mailbox, threadID string, values []any) int {
	n := 0
	add := func(v string) {
		n += len(v) + 2
		for i := 0; i < len(v); i++ {
			switch v[i] {
			case 0, '\n', '\r', 0x1a, '\'', '"', '\\':
				n++
			}
		}
	}
	add(mailbox)
	add(threadID)
	add(threadID)
	for _, v := range values {
		if s, ok := v.(string); ok {
			add(s)
		}
	}
	return n
}

// attachmentJSON is one attachment in messages.attachments.
type attachmentJSON struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
}

// encodeAttachments returns the attachments column's value: NULL for none, else the JSON array
// of their metadata in order, without HTML escaping (Data is never stored).
func encodeAttachments(atts []history.Attachment) any {
	if len(atts) == 0 {
		return nil
	}
	list := make([]attachmentJSON, len(atts))
	for i, a := range atts {
		list[i] = attachmentJSON{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(list) // strings and integers always encode
	return strings.TrimSuffix(b.String(), "\n")
}

// decodeAttachments reads the attachments column (Valid false: none).
func decodeAttachments(col sql.NullString) ([]history.Attachment, error) {
	if !col.Valid {
		return nil, nil
	}
	var list []attachmentJSON
	if err := json.Unmarshal([]byte(col.String), &list); err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, nil
	}
	out := make([]history.Attachment, len(list))
	for i, a := range list {
		out[i] = history.Attachment{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size}
	}
	return out, nil
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
	if len(m.SubjectKey) > MaxSubjectKeyChars || !isKeyText(m.SubjectKey) {
		return fmt.Errorf("%w: message %q: subject key %q (want at most %d printable ASCII characters, no space)", ErrInvalid, m.MessageID, m.SubjectKey, MaxSubjectKeyChars)
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
// metadata (ToolUses empty) and the store-only fields. One query. Errors: ErrMessageNotFound
// (wrapped), or the database's (wrapped).
func (s *Store) Message(ctx context.Context, mailbox, messageID string) (Message, error) {
	m, err := s.messageWhere(ctx, "mailbox = ? AND message_id = ?", mailbox, messageID)
	if err != nil {
		return Message{}, fmt.Errorf("store: read message %q of mailbox %q: %w", messageID, mailbox, err)
	}
	return m, nil
}

// ThreadOf answers runtime/mail's thread lookup for one message in mailbox in one query (see
// mail.ThreadQuery and mail.ThreadFound): the thread of the first of q.IDs the mailbox holds,
// that id and its seq; when it holds none of them, q.NewThread (the thread the message would
// start; "" for none) with seq 0 and no id if a message of that thread is stored. That is how
// an email joins the thread of the first message it references that the store knows (its
// References, then its In-Reply-To), or the thread an earlier reply to the same unknown message
// started; and, with the email's own id listed first, how a second copy is recognised before
// anything is written. ReplyID is the message id of an outbound message of mailbox whose
// In-Reply-To is q.IDs[0] (the lowest seq when there are several; "" for none): the message was
// answered before it arrived (its reply came first, from an import of a sent folder or a late
// delivery). SubjectThread, when q.SubjectKey is set, is the thread of the mailbox's newest
// message (by sent_at, then seq) with that subject key and a sent_at not before q.Since.
//
// It reads the (mailbox, message id), (mailbox, in-reply-to) and (mailbox, subject key, sent at,
// seq) indexes — one entry for the subject, whatever the mailbox holds — and, for NewThread, the
// thread's first row. At most MaxReferences+2 ids. Errors: ErrInvalid for too many ids or a
// subject key of more than MaxSubjectKeyChars, or the database's (wrapped).
func (s *Store) ThreadOf(ctx context.Context, mailbox string, q mail.ThreadQuery) (mail.ThreadFound, error) {
	var f mail.ThreadFound
	if len(q.IDs) > MaxReferences+2 {
		return f, fmt.Errorf("%w: %d message ids to look up (at most %d)", ErrInvalid, len(q.IDs), MaxReferences+2)
	}
	if len(q.SubjectKey) > MaxSubjectKeyChars {
		return f, fmt.Errorf("%w: subject key of %d characters (at most %d)", ErrInvalid, len(q.SubjectKey), MaxSubjectKeyChars)
	}
	var parts []string
	var args []any
	if len(q.IDs) > 0 {
		parts = append(parts, `SELECT message_id, thread_id, seq, 0 AS kind FROM messages WHERE mailbox = ? AND message_id IN (`+
			placeholders(len(q.IDs))+`)`)
		args = append(append(args, mailbox), anySlice(q.IDs)...)
		// The replies to the message (there are few): named, the index is used whatever the
		// statistics say.
		parts = append(parts, `SELECT message_id, thread_id, seq, 1 AS kind FROM `+
			s.dialect.indexed("messages", "messages_mailbox_in_reply_to")+`
			WHERE mailbox = ? AND in_reply_to = ? AND direction = 'outbound'`)
		args = append(args, mailbox, q.IDs[0])
	}
	if q.NewThread != "" {
		parts = append(parts, `SELECT '' AS message_id, thread_id, 0 AS seq, 0 AS kind FROM messages WHERE thread_start = ?`)
		args = append(args, q.NewThread)
	}
	if q.SubjectKey != "" {
		// The derived table lets MySQL take a LIMIT inside UNION ALL.
		parts = append(parts, `SELECT '' AS message_id, thread_id, seq, 2 AS kind FROM (SELECT thread_id, seq FROM `+
			s.dialect.indexed("messages", indexMailboxSubject)+`
			WHERE mailbox = ? AND subject_key = ? AND sent_at >= ? ORDER BY sent_at DESC, seq DESC LIMIT 1) newest`)
		args = append(args, mailbox, q.SubjectKey, s.dialect.timeArg(q.Since))
	}
	if len(parts) == 0 {
		return f, nil
	}
	var rows []struct {
		MessageID string `db:"message_id"`
		ThreadID  string `db:"thread_id"`
		Seq       int64  `db:"seq"`
		Kind      int    `db:"kind"`
	}
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(strings.Join(parts, " UNION ALL ")), args...); err != nil {
		return f, fmt.Errorf("store: look up the threads of %d message ids: %w", len(q.IDs), err)
	}
	var replySeq int64
	for _, r := range rows {
		switch {
		case r.Kind == 1 && (f.ReplyID == "" || r.Seq < replySeq):
			f.ReplyID, replySeq = r.MessageID, r.Seq
		case r.Kind == 2:
			f.SubjectThread = r.ThreadID
		}
	}
	for _, id := range q.IDs {
		for _, r := range rows {
			if r.Kind == 0 && r.MessageID == id && r.Seq != 0 {
				f.ThreadID, f.MessageID, f.Seq = r.ThreadID, id, r.Seq
				return f, nil
			}
		}
	}
	for _, r := range rows {
		if r.Kind == 0 && r.Seq == 0 {
			f.ThreadID = r.ThreadID
			return f, nil
		}
	}
	return f, nil
}

// indexMailboxSubject is the index ThreadOf's subject lookup reads (migration 00043).
const indexMailboxSubject = "messages_mailbox_subject"

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
	SubjectKey  sql.NullString `db:"subject_key"`
}

// storedMessageColumns are the columns of a storedMessageRow.
const storedMessageColumns = messageColumns + `, thread_id, mailbox, run_key, not_to_answer, problems, subject_key`

// messageWhere reads the one message matching where (a condition on messages' columns) with its
// attachments; ErrMessageNotFound when none matches. One query.
func (s *Store) messageWhere(ctx context.Context, where string, args ...any) (Message, error) {
	var rows []storedMessageRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT `+storedMessageColumns+` FROM messages WHERE `+where), args...); err != nil {
		return Message{}, err
	}
	if len(rows) == 0 {
		return Message{}, fmt.Errorf("%w: %v", ErrMessageNotFound, args)
	}
	return rows[0].message()
}

// messageInThread reports whether seq is a message of threadID.
func (s *Store) messageInThread(ctx context.Context, seq int64, threadID string) (bool, error) {
	var n int
	err := s.db.GetContext(ctx, &n, s.dialect.rebind(`SELECT COUNT(*) FROM messages WHERE seq = ? AND thread_id = ?`), seq, threadID)
	return n > 0, err
}

// messageRow is a messages row as Thread and History read it (messageColumns).
type messageRow struct {
	Seq         int64          `db:"seq"`
	MessageID   string         `db:"message_id"`
	InReplyTo   string         `db:"in_reply_to"`
	Refs        sql.NullString `db:"refs"`
	Direction   string         `db:"direction"`
	Sender      string         `db:"sender"`
	Recipients  string         `db:"recipients"`
	Cc          string         `db:"cc"`
	ReplyTo     sql.NullString `db:"reply_to"`
	Subject     string         `db:"subject"`
	SentAt      dbTime         `db:"sent_at"`
	TextBody    string         `db:"text_body"`
	HTMLBody    string         `db:"html_body"`
	Attachments sql.NullString `db:"attachments"`
}

// messageColumns are the columns of a messageRow, for SELECTs from messages.
const messageColumns = `seq, message_id, in_reply_to, refs, direction, sender, recipients, cc, reply_to, subject,
	sent_at, text_body, html_body, attachments`

// Thread returns every message of threadID in the order History replays them: by seq, the order
// the store received them in, each with its attachments' metadata in the order they were
// appended (Data nil). ToolUses is left empty; the history source reads those. One query
// whatever the thread's length. An unknown thread yields no messages and no error.
func (s *Store) Thread(ctx context.Context, threadID string) ([]history.Message, error) {
	var rows []messageRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT `+messageColumns+` FROM messages
		WHERE thread_id = ? ORDER BY seq`), threadID); err != nil {
		return nil, fmt.Errorf("store: read thread %q: %w", threadID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	out := make([]history.Message, len(rows))
	for i, r := range rows {
		m, err := r.stored(threadID)
		if err != nil {
			return nil, fmt.Errorf("store: read thread %q: %w", threadID, err)
		}
		out[i] = m
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
	atts, err := decodeAttachments(r.Attachments)
	if err != nil {
		return m, fmt.Errorf("message %q attachments: %w", r.MessageID, err)
	}
	m.Attachments = atts
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
// uses, its compactions, its reply runs (with their turns, outcomes and events), its replies'
// outbox entries, its pending work, its activity row and its messages (with their attachments'
// metadata; the first of them stood for the thread). Deleting an unknown thread does nothing and returns nil, so a retry after an error is
// safe. Scheduled runs and their tool uses belong to no thread and are kept.
func (s *Store) DeleteThread(ctx context.Context, threadID string) error {
	err := s.inTx(ctx, func(tx *sqlx.Tx) error { return s.deleteThread(ctx, tx, threadID) })
	if err != nil {
		return fmt.Errorf("store: delete thread %q: %w", threadID, err)
	}
	return nil
}

// deleteThread is DeleteThread's statements, in tx.
func (s *Store) deleteThread(ctx context.Context, tx *sqlx.Tx, threadID string) error {
	for _, q := range []string{
		"DELETE FROM tool_uses WHERE thread_id = ?",
		"DELETE FROM compactions WHERE thread_id = ?",
		"DELETE FROM runs WHERE thread_id = ?",
		"DELETE FROM mail_outbox WHERE message_seq IN (SELECT seq FROM messages WHERE thread_id = ?)",
		"DELETE FROM messages WHERE thread_id = ?",
		"DELETE FROM pending_replies WHERE thread_id = ?",
		"DELETE FROM thread_activity WHERE thread_id = ?",
	} {
		if _, err := tx.ExecContext(ctx, s.dialect.rebind(q), threadID); err != nil {
			return err
		}
	}
	return nil
}
