package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
)

func TestAppendMailReturnsTheStoredCopyOfADuplicate(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		m := msg("support/t1", "q1@cust.example", baseTime).Message
		m.ReplyTo = []string{"Ann <ann@cust.example>", "desk@cust.example"}
		seq, thread, dup, err := s.AppendMail(ctx, m, "support", mail.MailRecord{NotToAnswer: "precedence: Precedence: bulk", Problems: []string{"date: no Date header"}})
		if err != nil || dup || thread != "support/t1" || seq == 0 {
			t.Fatalf("AppendMail = %d, %q, %v, %v", seq, thread, dup, err)
		}
		stored, err := s.Message(ctx, "support", "q1@cust.example")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(stored.ReplyTo, m.ReplyTo) || stored.NotToAnswer != "precedence: Precedence: bulk" ||
			!reflect.DeepEqual(stored.Problems, []string{"date: no Date header"}) || stored.Mailbox != "support" {
			t.Errorf("stored reply-to %q, not to answer %q, problems %q, mailbox %q", stored.ReplyTo, stored.NotToAnswer, stored.Problems, stored.Mailbox)
		}
		// A second copy computed into another thread (its parent arrived in between) keeps the
		// first copy and reports the stored thread.
		again := m
		again.ThreadID = "support/t2"
		seq2, thread2, dup2, err := s.AppendMail(ctx, again, "support", mail.MailRecord{})
		if err != nil || !dup2 || seq2 != seq || thread2 != "support/t1" {
			t.Errorf("second copy: %d, %q, %v, %v; want %d, support/t1, duplicate", seq2, thread2, dup2, err, seq)
		}
		// Another mailbox holds its own copy, in its own thread.
		theirs := m
		theirs.ThreadID = "sales/t1"
		seq3, _, dup3, err := s.AppendMail(ctx, theirs, "sales", mail.MailRecord{})
		if err != nil || dup3 || seq3 == seq {
			t.Errorf("other mailbox: %d, %v, %v", seq3, dup3, err)
		}
		th, err := s.Thread(ctx, "support/t1")
		if err != nil || len(th) != 1 || !reflect.DeepEqual(th[0].ReplyTo, m.ReplyTo) {
			t.Errorf("Thread: %+v, %v", th, err)
		}
	})
}

func TestOutboxListsUnsentRepliesAndMarksThemSent(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		mustAppend(t, s, withMailbox(msg("support/t1", "q1@cust.example", baseTime), "support"))
		reply := func(id, runKey, mailbox string) int64 {
			m := withMailbox(msg("support/t1", id, baseTime.Add(1)), mailbox)
			m.Direction, m.RunKey, m.InReplyTo = history.Outbound, runKey, "q1@cust.example"
			m.Attachments = []history.Attachment{{ID: "att_1", Filename: "label.pdf", ContentType: "application/pdf", Size: 3}}
			return mustAppend(t, s, m)
		}
		r1 := reply("r1@acme.example", "run-1", "support")
		r2 := reply("r2@acme.example", "run-2", "support")
		other := reply("r3@acme.example", "run-3", "sales")
		unsent, err := s.UnsentReplies(ctx, "support", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(unsent) != 2 || unsent[0].Seq != r1 || unsent[1].Seq != r2 || unsent[0].RunKey != "run-1" ||
			unsent[0].InReplyTo != "q1@cust.example" || len(unsent[1].Attachments) != 1 || unsent[1].Attachments[0].Filename != "label.pdf" {
			t.Fatalf("unsent replies: %+v", unsent)
		}
		if first, _ := s.UnsentReplies(ctx, "support", 1); len(first) != 1 || first[0].Seq != r1 {
			t.Errorf("limit 1: %+v", first)
		}
		if o, err := s.MarkSent(ctx, r1); o != Stored || err != nil {
			t.Errorf("MarkSent = %v, %v", o, err)
		}
		if o, err := s.MarkSent(ctx, r1); o != AlreadyStored || err != nil {
			t.Errorf("MarkSent again = %v, %v; want AlreadyStored", o, err)
		}
		if _, err := s.MarkSent(ctx, 999999); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("MarkSent of no reply: %v", err)
		}
		inbound, _ := s.Message(ctx, "support", "q1@cust.example")
		if _, err := s.MarkSent(ctx, inbound.Seq); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("MarkSent of an inbound message: %v", err)
		}
		if unsent, _ := s.UnsentReplies(ctx, "support", 10); len(unsent) != 1 || unsent[0].Seq != r2 {
			t.Errorf("after MarkSent: %+v", unsent)
		}
		if unsent, _ := s.UnsentReplies(ctx, "sales", 10); len(unsent) != 1 || unsent[0].Seq != other {
			t.Errorf("sales: %+v", unsent)
		}
		if _, err := s.UnsentReplies(ctx, "support", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("limit 0: %v", err)
		}
		if err := s.DeleteThread(ctx, "support/t1"); err != nil {
			t.Fatalf("DeleteThread with outbox rows: %v", err)
		}
		if n := countRows(t, s, "mail_outbox", ""); n != 0 {
			t.Errorf("%d outbox rows left after DeleteThread", n)
		}
	})
}

func withMailbox(m Message, mailbox string) Message {
	m.Mailbox = mailbox
	return m
}

// The store is the Store mail.Ingest works through.
var _ mail.Store = (*Store)(nil)

// TestIngestExampleThread ingests the example support thread (examples/mail/*.eml) through
// mail.Ingest into a real store, in arrival order and in reverse and two shuffled orders: each
// ends in one thread of the support agent whose replay order is the order of arrival, ingesting
// every file again changes nothing, and an out-of-office reply to the persona's reply is stored
// and not answered.
func TestIngestExampleThread(t *testing.T) {
	files, err := filepath.Glob("../../examples/mail/*.eml")
	if err != nil || len(files) != 6 {
		t.Fatalf("example thread: %v, %d files", err, len(files))
	}
	raws := make([][]byte, len(files))
	for i, f := range files {
		if raws[i], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	support := &runtime.Persona{Name: "support-agent"}
	support.Mailbox.Address = "support@acme.example"
	in := mail.Ingestion{Personas: []*runtime.Persona{support}, Arrived: time.Date(2025, 3, 7, 0, 0, 0, 0, time.UTC)}
	ids := []string{"c1@brightline.io", "s1@acme.example", "c2@brightline.io", "s2@acme.example", "c3@brightline.io", "c4@brightline.io"}
	thread := mail.NewThreadID("support-agent", "c1@brightline.io")
	for _, order := range [][]int{{0, 1, 2, 3, 4, 5}, {5, 4, 3, 2, 1, 0}, {2, 5, 4, 0, 3, 1}, {3, 0, 4, 1, 5, 2}} {
		eachDB(t, func(t *testing.T, s *Store) {
			ctx := context.Background()
			var want []string
			arrived := map[int]bool{}
			for _, i := range order {
				in := in
				in.Sent = strings.HasPrefix(ids[i], "s") // the persona's replies: its sent mail
				got, err := mail.Ingest(ctx, s, bytes.NewReader(raws[i]), in)
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Deliveries) != 1 || got.Deliveries[0].Duplicate || got.Deliveries[0].Message.MessageID != ids[i] {
					t.Fatalf("order %v: %s: %+v", order, ids[i], got.Deliveries)
				}
				want = append(want, ids[i])
				arrived[i] = true
			}
			stored, err := s.Thread(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range stored {
				got = append(got, m.MessageID)
				own := strings.HasPrefix(m.MessageID, "s")
				if (m.Direction == history.Outbound) != own {
					t.Errorf("order %v: %s stored %s", order, m.MessageID, m.Direction)
				}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("order %v: thread %s replays %v, want the arrival order %v", order, thread, got, want)
			}
			for _, i := range order {
				in := in
				in.Sent = strings.HasPrefix(ids[i], "s")
				again, err := mail.Ingest(ctx, s, bytes.NewReader(raws[i]), in)
				if err != nil || !again.Deliveries[0].Duplicate || again.Deliveries[0].Answer() {
					t.Fatalf("order %v: second copy of %s: %+v, %v", order, ids[i], again.Deliveries, err)
				}
			}
			after, _ := s.Thread(ctx, thread)
			if !reflect.DeepEqual(after, stored) || countRows(t, s, "messages", "") != 6 {
				t.Fatalf("order %v: ingesting again changed the thread", order)
			}
			c1, _ := s.Message(ctx, "support-agent", "c1@brightline.io")
			s1, _ := s.Message(ctx, "support-agent", "s1@acme.example")
			wantC1 := ""
			if slices.Index(order, 1) < slices.Index(order, 0) { // s1, its reply, came first
				wantC1 = "answered: <s1@acme.example> answers it"
			}
			if c1.NotToAnswer != wantC1 || s1.NotToAnswer != "auto-submitted: Auto-Submitted: auto-replied" {
				t.Errorf("order %v: not to answer %q / %q; want %q / auto-submitted", order, c1.NotToAnswer, s1.NotToAnswer, wantC1)
			}
		})
	}
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for i, raw := range raws {
			in := in
			in.Sent = strings.HasPrefix(ids[i], "s")
			if _, err := mail.Ingest(ctx, s, bytes.NewReader(raw), in); err != nil {
				t.Fatal(err)
			}
		}
		ooo := "From: Jonas Brandt <jonas.brandt@brightline.io>\r\nTo: support@acme.example\r\n" +
			"Subject: Automatic reply: Re: Invoice INV-2025-0117 charged twice\r\nDate: Thu, 06 Mar 2025 16:00:00 +0100\r\n" +
			"Message-ID: <ooo-1@brightline.io>\r\nIn-Reply-To: <s2@acme.example>\r\nAuto-Submitted: auto-replied\r\n\r\n" +
			"I am out of the office until 10 March.\r\n"
		got, err := mail.Ingest(ctx, s, strings.NewReader(ooo), in)
		if err != nil {
			t.Fatal(err)
		}
		d := got.Deliveries[0]
		if d.Answer() || d.Message.ThreadID != thread || !d.Joined {
			t.Errorf("auto-reply: answer %v, thread %s, joined %v", d.Answer(), d.Message.ThreadID, d.Joined)
		}
		stored, _ := s.Message(ctx, "support-agent", "ooo-1@brightline.io")
		if stored.NotToAnswer != "auto-submitted: Auto-Submitted: auto-replied" || stored.ThreadID != thread {
			t.Errorf("stored auto-reply: %q in %s", stored.NotToAnswer, stored.ThreadID)
		}
	})
}

// TestIngestStoresMessagesOverTheStoreLimits: a message whose subject, bodies and address lists
// exceed the store's limits is cut by mail.Parse to fit them (each cut recorded) and stored.
func TestIngestStoresMessagesOverTheStoreLimits(t *testing.T) {
	var to []string
	for i := range 600 {
		to = append(to, fmt.Sprintf("person%d@cust.example", i))
	}
	to = append(to, "support@acme.example")
	long := strings.Repeat("ä", MaxBodyBytes) // 2 bytes each: twice the limit
	raw := "From: " + strings.Repeat("N", 2000) + " <lena@cust.example>\r\nTo: " + strings.Join(to, ", ") + "\r\n" +
		"Subject: " + strings.Repeat("s", MaxSubjectBytes+10) + "\r\nMessage-ID: <big@cust.example>\r\n" +
		"Date: Mon, 03 Mar 2025 09:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + long + "\r\n"
	eachDB(t, func(t *testing.T, s *Store) {
		support := &runtime.Persona{Name: "support-agent"}
		support.Mailbox.Address = "support@acme.example"
		got, err := mail.Ingest(context.Background(), s, strings.NewReader(raw), mail.Ingestion{Personas: []*runtime.Persona{support}})
		if err != nil {
			t.Fatalf("Ingest: %v", err)
		}
		// support@acme.example is the 601st address: past the MaxAddresses stored, still a recipient.
		if len(got.Deliveries) != 1 || got.Deliveries[0].Duplicate {
			t.Fatalf("deliveries %+v", got.Deliveries)
		}
		stored, err := s.Message(context.Background(), "support-agent", "big@cust.example")
		if err != nil || len(stored.To) != MaxAddresses || len(stored.Subject) != MaxSubjectBytes || len(stored.Problems) == 0 {
			t.Errorf("stored: %d To, subject %d bytes, %d problems, %v", len(stored.To), len(stored.Subject), len(stored.Problems), err)
		}
		m := got.Message
		if len(m.To) != MaxAddresses || len(m.Subject) != MaxSubjectBytes || len(m.Text) > MaxBodyBytes || m.From != "lena@cust.example" {
			t.Errorf("to %d, subject %d bytes, text %d bytes, from %q", len(m.To), len(m.Subject), len(m.Text), m.From)
		}
		m.ThreadID, m.MessageID = "support-agent/big2", "big2@cust.example"
		if _, _, _, err := s.AppendMail(context.Background(), m.Message, "support-agent", mail.MailRecord{Problems: problemTexts(m)}); err != nil {
			t.Errorf("the parsed message does not fit the store: %v", err)
		}
	})
}

func problemTexts(m *mail.Message) []string {
	var out []string
	for _, p := range m.Problems {
		out = append(out, p.String())
	}
	return out
}

// TestIngestSubjectRule runs runtime/mail's subject rule through mail.Ingest into the store: a
// reply without reference headers (testdata no-references-reply.eml, "AW: Re: …" from the
// customer of the example thread) joins the thread of that sender's latest message of the same
// normalised subject, found by the one lookup; a copy dated past the window, a persona that
// turned the rule off, and a message with In-Reply-To each start a thread of their own; the
// stored rows carry the subject key (the persona's own replies none).
func TestIngestSubjectRule(t *testing.T) {
	files, err := filepath.Glob("../../examples/mail/*.eml")
	if err != nil || len(files) != 6 {
		t.Fatalf("example thread: %v, %d files", err, len(files))
	}
	reply, err := os.ReadFile("../mail/testdata/shapes/no-references-reply.eml")
	if err != nil {
		t.Fatal(err)
	}
	late := bytes.Replace(reply, []byte("Date: Thu, 06 Mar 2025 10:00:00 +0100"), []byte("Date: Sun, 06 Apr 2025 10:00:00 +0200"), 1)
	late = bytes.Replace(late, []byte("<no-refs-1@"), []byte("<no-refs-late@"), 1)
	withRef := bytes.Replace(reply, []byte("MIME-Version: 1.0"), []byte("In-Reply-To: <lost@brightline.io>\r\nMIME-Version: 1.0"), 1)
	withRef = bytes.Replace(withRef, []byte("<no-refs-1@"), []byte("<no-refs-ref@"), 1)
	thread := mail.NewThreadID("support-agent", "c1@brightline.io")
	support := &runtime.Persona{Name: "support-agent"}
	support.Mailbox.Address = "support@acme.example"
	optOut := &runtime.Persona{Name: "support-agent"}
	optOut.Mailbox.Address, optOut.Mailbox.DisableSubjectThreading = "support@acme.example", true
	for _, c := range []struct {
		name      string
		persona   *runtime.Persona
		raw       []byte
		id        string
		thread    string
		bySubject bool
	}{
		{"joins the sender's thread", support, reply, "no-refs-1@brightline.example", thread, true},
		{"past the window", support, late, "no-refs-late@brightline.example", mail.NewThreadID("support-agent", "no-refs-late@brightline.example"), false},
		{"turned off", optOut, reply, "no-refs-1@brightline.example", mail.NewThreadID("support-agent", "no-refs-1@brightline.example"), false},
		{"a reference header: never by subject", support, withRef, "no-refs-ref@brightline.example", mail.NewThreadID("support-agent", "lost@brightline.io"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachDBWithDSN(t, func(t *testing.T, s *Store, dsn string) {
				ctx := context.Background()
				in := mail.Ingestion{Personas: []*runtime.Persona{c.persona}, Arrived: time.Date(2025, 4, 7, 0, 0, 0, 0, time.UTC)}
				for _, f := range files {
					raw, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					in := in
					in.Sent = strings.Contains(f, "support-reply")
					if _, err := mail.Ingest(ctx, s, bytes.NewReader(raw), in); err != nil {
						t.Fatal(err)
					}
				}
				ls, trips, _ := loggingStore(t, dsn)
				got, err := mail.Ingest(ctx, ls, bytes.NewReader(c.raw), in)
				if err != nil {
					t.Fatal(err)
				}
				d := got.Deliveries[0]
				if d.Message.ThreadID != c.thread || d.BySubject != c.bySubject || d.Joined != c.bySubject || !d.Answer() {
					t.Errorf("thread %s (joined %v, by subject %v, answer %v), want %s (by subject %v)", d.Message.ThreadID, d.Joined, d.BySubject, d.Answer(), c.thread, c.bySubject)
				}
				want := int64(2) // the lookup and the INSERT
				if c.bySubject && s.dialect == DialectMySQL {
					want = 5 // the lookup, and the append to a stored thread: BEGIN, lock, INSERT, COMMIT
				}
				if n := trips.Load(); n != want {
					t.Errorf("%d round trips, want %d", n, want)
				}
				stored, err := s.Message(ctx, "support-agent", c.id)
				if err != nil {
					t.Fatal(err)
				}
				if want := mail.SubjectKey(got.Message); stored.SubjectKey != want || len(want) != 32 || stored.ThreadID != c.thread {
					t.Errorf("stored subject key %q in %s, want %q in %s", stored.SubjectKey, stored.ThreadID, want, c.thread)
				}
				if s1, _ := s.Message(ctx, "support-agent", "s1@acme.example"); s1.SubjectKey != "" {
					t.Errorf("the persona's own reply has subject key %q, want none", s1.SubjectKey)
				}
			})
		})
	}
}
