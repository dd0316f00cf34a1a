package mail

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

// Store is what Ingest needs from a message store, in terms this package and the store share
// (runtime/store implements it; this package never imports the store). A mailbox scopes message
// ids: Ingest uses the persona's name, so one email delivered to two personas is stored once
// for each.
type Store interface {
	// ThreadOf answers q for mailbox in one query (see ThreadQuery and ThreadFound). Ingest
	// lists the message's own id first, so a second copy is recognised here, before anything
	// is written.
	ThreadOf(ctx context.Context, mailbox string, q ThreadQuery) (ThreadFound, error)
	// AppendMail stores m (its ThreadID set) in mailbox with rec, idempotently by (mailbox,
	// m.MessageID): when that id is already stored (a copy stored since the lookup) it writes
	// nothing and returns the stored seq and thread with duplicate true. A retry after any
	// error is safe.
	AppendMail(ctx context.Context, m history.Message, mailbox string, rec MailRecord) (seq int64, threadID string, duplicate bool, err error)
}

// ThreadQuery is what Ingest asks a Store about one message in one mailbox.
type ThreadQuery struct {
	// IDs are the ids to look up, in order: the message's own id, then ThreadCandidates (at most
	// 102).
	IDs []string
	// NewThread is the thread the message would start (an earlier reply to the same unknown
	// root may have started it); "" for none.
	NewThread string
	// SubjectKey, when not "", asks for the thread of the mailbox's newest message (by Date,
	// then seq) stored with that SubjectKey whose Date is not before Since.
	SubjectKey string
	Since      time.Time
}

// ThreadFound is a Store's answer to a ThreadQuery.
type ThreadFound struct {
	// ThreadID, MessageID and Seq are the thread, id and seq (a store's seqs start at 1) of the
	// first of IDs the mailbox holds; when it holds none of them, ThreadID is NewThread if a
	// message of that thread is stored (Seq 0, MessageID ""), else all are zero.
	ThreadID  string
	MessageID string
	Seq       int64
	// ReplyID is the id of an outbound message of the mailbox whose In-Reply-To is IDs[0] (the
	// lowest seq of several; "" for none): the message was answered before it arrived.
	ReplyID string
	// SubjectThread is the thread SubjectKey found ("" for none, or no SubjectKey).
	SubjectThread string
}

// MailRecord is what AppendMail stores with a message besides the message itself.
type MailRecord struct {
	// NotToAnswer is the not-to-answer text (NoReply.String; "" to answer it).
	NotToAnswer string
	// Problems are the parse problems (Problem.String).
	Problems []string
	// ThreadStored says ThreadOf just found another message of the message's thread (so the
	// thread exists).
	ThreadStored bool
	// SubjectKey is the message's SubjectKey for the subject rule's later lookups ("" for
	// none: outbound messages and messages without a sender or subject).
	SubjectKey string
}

// Blobs keeps attachment bytes, keyed by attachment id (a content hash, see AttachmentID), so
// the host's tools can read an attachment long after the message was stored. Put must be
// idempotent: the same id always comes with the same bytes.
type Blobs interface {
	Put(ctx context.Context, id string, data []byte) error
}

// Ingestion configures Ingest.
type Ingestion struct {
	// Personas are the candidates Route chooses from.
	Personas []*runtime.Persona
	// Envelope lists the SMTP recipients the message was received for (RCPT TO); nil when
	// unknown (an .eml file).
	Envelope []string
	// Arrived is when the message was received; the zero time means now.
	Arrived time.Time
	// Parser parses the message; nil means the zero Parser (DefaultMaxSize).
	Parser *Parser
	// Blobs, when set, receives every attachment's bytes before the message is stored; nil
	// keeps only the metadata (the bytes still reach the run of this delivery through
	// Delivered.Message).
	Blobs Blobs
	// Sent says the host vouches that the message is mail its personas sent: the mail server's
	// copy of a reply, an import of a sent folder. Only then is a message whose From is a
	// persona's address or alias stored as that persona's own outbound message (and routed to
	// it when it is not among the recipients). Otherwise, since anyone can write any From, such
	// a message is stored only when it is addressed to the persona, as an inbound message that
	// is not answered (ReasonOwnAddress): a forged From never puts words in the persona's mouth.
	// A copy of a reply the persona sent through the outbox needs no flag: it carries the
	// stored reply's Message-ID, so it is recognised as a second copy.
	Sent bool
}

// Ingested is what Ingest did with one message.
type Ingested struct {
	// Message is the parsed message.
	Message *Message
	// Deliveries has one entry per persona the message is for (Route's order); empty when it is
	// for none of them (then nothing was stored).
	Deliveries []Delivered
}

// Delivered is one persona's copy of an ingested message.
type Delivered struct {
	Delivery
	// Message is the stored message as the runner answers it: the parsed history.Message with
	// the persona's ThreadID and the stored Seq, attachments with their bytes. Its Direction is
	// history.Outbound when the message is the persona's own sent mail (From its address, and
	// Ingestion.Sent: replayed as its own turn), else history.Inbound. Own (of the embedded
	// Delivery) is true exactly then.
	Message history.Message
	// Joined is true when the message joined a thread the mailbox already held: the thread of a
	// message it references, the thread an earlier message naming the same root started, or
	// (BySubject) the sender's latest thread of the same subject.
	Joined bool
	// BySubject is true when the message joined its thread by the subject rule (see
	// SubjectKey): it has no reference header, and the sender wrote in that thread under the
	// same subject within SubjectWindow.
	BySubject bool
	// Duplicate is true when the mailbox already held a message with this id: nothing was
	// written, and ThreadID and Seq are the stored copy's (the first copy stays).
	Duplicate bool
}

// Answer reports whether the runner should answer this delivery: it was newly stored and is not
// flagged as not to be answered.
func (d Delivered) Answer() bool { return !d.Duplicate && !d.NoReply.Skip() }

// Ingest parses the raw message in r, routes it to the personas it is for, threads it in each
// persona's mailbox and stores it there — in that order, through st — and returns what it did
// per persona. It is idempotent by Message-ID (a synthetic id derived from the content when the
// header is missing): ingesting the same message again writes nothing and reports Duplicate
// with the stored thread and seq. Messages that must not be answered are stored all the same,
// with their reason.
//
// Threading is ThreadID's, with one addition that depends on arrival order: a reply without
// any reference header (no References, In-Reply-To or Thread-Index) whose subject has a reply or
// forward prefix joins the sender's latest thread of the same normalised subject within
// SubjectWindow, when the mailbox holds one (see SubjectKey; Delivered.BySubject), unless the
// persona's Mailbox.DisableSubjectThreading is set. Messages with reference headers never use
// it.
//
// Per persona it costs one lookup (ThreadOf with the message's own id first, then the ids it
// references, the thread it would start and the subject rule's key) and, unless the lookup found
// the message itself (a second copy: then nothing is written), one append. On runtime/store the
// append is one INSERT, attachments' metadata included, except that on MySQL an append to a
// stored thread is a transaction of four round trips (see its AppendMail); a second copy costs
// the lookup alone, and a message routed to n personas costs n times that.
// Attachment bytes go to Blobs first (content-addressed, so a crash between the two leaves at
// most an unreferenced blob, and the retry writes the same one).
//
// Errors: Parse's (ErrTooLarge, a read error), and the store's or Blobs' errors wrapped with the
// persona's name; deliveries made before the error are returned with it, and a retry of the
// whole call is safe.
func Ingest(ctx context.Context, st Store, r io.Reader, in Ingestion) (*Ingested, error) {
	p := in.Parser
	if p == nil {
		p = &Parser{}
	}
	arrived := in.Arrived
	if arrived.IsZero() {
		arrived = time.Now()
	}
	m, err := p.Parse(r, arrived)
	if err != nil {
		return nil, err
	}
	out := &Ingested{Message: m}
	routes := Route(m, in.Personas, in.Envelope...)
	if !in.Sent {
		routes = distrustOwnFrom(m, routes, in.Envelope, personaAddresses(in.Personas))
	}
	if len(routes) == 0 {
		return out, nil
	}
	if in.Blobs != nil {
		for _, a := range m.Attachments {
			if err := in.Blobs.Put(ctx, a.ID, a.Data); err != nil {
				return out, fmt.Errorf("mail: ingest %s: store attachment %s: %w", m.MessageID, a.ID, err)
			}
		}
	}
	problems := make([]string, len(m.Problems))
	for i, pr := range m.Problems {
		problems[i] = pr.String()
	}
	key := SubjectKey(m)
	for _, d := range routes {
		mailbox := d.Persona.Name
		// One lookup: the message's own id first (a second copy is found before anything is
		// written), then the ids it references, the thread it would start and, for a reply
		// without reference headers, the sender's latest thread of its subject.
		newThread := NewThreadID(mailbox, ThreadRoot(m))
		q := ThreadQuery{IDs: append([]string{m.MessageID}, ThreadCandidates(m)...), NewThread: newThread}
		if key != "" && !d.Own && bySubject(m) && !d.Persona.Mailbox.DisableSubjectThreading {
			q.SubjectKey, q.Since = key, m.Date.Add(-SubjectWindow)
		}
		found, err := st.ThreadOf(ctx, mailbox, q)
		if err != nil {
			return out, fmt.Errorf("mail: ingest %s for %s: %w", m.MessageID, mailbox, err)
		}
		msg := m.Message
		rec := MailRecord{Problems: problems, SubjectKey: key}
		if d.Own {
			msg.Direction, rec.SubjectKey = history.Outbound, ""
		}
		if found.Seq != 0 && found.MessageID == m.MessageID { // a second copy: the first stays
			msg.Seq, msg.ThreadID = found.Seq, found.ThreadID
			out.Deliveries = append(out.Deliveries, Delivered{Delivery: d, Message: msg, Duplicate: true})
			continue
		}
		if found.ReplyID != "" && !d.NoReply.Skip() {
			d.NoReply = NoReply{ReasonAnswered, "<" + found.ReplyID + "> answers it"}
		}
		known := func(ref string) (string, bool) { return found.ThreadID, found.Seq != 0 && ref == found.MessageID }
		var joined, bySubject bool
		msg.ThreadID, joined = ThreadID(mailbox, m, known)
		joined = joined || (found.ThreadID != "" && found.ThreadID == newThread) // the thread an earlier reply to the same root started
		if !joined && found.SubjectThread != "" {
			msg.ThreadID, joined, bySubject = found.SubjectThread, true, true
		}
		rec.NotToAnswer, rec.ThreadStored = d.NoReply.String(), joined
		seq, storedThread, dup, err := st.AppendMail(ctx, msg, mailbox, rec)
		if err != nil {
			return out, fmt.Errorf("mail: ingest %s for %s: %w", m.MessageID, mailbox, err)
		}
		msg.Seq, msg.ThreadID = seq, storedThread
		out.Deliveries = append(out.Deliveries, Delivered{Delivery: d, Message: msg, Joined: joined, BySubject: bySubject, Duplicate: dup})
	}
	return out, nil
}

// distrustOwnFrom applies Ingestion.Sent's rule to routes of a message the host does not vouch
// for: a delivery that Route made only because the From is the persona's own address is
// dropped, and one addressed to the persona keeps its ReasonOwnAddress but is not stored as
// the persona's own message.
func distrustOwnFrom(m *Message, routes []Delivery, envelope []string, exact map[string]bool) []Delivery {
	out := routes[:0]
	for _, d := range routes {
		if d.Own {
			if !addressedTo(m, d.Persona, envelope, exact) {
				continue
			}
			d.Own = false
		}
		out = append(out, d)
	}
	return out
}
