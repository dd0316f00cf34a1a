package mail

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
)

// outlookConversation returns the three messages of testdata/shapes/outlook-*.eml: the root
// (Thread-Index of 22 bytes, no References), a reply carrying only Thread-Index and
// Thread-Topic, and a reply with Thread-Index and References.
func outlookConversation(t testing.TB) [][]byte {
	t.Helper()
	files, err := filepath.Glob("testdata/shapes/outlook-*.eml")
	if err != nil || len(files) != 3 {
		t.Fatalf("outlook conversation: %v, %d files", err, len(files))
	}
	out := make([][]byte, len(files))
	for i, f := range files {
		if out[i], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// outlookThread is the thread the Outlook conversation's Thread-Index names in persona's
// mailbox.
func outlookThread(persona string) string {
	return NewThreadID(persona, "thread-index:01dc94a13e525f2b8c1e9a4d4f6b8e1c2d3a4b5c6d7e")
}

// TestThreadIndexJoinsItsRootInAnyOrder ingests the Outlook conversation in all 6 orders, to
// two personas: the reply that carries only Thread-Index joins the thread its root starts
// whether the root arrives before or after it, and every order ends in one thread per persona
// whose id derives from the index's first 22 bytes.
func TestThreadIndexJoinsItsRootInAnyOrder(t *testing.T) {
	files := outlookConversation(t)
	sales := newPersona("sales", "", "sales@acme.example")
	orders := 0
	permute(len(files), func(order []int) {
		orders++
		st := &memStore{}
		for _, i := range order {
			raw := files[i]
			got := ingest(t, st, raw, Ingestion{Personas: []*runtime.Persona{supportAgent, sales}, Envelope: []string{"support@acme.example", "sales@acme.example"}, Arrived: shapesArrival})
			if len(got.Deliveries) != 2 {
				t.Fatalf("order %v: %d deliveries", order, len(got.Deliveries))
			}
			for _, d := range got.Deliveries {
				if want := outlookThread(d.Persona.Name); d.Message.ThreadID != want || d.BySubject {
					t.Fatalf("order %v: file %d in %s's thread %s (by subject %v), want %s", order, i, d.Persona.Name, d.Message.ThreadID, d.BySubject, want)
				}
			}
		}
		for mailbox, threads := range st.threads() {
			if len(threads) != 1 {
				t.Fatalf("order %v: %s holds threads %v, want one", order, mailbox, threads)
			}
		}
	})
	if orders != 6 {
		t.Fatalf("%d orders", orders)
	}
	// Pure: the same without a store, the index-only reply alone and the root alone.
	for i, raw := range files {
		m := mustParse(t, string(raw), shapesArrival)
		if th, joined := ThreadID("support-agent", m, unknown); th != outlookThread("support-agent") || joined {
			t.Errorf("file %d alone: thread %s (joined %v), want %s", i, th, joined, outlookThread("support-agent"))
		}
	}
	// A Thread-Index that does not decode is left out, recorded, and the message threads by
	// its References.
	m := mustParse(t, msg("x", "From: a@x.example", "Message-ID: <bad-index@x>", "References: <root@x>", "Thread-Index: AQID", "Date: Mon, 2 Feb 2026 09:00:00 +0000"), shapesArrival)
	if m.ThreadIndex != "" || problems(m) != `header: Thread-Index "AQID" is not base64 of 22 bytes and 5 per reply; it is not used for threading` {
		t.Errorf("bad Thread-Index: %q, problems %s", m.ThreadIndex, problems(m))
	}
	if th, _ := ThreadID("p", m, unknown); th != NewThreadID("p", "root@x") {
		t.Errorf("bad Thread-Index: thread %s, want the References root's", th)
	}
}

// subjectMessage returns a message from sender with subject, dated date, with extra headers.
func subjectMessage(id, sender, subject string, date time.Time, extra ...string) []byte {
	h := append([]string{"From: " + sender, "To: support@acme.example", "Subject: " + subject,
		"Date: " + date.Format(time.RFC1123Z), "Message-ID: <" + id + ">"}, extra...)
	return []byte(msg("text of "+id+"\r\n", h...))
}

// TestSubjectRule pins the subject rule: a reply without any reference header joins the
// sender's latest thread of the same normalised subject within SubjectWindow, and nothing else
// does — not a message with References, In-Reply-To or Thread-Index, not a subject without a
// reply prefix, not another sender, not past the window, not a persona that turned it off, not
// a reply that arrives before the thread's first message (the one order-dependent rule).
func TestSubjectRule(t *testing.T) {
	day := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	lena := "Lena Fischer <lena.fischer@brightline.io>"
	original := subjectMessage("q1@brightline.io", lena, "Invoice INV-0117 charged twice", day)
	later := subjectMessage("q2@brightline.io", lena, "Invoice INV-0117 charged twice", day.Add(48*time.Hour)) // a second conversation, same subject
	thread := func(id string) string { return NewThreadID("support-agent", id) }
	noRefs := func(id, subject string, date time.Time, extra ...string) []byte {
		return subjectMessage(id, lena, subject, date, extra...)
	}
	optOut := newPersona("support-agent", "", "support@acme.example")
	optOut.Mailbox.DisableSubjectThreading = true
	tests := []struct {
		name      string
		before    [][]byte
		persona   *runtime.Persona
		msg       []byte
		thread    string
		bySubject bool
	}{
		{"AW: Re: joins the sender's thread", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "AW: Re: Invoice INV-0117 charged twice", day.Add(time.Hour)), thread("q1@brightline.io"), true},
		{"prefixes in any case, counted, full-width colon, white space", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "SV:RE[3]: fwd：  invoice   INV-0117 charged TWICE ", day.Add(time.Hour)), thread("q1@brightline.io"), true},
		{"the latest of two threads of the subject", [][]byte{original, later}, nil,
			noRefs("r1@brightline.io", "Re: Invoice INV-0117 charged twice", day.Add(72*time.Hour)), thread("q2@brightline.io"), true},
		{"at the window's end", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "Re: Invoice INV-0117 charged twice", day.Add(SubjectWindow)), thread("q1@brightline.io"), true},
		{"past the window: a new thread", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "Re: Invoice INV-0117 charged twice", day.Add(SubjectWindow+time.Minute)), thread("r1@brightline.io"), false},
		{"no reply prefix: a new thread", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "Invoice INV-0117 charged twice", day.Add(time.Hour)), thread("r1@brightline.io"), false},
		{"another sender: a new thread", [][]byte{original}, nil,
			subjectMessage("r1@other.example", "Jonas <jonas@other.example>", "Re: Invoice INV-0117 charged twice", day.Add(time.Hour)), thread("r1@other.example"), false},
		{"a tag is part of the subject", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "Re: [Ticket #1] Invoice INV-0117 charged twice", day.Add(time.Hour)), thread("r1@brightline.io"), false},
		{"In-Reply-To to an unknown message: its root, never the subject", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "Re: Invoice INV-0117 charged twice", day.Add(time.Hour), "In-Reply-To: <lost@brightline.io>"), thread("lost@brightline.io"), false},
		{"References to an unknown message: its root, never the subject", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "Re: Invoice INV-0117 charged twice", day.Add(time.Hour), "References: <lost@brightline.io>"), thread("lost@brightline.io"), false},
		{"a Thread-Index: its conversation, never the subject", [][]byte{original}, nil,
			noRefs("r1@brightline.io", "AW: Invoice INV-0117 charged twice", day.Add(time.Hour), "Thread-Index: AdyUoT5SXyuMHppNT2uOHC06S1xtfg=="), outlookThread("support-agent"), false},
		{"the persona turned the rule off", [][]byte{original}, optOut,
			noRefs("r1@brightline.io", "Re: Invoice INV-0117 charged twice", day.Add(time.Hour)), thread("r1@brightline.io"), false},
		{"the reply before the original: a new thread (arrival order counts)", nil, nil,
			noRefs("r1@brightline.io", "Re: Invoice INV-0117 charged twice", day.Add(time.Hour)), thread("r1@brightline.io"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &memStore{}
			persona := tt.persona
			if persona == nil {
				persona = supportAgent
			}
			in := Ingestion{Personas: []*runtime.Persona{persona}, Arrived: day.Add(SubjectWindow + time.Hour)}
			for _, raw := range tt.before {
				ingest(t, st, raw, in)
			}
			st.calls = 0
			d := ingest(t, st, tt.msg, in).Deliveries[0]
			if d.Message.ThreadID != tt.thread || d.BySubject != tt.bySubject || d.Joined != tt.bySubject {
				t.Errorf("thread %s (joined %v, by subject %v), want %s (by subject %v)", d.Message.ThreadID, d.Joined, d.BySubject, tt.thread, tt.bySubject)
			}
			if st.calls != 2 {
				t.Errorf("%d store calls, want 2 (one lookup, one append)", st.calls)
			}
			m := mustParse(t, string(tt.msg), in.Arrived)
			if last := st.rows[len(st.rows)-1]; last.subjectKey != SubjectKey(m) || last.subjectKey == "" {
				t.Errorf("stored subject key %q, want %q", last.subjectKey, SubjectKey(m))
			}
		})
	}
}

func TestNormalizeSubject(t *testing.T) {
	for _, c := range []struct {
		in, base string
		prefixed bool
	}{
		{"Invoice", "invoice", false},
		{"Re: Invoice", "invoice", true},
		{"RE: AW: Aw: SV: Antw: Fwd: WG: Fw: Réf: TR: VS: Odp: Invoice", "invoice", true},
		{"Re[2]: Re(3): Invoice", "invoice", true},
		{"Re : Invoice", "invoice", true},
		{"回复：发票", "发票", true},
		{"Re: [list] Re: Invoice", "[list] re: invoice", true},
		{"Regarding: Invoice", "regarding: invoice", false},
		{"Re[x]: Invoice", "re[x]: invoice", false},
		{"Re:", "", true},
		{"  Many   spaces\there ", "many spaces here", false},
	} {
		if base, prefixed := NormalizeSubject(c.in); base != c.base || prefixed != c.prefixed {
			t.Errorf("NormalizeSubject(%q) = %q, %v; want %q, %v", c.in, base, prefixed, c.base, c.prefixed)
		}
	}
	a := mustParse(t, msg("x", "From: Lena <LENA@brightline.io>", "Subject: Re: Invoice"), arrival)
	b := mustParse(t, msg("x", "From: lena@brightline.io", "Subject: invoice"), arrival)
	if SubjectKey(a) != SubjectKey(b) || len(SubjectKey(a)) != 32 {
		t.Errorf("SubjectKey %q and %q, want one 32-digit key", SubjectKey(a), SubjectKey(b))
	}
	for _, m := range []*Message{
		mustParse(t, msg("x", "From: lena@brightline.io", "Subject: Re: "), arrival),
		mustParse(t, msg("x", "To: lena@brightline.io", "Subject: Re: Invoice"), arrival),
	} {
		if k := SubjectKey(m); k != "" {
			t.Errorf("SubjectKey of %q from %q = %q, want none", m.Subject, m.From, k)
		}
	}
}

// TestIngestMailFromAnotherPersona: a message whose From is another persona's address is
// stored and not answered (ReasonPersona), unless the receiving persona accepts that persona's
// mail (Mailbox.AcceptFrom); the sender's own copy is its own outbound mail only when the host
// vouches for it (Ingestion.Sent).
func TestIngestMailFromAnotherPersona(t *testing.T) {
	raw := []byte(msg("Please check the refund for INV-2025-0117.\r\n", "From: Acme Tracker Support <support@acme.example>",
		"To: research@acme.example", "Subject: Refund check", "Message-ID: <p2p-1@acme.example>", "Date: Mon, 02 Feb 2026 10:00:00 +0000"))
	open := newPersona("research-assistant", "", "research@acme.example")
	open.Mailbox.AcceptFrom = []string{"support-agent"}
	for _, c := range []struct {
		name     string
		research *runtime.Persona
		sent     bool
		answer   bool
		reason   string
	}{
		{"not accepted", research, false, false, "persona: support@acme.example: persona support-agent, which research-assistant does not accept mail from"},
		{"not accepted, the host's sent copy", research, true, false, "persona: support@acme.example: persona support-agent, which research-assistant does not accept mail from"},
		{"accepted", open, false, true, ""},
		{"accepted, the host's sent copy", open, true, true, ""},
	} {
		st := &memStore{}
		got := ingest(t, st, raw, Ingestion{Personas: []*runtime.Persona{supportAgent, c.research}, Sent: c.sent, Arrived: shapesArrival})
		var d *Delivered
		for i := range got.Deliveries {
			if got.Deliveries[i].Persona == c.research {
				d = &got.Deliveries[i]
			}
		}
		if d == nil {
			t.Errorf("%s: not delivered to research", c.name)
			continue
		}
		if d.Answer() != c.answer || d.NoReply.String() != c.reason || d.Message.Direction != "inbound" {
			t.Errorf("%s: answer %v, %q, %s; want answer %v, %q, inbound", c.name, d.Answer(), d.NoReply.String(), d.Message.Direction, c.answer, c.reason)
		}
		if want := 1 + btoi(c.sent); len(got.Deliveries) != want {
			t.Errorf("%s: %d deliveries, want %d (the sender's own copy only when vouched for)", c.name, len(got.Deliveries), want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
