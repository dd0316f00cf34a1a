package mail

import (
	"bytes"
	"errors"
	netmail "net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// FuzzParse feeds raw messages to Parse. For any input: no panic (also none recovered inside:
// a recovered panic of the MIME library shows as a "the MIME parser failed" problem), every
// string of the result is valid UTF-8, the result is deterministic, attachment ids and sizes
// match their bytes, and the message can be threaded and answered: NewReply's reply renders and
// reads back exactly.
//
// The seeds are the corpus messages and a few hand-broken ones; run it for longer with
//
//	go test ./runtime/mail -run '^$' -fuzz FuzzParse -fuzztime 10m
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/corpus/*/*.eml")
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"\r\n\r\n",
		"From: a\r\n",
		"Content-Type: multipart/mixed\r\n\r\n--\r\n",
		"Content-Type: multipart/mixed; boundary=\"\"\r\n\r\n--\r\n--\r\n",
		"Content-Type: multipart/alternative; boundary=a\r\n\r\n--a\r\nContent-Type: multipart/mixed; boundary=a\r\n\r\n--a--\r\n",
		"Content-Type: text/plain; charset=\xff\r\nContent-Transfer-Encoding: base64\r\n\r\n====\r\n",
		"Subject: =?utf-8?q?=FF=FE?= =?x?b?AAAA?=\r\nFrom: \"\xff\" <\xfe@\xfd>\r\nDate: Mon, 99 Foo 0000 99:99:99 +9999\r\n\r\n\xff\xfe",
		"References: <" + strings.Repeat("a", 300) + "> <>\r\nMessage-ID: <\x01>\r\n\r\nx",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := Parse(bytes.NewReader(raw), arrival)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if err := checkUTF8(m); err != nil {
			t.Fatal(err)
		}
		for _, p := range m.Problems {
			if strings.Contains(p.Detail, "the MIME parser failed") {
				t.Fatalf("the MIME library panicked: %s", p.Detail)
			}
		}
		if m.Size != int64(len(raw)) || m.MessageID == "" {
			t.Fatalf("size %d for %d bytes, message id %q", m.Size, len(raw), m.MessageID)
		}
		for i, a := range m.Attachments {
			if a.Size != int64(len(a.Data)) || a.ID != AttachmentID(a.Data) {
				t.Fatalf("attachment %d: size %d, id %s for %d bytes", i, a.Size, a.ID, len(a.Data))
			}
		}
		again, _ := Parse(bytes.NewReader(raw), arrival)
		if describe(m) != describe(again) {
			t.Fatalf("two parses differ:\n%s", lineDiff(describe(m), describe(again)))
		}
		if th, _ := ThreadID("p", &m.Message, unknown); th == "" {
			t.Fatal("empty thread id")
		}
		if len(m.Addresses.From) > 0 || len(m.Addresses.ReplyTo) > 0 {
			out, err := NewReply(supportPersona, &m.Message, "run", m.Text, arrival)
			if errors.Is(err, ErrNoRecipient) && !slices.ContainsFunc(replyCandidates(m), func(a netmail.Address) bool { return len(a.Address) <= maxAddrSpec }) {
				return // no address short enough to send to
			}
			if err != nil {
				t.Fatalf("NewReply: %v", err)
			}
			raw, err := Render(out)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			for _, p := range readBackProblems(out, raw, nil) {
				t.Errorf("the reply reads back wrong: %s", p)
			}
		}
	})
}

// replyCandidates returns the addresses a reply to m goes to: its Reply-To, else its From.
func replyCandidates(m *Message) []netmail.Address {
	if len(m.Addresses.ReplyTo) > 0 {
		return m.Addresses.ReplyTo
	}
	return m.Addresses.From
}
