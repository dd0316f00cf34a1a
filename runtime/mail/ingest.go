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
	// ThreadOf returns the thread of the first of ids that mailbox holds, that id and its seq (a
	// store's seqs start at 1); when it holds none of them, newThread with seq 0 and no id if a
	// message of that thread is stored; else "", "", 0. Ingest lists the message's own id first,
	// so a second copy is recognised here, before anything is written, and passes the thread the
	// message would start (an earlier reply to the same unknown parent may have started it).
	// replyID is the id of an outbound message of mailbox whose In-Reply-To is ids[0] ("" for
	// none): the message was answered before it arrived.
	ThreadOf(ctx context.Context, mailbox string, ids []string, newThread string) (threadID, messageID string, seq int64, replyID string, err error)
	// AppendMail stores m (its ThreadID set) in mailbox with the not-to-answer text and the
	// parse problems, idempotently by (mailbox, m.MessageID): when that id is already stored (a
	// copy stored since the lookup) it writes nothing and returns the stored seq and thread
	// with duplicate true. threadStored says ThreadOf just found another message of m.ThreadID
	// (so the thread exists). A retry after any error is safe.
	AppendMail(ctx context.Context, m history.Message, mailbox, notToAnswer string, problems []string, threadStored bool) (seq int64, threadID string, duplicate bool, err error)
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
	// message it references, or the thread an earlier message naming the same root started.
	Joined bool
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
// Per persona it costs one lookup (ThreadOf with the message's own id first, then the ids it
// references, and the thread it would start) and, unless the lookup found the message itself (a second copy: then nothing is
// written), one append. On runtime/store the append is one INSERT whether the message joins a
// thread or starts one, attachments' metadata included, so a message costs two database round
// trips per persona and a second copy one; a message routed to n personas costs n times that.
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
	for _, d := range routes {
		mailbox := d.Persona.Name
		// One lookup: the message's own id first (a second copy is found before anything is
		// written), then the ids it references, and the thread it would start.
		newThread, _ := ThreadID(mailbox, &m.Message, func(string) (string, bool) { return "", false })
		thread, id, seq, replyID, err := st.ThreadOf(ctx, mailbox, append([]string{m.MessageID}, ThreadCandidates(&m.Message)...), newThread)
		if err != nil {
			return out, fmt.Errorf("mail: ingest %s for %s: %w", m.MessageID, mailbox, err)
		}
		msg := m.Message
		if d.Own {
			msg.Direction = history.Outbound
		}
		if seq != 0 && id == m.MessageID { // a second copy: the first stays
			msg.Seq, msg.ThreadID = seq, thread
			out.Deliveries = append(out.Deliveries, Delivered{Delivery: d, Message: msg, Duplicate: true})
			continue
		}
		if replyID != "" && !d.NoReply.Skip() {
			d.NoReply = NoReply{ReasonAnswered, "<" + replyID + "> answers it"}
		}
		known := func(ref string) (string, bool) { return thread, seq != 0 && ref == id }
		var joined bool
		msg.ThreadID, joined = ThreadID(mailbox, &m.Message, known)
		joined = joined || thread == newThread // the thread an earlier reply to the same root started
		seq, storedThread, dup, err := st.AppendMail(ctx, msg, mailbox, d.NoReply.String(), problems, joined)
		if err != nil {
			return out, fmt.Errorf("mail: ingest %s for %s: %w", m.MessageID, mailbox, err)
		}
		msg.Seq, msg.ThreadID = seq, storedThread
		out.Deliveries = append(out.Deliveries, Delivered{Delivery: d, Message: msg, Joined: joined, Duplicate: dup})
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
