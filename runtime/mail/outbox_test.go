package mail

import (
	"bytes"
	"errors"
	"os"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

var supportPersona = newPersona("support", "Acme Support", "support@acme.example")

func TestNewReplyAddressesTheAnswer(t *testing.T) {
	in := mustParse(t, msg("Where is my order?\r\n",
		"From: Jürgen <j@cust.example>",
		"To: support@acme.example",
		"Cc: boss@cust.example",
		"Subject: Order 42",
		"Message-ID: <q2@cust.example>",
		"In-Reply-To: <r1@acme.example>",
		"References: <q1@cust.example> <r1@acme.example>",
		"Date: Mon, 02 Feb 2026 10:00:00 +0000"), arrival)
	in.ThreadID = "support/t1"
	date := time.Date(2026, 2, 2, 10, 5, 0, 0, time.UTC)
	out, err := NewReply(supportPersona, &in.Message, "support/reply/q2@cust.example", "It ships today.", date)
	if err != nil {
		t.Fatal(err)
	}
	want := &history.Message{
		ThreadID:   "support/t1",
		MessageID:  ReplyMessageID("support/reply/q2@cust.example", "support@acme.example"),
		InReplyTo:  "q2@cust.example",
		References: []string{"q1@cust.example", "r1@acme.example", "q2@cust.example"},
		Direction:  history.Outbound,
		From:       "Acme Support <support@acme.example>",
		To:         []string{"Jürgen <j@cust.example>"},
		Date:       date,
		Subject:    "Re: Order 42",
		Text:       "It ships today.",
	}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("NewReply:\n got %+v\nwant %+v", out, want)
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}@acme\.example$`).MatchString(out.MessageID) {
		t.Errorf("Message-ID %q", out.MessageID)
	}
	if ReplyMessageID("other run", "support@acme.example") == out.MessageID {
		t.Error("ReplyMessageID is not a function of the run key")
	}

	// Reply-To wins over From; a subject that already says Re: is kept; no References → In-Reply-To.
	in2 := mustParse(t, msg("x", "From: form@site.example", "Reply-To: Ann <ann@cust.example>, bob@cust.example", "Subject: RE[2]: Order", "Message-ID: <q3@x>", "In-Reply-To: <p@x>"), arrival)
	out2, err := NewReply(supportPersona, &in2.Message, "k", "y", date)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out2.To, []string{"Ann <ann@cust.example>", "bob@cust.example"}) || out2.Subject != "RE[2]: Order" || !reflect.DeepEqual(out2.References, []string{"p@x", "q3@x"}) {
		t.Errorf("reply to %q subject %q references %q", out2.To, out2.Subject, out2.References)
	}

	noSender := mustParse(t, msg("x", "To: support@acme.example", "Message-ID: <n@x>"), arrival)
	if _, err := NewReply(supportPersona, &noSender.Message, "k", "y", date); !errors.Is(err, ErrNoRecipient) {
		t.Errorf("no sender: err %v, want ErrNoRecipient", err)
	}
	if _, err := NewReply(&runtime.Persona{Name: "x"}, &in.Message, "k", "y", date); !errors.Is(err, ErrNoMailbox) {
		t.Errorf("no mailbox: err %v, want ErrNoMailbox", err)
	}
	if _, err := NewReply(supportPersona, &in.Message, "", "y", date); err == nil {
		t.Error("empty run key: no error")
	}
}

// TestRenderGolden pins the rendered bytes of a reply with an HTML body and an attachment, and
// checks that rendering is deterministic.
func TestRenderGolden(t *testing.T) {
	o := &history.Message{
		MessageID:   "0123456789abcdef0123456789abcdef@acme.example",
		Direction:   history.Outbound,
		From:        "Acme Support <support@acme.example>",
		To:          []string{"Jürgen Müller <j@cust.example>"},
		Cc:          []string{"boss@cust.example"},
		Subject:     "Re: Bestellung – Größe",
		Date:        time.Date(2026, 2, 2, 10, 5, 0, 0, time.FixedZone("CET", 3600)),
		InReplyTo:   "q2@cust.example",
		References:  []string{"q1@cust.example", "r1@acme.example", "q2@cust.example"},
		Text:        "Hallo Jürgen,\nyour order ships today.\n",
		HTML:        "<p>Hallo Jürgen,</p><p>your order ships today.</p>",
		Attachments: []history.Attachment{{Filename: "invoice.pdf", ContentType: "application/pdf", Data: []byte("%PDF-1.4 fake")}},
	}
	got, err := Render(o)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Render(o)
	if !bytes.Equal(got, again) {
		t.Error("Render is not deterministic")
	}
	const golden = "testdata/outbox/reply.eml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("Render differs from %s:\n%s", golden, lineDiff(string(want), string(got)))
	}
	for _, p := range readBackProblems(o, got, pythonRead(t, [][]byte{got})[0]) {
		t.Error(p)
	}
}

// TestRenderRoundTrip parses a rendered reply back: the ids, addresses, subject, text and
// attachment survive, the reply is marked as not to be answered (Auto-Submitted), and the
// customer's next message, which copies its ids, joins the persona's thread.
func TestRenderRoundTrip(t *testing.T) {
	in := mustParse(t, msg("Where is my order?\r\n", "From: Jürgen <j@cust.example>", "To: support@acme.example", "Subject: Order 42 – größer",
		"Message-ID: <q1@cust.example>", "Date: Mon, 02 Feb 2026 10:00:00 +0000"), arrival)
	out, err := NewReply(supportPersona, &in.Message, "run-1", "It ships today.\nRegards", time.Date(2026, 2, 2, 10, 5, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	out.Attachments = []history.Attachment{{Filename: "label.png", ContentType: "image/png", Data: []byte("\x89PNG fake")}}
	raw, err := Render(out)
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, string(raw), arrival)
	if back.MessageID != out.MessageID || back.InReplyTo != "q1@cust.example" || !reflect.DeepEqual(back.References, []string{"q1@cust.example"}) {
		t.Errorf("ids: %q %q %q", back.MessageID, back.InReplyTo, back.References)
	}
	if back.From != "Acme Support <support@acme.example>" || !reflect.DeepEqual(back.To, []string{"Jürgen <j@cust.example>"}) {
		t.Errorf("addresses: %q → %q", back.From, back.To)
	}
	if back.Subject != "Re: Order 42 – größer" || back.Text != "It ships today.\nRegards" || !back.Date.Equal(out.Date) {
		t.Errorf("subject %q text %q date %v", back.Subject, back.Text, back.Date)
	}
	if len(back.Attachments) != 1 || back.Attachments[0].Filename != "label.png" || !bytes.Equal(back.Attachments[0].Data, []byte("\x89PNG fake")) {
		t.Errorf("attachments %+v", back.Attachments)
	}
	if back.NoReply != (NoReply{ReasonAutoSubmitted, "Auto-Submitted: auto-replied"}) {
		t.Errorf("a rendered reply parsed back: NoReply %+v, want auto-submitted", back.NoReply)
	}
	if len(back.Problems) != 0 {
		t.Errorf("problems: %s", problems(back))
	}

	// The customer answers the reply: their client copies its Message-ID into In-Reply-To and
	// References, so the answer finds the stored reply and joins its thread.
	next := mustParse(t, msg("Thanks!", "From: j@cust.example", "To: support@acme.example", "Message-ID: <q2@cust.example>",
		"In-Reply-To: <"+back.MessageID+">", "References: <q1@cust.example> <"+back.MessageID+">"), arrival)
	thread := NewThreadID("support", "q1@cust.example")
	mailbox := map[string]string{"q1@cust.example": thread, out.MessageID: thread}
	if got, joined := ThreadID("support", next, func(id string) (string, bool) { th, ok := mailbox[id]; return th, ok }); got != thread || !joined {
		t.Errorf("the customer's answer threads to %q (joined %v), want %q", got, joined, thread)
	}
}
