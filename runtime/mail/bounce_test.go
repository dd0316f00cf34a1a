package mail

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime"
)

func TestBounceAddressEncodesTheReply(t *testing.T) {
	tests := []struct {
		name, from, id, want string
	}{
		{"a reply id", "support@acme.example", "4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example", "support+bounce-4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example"},
		{"angle brackets and case of the domain", "<Support@ACME.example>", "0a@acme.example", "Support+bounce-0a@ACME.example"},
		{"another domain: the address itself", "support@acme.example", "0a@other.example", "support@acme.example"},
		{"an id with upper case: the address itself", "support@acme.example", "AB12@acme.example", "support@acme.example"},
		{"an id with punctuation: the address itself", "support@acme.example", "a.b@acme.example", "support@acme.example"},
		{"a local part of 65 octets: the address itself", "a-long-persona-name-abcde@acme.example", "4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example", "a-long-persona-name-abcde@acme.example"},
		{"64 octets fit", "a-long-persona-name-abcd@acme.example", "4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example", "a-long-persona-name-abcd+bounce-4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example"},
		{"no id", "support@acme.example", "", "support@acme.example"},
	}
	for _, tt := range tests {
		if got := BounceAddress(tt.from, tt.id); got != tt.want {
			t.Errorf("%s: BounceAddress(%q, %q) = %q, want %q", tt.name, tt.from, tt.id, got, tt.want)
		}
	}
	for _, tt := range tests {
		got := BounceAddress(tt.from, tt.id)
		id, ok := BounceMessageID(got)
		if want := got != strings.Trim(tt.from, "<>"); ok != want {
			t.Errorf("%s: BounceMessageID(%q) ok = %v, want %v", tt.name, got, ok, want)
		} else if ok && id != strings.ToLower(tt.id) {
			t.Errorf("%s: BounceMessageID(%q) = %q, want %q", tt.name, got, id, tt.id)
		}
	}
}

func TestBounceMessageIDRefusesOtherSubaddresses(t *testing.T) {
	for _, a := range []string{"support@acme.example", "support+orders@acme.example", "support+bounce-@acme.example",
		"support+bounce-a.b@acme.example", "+bounce-ab@acme.example", "support+bounce-ab"} {
		if id, ok := BounceMessageID(a); ok {
			t.Errorf("BounceMessageID(%q) = %q, true; want false", a, id)
		}
	}
}

func TestParseBounce(t *testing.T) {
	tests := []struct {
		file     string
		envelope []string
		want     Bounce
		ok       bool
	}{
		{"postfix-dsn.eml", nil, Bounce{MessageID: "4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example", Recipient: "ann@cust.example", Status: "5.1.1",
			Diagnostic: "smtp; 550 5.1.1 <ann@cust.example>: Recipient address rejected: User unknown"}, true},
		{"headers-only.eml", nil, Bounce{MessageID: "0123456789abcdef0123456789abcdef@acme.example", Recipient: "carol@cust.example", Status: "5.2.2",
			Diagnostic: "smtp; 552 5.2.2 Mailbox full"}, true},
		{"delayed.eml", nil, Bounce{}, false},
		{"exchange-ndr.eml", nil, Bounce{MessageID: "4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example", Status: "5.1.10",
			Diagnostic: "Remote Server returned '550 5.1.10 RESOLVER.ADR.RecipientNotFound; Recipient not found by SMTP address lookup'"}, true},
		{"out-of-office.eml", nil, Bounce{}, false},
	}
	for _, tt := range tests {
		raw, err := os.ReadFile(filepath.Join("testdata", "bounce", tt.file))
		if err != nil {
			t.Fatal(err)
		}
		m := mustParse(t, string(raw), arrival)
		got, ok := ParseBounce(m, tt.envelope...)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: ParseBounce = %+v, %v; want %+v, %v", tt.file, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseBounceMatchesByTheEnvelopeWhenNothingIsQuoted(t *testing.T) {
	raw := msg("Final words.\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; x\r\n\r\nFinal-Recipient: rfc822; ann@cust.example\r\nAction: failed\r\nStatus: 5.7.1\r\n--b--\r\n",
		"From: MAILER-DAEMON@relay.example", "To: support@acme.example", "Message-ID: <r1@relay.example>",
		`Content-Type: multipart/report; report-type=delivery-status; boundary="b"`)
	m := mustParse(t, raw, arrival)
	if b, ok := ParseBounce(m); ok {
		t.Errorf("no original and no bounce address: got %+v, want no bounce", b)
	}
	b, ok := ParseBounce(m, "support+bounce-00ff@acme.example")
	want := Bounce{MessageID: "00ff@acme.example", Recipient: "ann@cust.example", Status: "5.7.1", Diagnostic: "5.7.1"}
	if !ok || b != want {
		t.Errorf("bounce address in the envelope: got %+v, %v; want %+v", b, ok, want)
	}
}

func TestParseBounceIgnoresPlainTextFromPeople(t *testing.T) {
	raw := msg("Sorry: 550 5.1.1 happened to me too.\r\n", "From: Ann <ann@cust.example>",
		"To: support+bounce-00ff@acme.example", "Message-ID: <p1@cust.example>")
	if b, ok := ParseBounce(mustParse(t, raw, arrival)); ok {
		t.Errorf("a person's message to a bounce address: got %+v, want no bounce", b)
	}
	raw = msg("Remote Server returned '550 5.1.1 not found'\r\n", "From: postmaster@cust.example",
		"To: support@acme.example", "Message-ID: <p2@cust.example>")
	if b, ok := ParseBounce(mustParse(t, raw, arrival)); ok {
		t.Errorf("a plain-text report to no bounce address: got %+v, want no bounce", b)
	}
}

type bounceMarks struct {
	replies map[string]bool // mailbox + " " + message id
	marked  []string
	err     error
}

func (s *bounceMarks) MarkBounced(_ context.Context, mailbox, id, status, diagnostic string) (bool, error) {
	if s.err != nil {
		return false, s.err
	}
	if !s.replies[mailbox+" "+id] {
		return false, nil
	}
	s.marked = append(s.marked, mailbox+" "+id+" "+status+" "+diagnostic)
	return true, nil
}

func TestRecordBounceMarksTheReplyOfEachMailbox(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "bounce", "postfix-dsn.eml"))
	if err != nil {
		t.Fatal(err)
	}
	m := mustParse(t, string(raw), arrival)
	support, sales := newPersona("support", "", "support@acme.example"), newPersona("sales", "", "sales@acme.example")
	in := &Ingested{Message: m, Deliveries: []Delivered{{Delivery: Delivery{Persona: support}}, {Delivery: Delivery{Persona: sales}, Duplicate: true}}}
	st := &bounceMarks{replies: map[string]bool{"support 4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example": true}}
	b, n, err := RecordBounce(context.Background(), st, in)
	if err != nil || n != 1 || b.Status != "5.1.1" {
		t.Fatalf("RecordBounce = %+v, %d, %v; want status 5.1.1, 1 marked", b, n, err)
	}
	want := "support 4f9d2c1b0a8e7d6c5b4a39281706f5e4@acme.example 5.1.1 ann@cust.example: smtp; 550 5.1.1 <ann@cust.example>: Recipient address rejected: User unknown"
	if len(st.marked) != 1 || st.marked[0] != want {
		t.Errorf("marked %q, want [%q]", st.marked, want)
	}
	st.err = errors.New("database gone")
	if _, _, err := RecordBounce(context.Background(), st, in); err == nil || !strings.Contains(err.Error(), "database gone") {
		t.Errorf("store error: got %v", err)
	}
	plain := &Ingested{Message: mustParse(t, msg("hi\r\n", "From: ann@cust.example", "To: support@acme.example"), arrival),
		Deliveries: []Delivered{{Delivery: Delivery{Persona: support}}}}
	if _, n, err := RecordBounce(context.Background(), st, plain); n != 0 || err != nil {
		t.Errorf("a message that is no bounce: %d, %v; want 0, nil", n, err)
	}
}

func TestSubaddressesReachThePersona(t *testing.T) {
	support := newPersona("support", "", "support@acme.example", "help@acme.example")
	eu := newPersona("sales-eu", "", "sales+eu@acme.example")
	sales := newPersona("sales", "", "sales@acme.example")
	personas := []*runtime.Persona{support, eu, sales}
	tests := []struct{ address, want string }{
		{"support@acme.example", "support"},
		{"support+orders@acme.example", "support"},
		{"<Help+Bounce-00ff@ACME.example>", "support"},
		{"sales+eu@acme.example", "sales-eu"}, // the exact address wins
		{"sales+us@acme.example", "sales"},
		{"sales+eu+x@acme.example", "sales"}, // the detail starts at the first delimiter
		{"+support@acme.example", ""},
		{"support+@other.example", ""},
		{"supportx@acme.example", ""},
	}
	for _, tt := range tests {
		got := ""
		if p := PersonaFor(personas, tt.address); p != nil {
			got = p.Name
		}
		if got != tt.want {
			t.Errorf("PersonaFor(%q) = %q, want %q", tt.address, got, tt.want)
		}
		m := mustParse(t, msg("hi", "From: ann@cust.example", "To: "+tt.address), arrival)
		var routed []string
		for _, d := range Route(m, personas) {
			routed = append(routed, d.Persona.Name)
		}
		if want := []string{tt.want}; tt.want == "" && len(routed) != 0 || tt.want != "" && (len(routed) != 1 || routed[0] != want[0]) {
			t.Errorf("Route(To: %s) = %q, want %q", tt.address, routed, tt.want)
		}
	}
}

// FuzzParseBounce feeds raw messages to Parse and ParseBounce, with an envelope recipient. For
// any input: no panic, the same answer twice, and a bounce found always names a Message-ID
// without angle brackets or space, a status of class 5, and a diagnostic of at most 900 bytes.
// Run it for longer with
//
//	go test ./runtime/mail -run '^$' -fuzz FuzzParseBounce -fuzztime 5m
func FuzzParseBounce(f *testing.F) {
	files, _ := filepath.Glob("testdata/bounce/*.eml")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
	}
	f.Add([]byte("Content-Type: message/delivery-status\r\n\r\nAction: failed\r\n"), "a+bounce-0@b")
	f.Add([]byte("From: postmaster@x\r\n\r\n5.1.1"), "a+bounce-0@b")
	f.Fuzz(func(t *testing.T, raw []byte, rcpt string) {
		m, err := Parse(bytes.NewReader(raw), arrival)
		if err != nil {
			return
		}
		b, ok := ParseBounce(m, rcpt)
		b2, ok2 := ParseBounce(m, rcpt)
		if b != b2 || ok != ok2 {
			t.Fatalf("not deterministic: %+v %v, then %+v %v", b, ok, b2, ok2)
		}
		if !ok {
			return
		}
		if b.MessageID == "" || strings.ContainsAny(b.MessageID, "<> \t\r\n") {
			t.Errorf("Message-ID %q", b.MessageID)
		}
		if !enhancedStatus.MatchString(b.Status) || b.Status[0] != '5' {
			t.Errorf("status %q", b.Status)
		}
		if len(b.Diagnostic) > maxDetailBytes || len(b.String()) > maxDetailBytes {
			t.Errorf("diagnostic of %d bytes", len(b.Diagnostic))
		}
	})
}
