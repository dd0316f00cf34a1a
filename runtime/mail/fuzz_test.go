package mail

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"mime/quotedprintable"
	netmail "net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
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
	shapes, _ := filepath.Glob("testdata/shapes/*.eml")
	for _, path := range append(files, shapes...) {
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
		"Subject: =?iso-8859-1?Q?Fr\xf6sche_=?= =?utf-8?q?\xc3?= =?utf-7?Q?+AP-?= =?UTF-7?B?KwBQ?=\r\nFrom: =?x?Q?\xff?= <a@b>\r\n\r\n",
		"Content-Type: text/plain; charset=utf-7\r\n\r\n+2D3cAA- +2D3- +- +/v8 +AAA\xff",
		"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Disposition: attachment; filename*0*=iso-8859-1''%F6; filename*1*=%; filename*3=x; filename*=''%\r\n\r\nx\r\n--b--\r\n",
		"Content-Type: application/x; name*=x''%F6%\r\nContent-Transfer-Encoding: Base64\r\n\r\nQQ=\r\n=QQ\r\nQ\r\n",
		" \tFrom: a@b\r\n\r\nx",
		"Content-Transfer-Encoding: base64\r\n\r\nSGVs\r\nbG8=\r\nV29y\r\nbGQ\r\nnot base64\r\nSGVs",
		"Content-Transfer-Encoding: quoted-printable\r\n\r\n=4=\r\n=ZZ=\n= \t\r\n=C3=A4",
		"Content-Type: multipart/mixed; boundary=declared\r\n\r\n--actual\r\nContent-Type: multipart/alternative\r\n\r\n--inner\r\nContent-Type: text/plain\r\n\r\nx\r\n--inner--\r\n--actual--\r\n",
		"Content-Type: multipart/mixed\r\n\r\n--a\r\nContent-Type: multipart/mixed\r\n\r\n--a\r\n\r\nloop\r\n",
		"Thread-Index: AdyUoT5SXyuMHppNT2uOHC06S1xtfgAAEjRW\r\nSubject: AW: Re[2]: x\r\nFrom: a@b\r\n\r\n",
		"Thread-Index: ====\r\nReturn-Path: < >\r\nList-Unsubscribe: <x>\r\nX-Loop: y\r\nFrom: postmaster@b\r\n\r\n",
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
		if th, _ := ThreadID("p", m, unknown); th == "" {
			t.Fatal("empty thread id")
		}
		if k := SubjectKey(m); k != "" && len(k) != 32 {
			t.Fatalf("subject key %q", k)
		}
		if m.ThreadIndex != "" && len(m.ThreadIndex) != 2*threadIndexRootLen {
			t.Fatalf("thread index %q", m.ThreadIndex)
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

// FuzzTransferDecoding holds the transfer and charset decoders to their round trips: data
// base64-encoded in 76-character lines decodes back exactly without a break; what
// mime/quotedprintable writes decodes as its own reader reads it; and on any input decodeBase64 never returns more
// than three bytes per four of input, and decodeUTF7 returns valid UTF-8.
func FuzzTransferDecoding(f *testing.F) {
	for _, s := range []string{"", "Hello, wörld", "\x00\xff\r\n=\r\n", strings.Repeat("long line ", 40), "+AP- +- a+b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		enc := base64.StdEncoding.EncodeToString(data)
		var lines []string
		for len(enc) > 76 {
			lines, enc = append(lines, enc[:76]), enc[76:]
		}
		wrapped := strings.Join(append(lines, enc), "\r\n") + "\r\n"
		for _, stop := range []bool{true, false} {
			out, at, lone := decodeBase64([]byte(wrapped), stop)
			if !bytes.Equal(out, data) || at != -1 || lone {
				t.Fatalf("base64 (stop %v) of %q: %q, break %d, lone %v", stop, data, out, at, lone)
			}
		}
		if out, _, _ := decodeBase64(data, true); len(out) > len(data)*3/4+2 {
			t.Fatalf("decodeBase64 made %d bytes of %d", len(out), len(data))
		}
		var qp bytes.Buffer
		w := quotedprintable.NewWriter(&qp)
		w.Write(data)
		w.Close()
		want, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(qp.Bytes())))
		if out := decodeQuotedPrintable(qp.Bytes()); err != nil || !bytes.Equal(out, want) {
			t.Fatalf("quoted-printable %q: %q, mime/quotedprintable reads %q (%v)", qp.Bytes(), out, want, err)
		}
		if out := decodeUTF7(data); !utf8.Valid(out) {
			t.Fatalf("decodeUTF7(%q) = %q, not UTF-8", data, out)
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
