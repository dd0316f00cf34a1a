package mail

import (
	"encoding/base64"
	"errors"
	netmail "net/mail"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

var arrival = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// msg builds a raw message: the header lines (joined with CRLF), a blank line, the body.
func msg(body string, headers ...string) string {
	return strings.Join(headers, "\r\n") + "\r\n\r\n" + body
}

func TestParseDecodesHeaders(t *testing.T) {
	raw := msg("hi\r\n",
		"From: =?UTF-8?Q?J=C3=BCrgen_M=C3=BCller?= <juergen@example.com>",
		`To: "Smith, Ann" <ann@example.com>, =?ISO-8859-1?Q?Andr=E9?= <andre@example.com>, bob@example.com`,
		"Cc: =?ISO-2022-JP?B?GyRCRnxLXDhsGyhC?= <jp@example.jp>",
		"Reply-To: Support Desk <desk@example.com>",
		"Subject: =?UTF-8?B?R3LDvMOfZQ==?= and =?windows-1252?Q?=93quotes=94?=",
		"Message-ID: <abc.123@example.com>",
		"Date: Mon, 02 Feb 2026 10:00:00 +0100",
	)
	m := mustParse(t, raw, arrival)
	want := struct {
		from, to, cc, replyTo, subject, id string
	}{
		from:    "Jürgen Müller <juergen@example.com>",
		to:      `"Smith, Ann" <ann@example.com>, André <andre@example.com>, bob@example.com`,
		cc:      "日本語 <jp@example.jp>",
		replyTo: "Support Desk <desk@example.com>",
		subject: "Grüße and “quotes”",
		id:      "abc.123@example.com",
	}
	got := struct {
		from, to, cc, replyTo, subject, id string
	}{m.From, strings.Join(m.To, ", "), strings.Join(m.Cc, ", "), strings.Join(m.ReplyTo, ", "), m.Subject, m.MessageID}
	if got != want {
		t.Errorf("headers:\n got %+v\nwant %+v", got, want)
	}
	if m.Sender() != (netmail.Address{Name: "Jürgen Müller", Address: "juergen@example.com"}) {
		t.Errorf("Sender() = %+v", m.Sender())
	}
	if len(m.Problems) != 0 {
		t.Errorf("problems: %s", problems(m))
	}
}

func TestParseKeepsReadableAddressesOfAMalformedList(t *testing.T) {
	raw := msg("hi\r\n",
		"From: a@example.com",
		"To: ann@example.com, <broken, Bob Jones bob@example.com, Carol <carol@example.com>, ;;, (just a comment)",
		"Cc: undisclosed-recipients:;",
		"Message-ID: <x@example.com>",
	)
	m := mustParse(t, raw, arrival)
	if got, want := strings.Join(m.To, ", "), "ann@example.com, bob@example.com, Carol <carol@example.com>"; got != want {
		t.Errorf("To = %q, want %q", got, want)
	}
	if len(m.Cc) != 0 {
		t.Errorf("Cc = %v, want none (an empty group)", m.Cc)
	}
	want := []string{
		`address: To: cannot read "<broken" as an address; it is left out`,
		`address: To: "Bob Jones bob@example.com" is not a well-formed address; kept bob@example.com`,
		`address: To: cannot read "(just a comment)" as an address; it is left out`,
	}
	var got []string
	for _, p := range m.Problems {
		if p.Kind == ProblemAddress {
			got = append(got, p.String())
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("address problems:\n got %q\nwant %q", got, want)
	}
}

func TestParseReadsEightBitHeaders(t *testing.T) {
	// Raw UTF-8 (RFC 6532) is read as is; raw Latin-1 is read as windows-1252 and recorded.
	raw := "From: Jos\xc3\xa9 <jose@example.com>\r\nDate: Mon, 02 Feb 2026 10:00:00 +0000\r\nSubject: Caf\xe9 \x93menu\x94\r\nMessage-ID: <x@example.com>\r\n\r\nhi\r\n"
	m := mustParse(t, raw, arrival)
	if m.Addresses.From[0].Name != "José" || m.Subject != "Café “menu”" {
		t.Errorf("From name %q, Subject %q", m.Addresses.From[0].Name, m.Subject)
	}
	if got, want := problems(m), "header: Subject: 8-bit bytes that are not UTF-8, read as windows-1252"; got != want {
		t.Errorf("problems %q, want %q", got, want)
	}
}

func TestParseUnknownCharsetInEncodedWord(t *testing.T) {
	m := mustParse(t, msg("hi", "From: a@example.com", "Message-ID: <x@y>", "Subject: =?x-klingon?Q?qapla=27?= now"), arrival)
	if m.Subject != "qapla' now" {
		t.Errorf("Subject = %q", m.Subject)
	}
	if got, want := problems(m), `charset: header: unknown charset "x-klingon"; the bytes are kept as they are; date: no Date header; the arrival time is used`; got != want {
		t.Errorf("problems %q, want %q", got, want)
	}
}

func TestParseIDs(t *testing.T) {
	raw := msg("hi",
		"From: a@example.com",
		"Message-ID:  <own@example.com> (comment)",
		"In-Reply-To: <parent@example.com> (from Ann)",
		"References: <root@example.com>\r\n <mid@example.com> <own@example.com>\r\n\t<parent@example.com> <mid@example.com>",
	)
	m := mustParse(t, raw, arrival)
	if m.MessageID != "own@example.com" || m.InReplyTo != "parent@example.com" || m.SyntheticID {
		t.Errorf("ids: %q (synthetic %v), in reply to %q", m.MessageID, m.SyntheticID, m.InReplyTo)
	}
	if want := []string{"root@example.com", "mid@example.com", "parent@example.com"}; !reflect.DeepEqual(m.References, want) {
		t.Errorf("References = %q, want %q", m.References, want)
	}
	// Ids without brackets, as some clients write them.
	m = mustParse(t, msg("hi", "From: a@example.com", "Message-ID: bare@example.com", "In-Reply-To: Your message of Monday <p@example.com>", "References: r1@example.com, r2@example.com"), arrival)
	if m.MessageID != "bare@example.com" || m.InReplyTo != "p@example.com" || !reflect.DeepEqual(m.References, []string{"r1@example.com", "r2@example.com"}) {
		t.Errorf("bare ids: %q %q %q", m.MessageID, m.InReplyTo, m.References)
	}
}

func TestParseCapsReferences(t *testing.T) {
	var refs []string
	for i := range 150 {
		refs = append(refs, "<r"+strconv.Itoa(i)+"@example.com>")
	}
	m := mustParse(t, msg("hi", "From: a@example.com", "Message-ID: <own@x>", "References: "+strings.Join(refs, " ")), arrival)
	if len(m.References) != 100 {
		t.Fatalf("kept %d references, want 100", len(m.References))
	}
	if m.References[0] != strings.Trim(refs[0], "<>") || m.References[1] != strings.Trim(refs[51], "<>") || m.References[99] != strings.Trim(refs[149], "<>") {
		t.Errorf("kept %q … %q, want the root and the 99 newest", m.References[:2], m.References[99])
	}
}

func TestParseSyntheticIDIsStable(t *testing.T) {
	body := "Hello there\r\n"
	a := msg(body, "Received: from mx1 by mx2; Mon, 02 Feb 2026 10:00:01 +0000", "From: Ann <ann@example.com>", "To: support@example.com", "Subject: help", "Date: Mon, 02 Feb 2026 10:00:00 +0000")
	b := msg(body, "Received: from mx9 by mx8; Mon, 02 Feb 2026 10:05:00 +0000", "Delivered-To: support@example.com", "From: Ann <ann@example.com>", "To: support@example.com", "Subject: help", "Date: Mon, 02 Feb 2026 10:00:00 +0000")
	c := msg("Hello there!\r\n", "From: Ann <ann@example.com>", "To: support@example.com", "Subject: help", "Date: Mon, 02 Feb 2026 10:00:00 +0000")
	ma, mb, mc := mustParse(t, a, arrival), mustParse(t, b, arrival.Add(time.Hour)), mustParse(t, c, arrival)
	if !ma.SyntheticID || ma.MessageID != mb.MessageID {
		t.Errorf("two deliveries of one message got ids %q and %q", ma.MessageID, mb.MessageID)
	}
	if ma.MessageID == mc.MessageID {
		t.Errorf("messages with different bodies share the synthetic id %q", ma.MessageID)
	}
	if !strings.HasSuffix(ma.MessageID, "@personagen.invalid") || len(ma.MessageID) != 32+len("@personagen.invalid") {
		t.Errorf("synthetic id %q", ma.MessageID)
	}
	// A missing Date makes the arrival time the date, but not part of the id.
	d1 := mustParse(t, msg(body, "From: ann@example.com"), arrival)
	d2 := mustParse(t, msg(body, "From: ann@example.com"), arrival.Add(time.Hour))
	if d1.MessageID != d2.MessageID {
		t.Errorf("undated message: ids %q and %q differ by arrival", d1.MessageID, d2.MessageID)
	}
}

func TestParseBodies(t *testing.T) {
	tests := []struct {
		name         string
		raw          string
		text, html   string
		fromHTML     bool
		wantProblems string
	}{
		{
			name: "alternative: the plain text, and the last HTML",
			raw: msg("--b\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nplain\r\n--b\r\nContent-Type: text/html\r\n\r\n<p>rich</p>\r\n--b--\r\n",
				"From: a@x.y", "Message-ID: <1@x>", "Date: Mon, 02 Feb 2026 10:00:00 +0000", `Content-Type: multipart/alternative; boundary="b"`),
			text: "plain", html: "<p>rich</p>",
		},
		{
			name: "HTML only: text through runtime.HTMLText",
			raw: msg("<html><body><p>Hello <b>Ann</b></p><p>Line&nbsp;two &amp; more</p><script>x()</script></body></html>",
				"From: a@x.y", "Message-ID: <1@x>", "Date: Mon, 02 Feb 2026 10:00:00 +0000", "Content-Type: text/html; charset=utf-8"),
			text: "Hello Ann\n\nLine\u00a0two & more", html: "<html><body><p>Hello <b>Ann</b></p><p>Line&nbsp;two &amp; more</p><script>x()</script></body></html>", fromHTML: true,
		},
		{
			name: "mixed: every text part in order, blank line between",
			raw: msg("--m\r\nContent-Type: text/plain\r\n\r\none\r\n--m\r\nContent-Type: text/plain\r\nContent-Disposition: inline\r\n\r\ntwo\r\n--m--\r\n",
				"From: a@x.y", "Message-ID: <1@x>", "Date: Mon, 02 Feb 2026 10:00:00 +0000", "Content-Type: multipart/mixed; boundary=m"),
			text: "one\n\ntwo",
		},
		{
			name: "quoted-printable Latin-1: bytes 0x80-0x9F read as windows-1252",
			raw: msg("Gr=FC=DFe, =93Anna=94 =96 =E0 bient=F4t=\r\n!\r\n",
				"From: a@x.y", "Message-ID: <1@x>", "Date: Mon, 02 Feb 2026 10:00:00 +0000", "Content-Type: text/plain; charset=ISO-8859-1", "Content-Transfer-Encoding: quoted-printable"),
			text: "Grüße, “Anna” – à bientôt!\n",
		},
		{
			name: "windows-1252 8bit",
			raw:  "From: a@x.y\r\nMessage-ID: <1@x>\r\nDate: Mon, 02 Feb 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=windows-1252\r\nContent-Transfer-Encoding: 8bit\r\n\r\n\x80 5, it\x92s \x84fine\x93\r\n",
			text: "€ 5, it’s „fine“\n",
		},
		{
			name: "ISO-2022-JP",
			raw:  "From: a@x.y\r\nMessage-ID: <1@x>\r\nDate: Mon, 02 Feb 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=ISO-2022-JP\r\n\r\n\x1b$BF|K\\8l\x1b(B\r\n",
			text: "日本語\n",
		},
		{
			name: "base64 UTF-8",
			raw: msg(base64.StdEncoding.EncodeToString([]byte("Привет, мир\n")),
				"From: a@x.y", "Message-ID: <1@x>", "Date: Mon, 02 Feb 2026 10:00:00 +0000", "Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64"),
			text: "Привет, мир\n",
		},
		{
			name: "undeclared 8-bit UTF-8 stays UTF-8 (US-ASCII is the RFC 2045 default label)",
			raw:  "From: a@x.y\r\nMessage-ID: <1@x>\r\nDate: Mon, 02 Feb 2026 10:00:00 +0000\r\n\r\nna\xc3\xafve caf\xc3\xa9\r\n",
			text: "naïve café\n",
		},
		{
			name: "a wrong legacy label on UTF-8 text: read as UTF-8, recorded",
			raw:  "From: a@x.y\r\nMessage-ID: <1@x>\r\nDate: Mon, 02 Feb 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=iso-8859-2\r\n\r\nna\xc3\xafve\r\n",
			text: "naïve\n", wantProblems: "charset: part 0: declared iso-8859-2 but the text is UTF-8; read as UTF-8",
		},
		{
			name: "an unknown charset: kept best-effort, recorded",
			raw:  "From: a@x.y\r\nMessage-ID: <1@x>\r\nDate: Mon, 02 Feb 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=x-unknown\r\n\r\nabc \xe9t\xe9\r\n",
			text: "abc été\n", wantProblems: `charset: part 0: unknown charset "x-unknown"; the text is kept best-effort (bytes that are not UTF-8 read as windows-1252)`,
		},
		{
			name: "HTML charset from a meta tag",
			raw:  "From: a@x.y\r\nMessage-ID: <1@x>\r\nDate: Mon, 02 Feb 2026 10:00:00 +0000\r\nContent-Type: text/html\r\n\r\n<meta charset=\"iso-8859-1\"><p>d\xe9j\xe0</p>",
			text: "déjà", html: "<meta charset=\"iso-8859-1\"><p>déjà</p>", fromHTML: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustParse(t, tt.raw, arrival)
			if m.Text != tt.text || m.HTML != tt.html || m.TextFromHTML != tt.fromHTML {
				t.Errorf("text %q html %q (from HTML %v)\nwant text %q html %q (from HTML %v)", m.Text, m.HTML, m.TextFromHTML, tt.text, tt.html, tt.fromHTML)
			}
			if got := problems(m); got != tt.wantProblems {
				t.Errorf("problems %q, want %q", got, tt.wantProblems)
			}
		})
	}
}

func TestParseAttachments(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nfake image bytes")
	pdf := []byte("%PDF-1.4 fake")
	raw := msg("--m\r\n"+
		"Content-Type: multipart/related; boundary=r\r\n\r\n"+
		"--r\r\nContent-Type: text/html\r\n\r\n<img src=\"cid:logo@x\">Hi\r\n"+
		"--r\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n"+base64.StdEncoding.EncodeToString(png)+"\r\n"+
		"--r--\r\n"+
		"--m\r\nContent-Type: application/pdf; name=\"ignored.pdf\"\r\nContent-Disposition: attachment; filename*=UTF-8''Rechnung%20M%C3%A4rz.pdf\r\nContent-Transfer-Encoding: base64\r\n\r\n"+base64.StdEncoding.EncodeToString(pdf)+"\r\n"+
		"--m\r\nContent-Type: text/plain; name=\"C:\\\\Users\\\\ann\\\\notes.txt\"\r\nContent-Disposition: attachment\r\n\r\nmy notes\r\n"+
		"--m--\r\n",
		"From: a@x.y", "Message-ID: <1@x>", "Date: Mon, 02 Feb 2026 10:00:00 +0000", "Content-Type: multipart/mixed; boundary=m")
	m := mustParse(t, raw, arrival)
	want := []history.Attachment{
		{ID: AttachmentID(png), Filename: "", ContentType: "image/png", Size: int64(len(png)), Data: png},
		{ID: AttachmentID(pdf), Filename: "Rechnung März.pdf", ContentType: "application/pdf", Size: int64(len(pdf)), Data: pdf},
		{ID: AttachmentID([]byte("my notes")), Filename: "notes.txt", ContentType: "text/plain", Size: 8, Data: []byte("my notes")},
	}
	if !reflect.DeepEqual(m.Attachments, want) {
		t.Errorf("attachments:\n got %+v\nwant %+v", m.Attachments, want)
	}
	if want := map[string]string{"logo@x": AttachmentID(png)}; !reflect.DeepEqual(m.ContentIDs, want) {
		t.Errorf("ContentIDs = %v, want %v", m.ContentIDs, want)
	}
	if m.Text != "Hi" || !m.TextFromHTML || m.Direction != history.Inbound || m.ThreadID != "" || m.Seq != 0 {
		t.Errorf("text %q (from HTML %v), direction %q, thread %q, seq %d", m.Text, m.TextFromHTML, m.Direction, m.ThreadID, m.Seq)
	}
	if id := AttachmentID([]byte("abc")); id != "att_ba7816bf8f01cfea414140de5dae2223" {
		t.Errorf("AttachmentID = %q, want att_ and the first 32 hex digits of the SHA-256", id)
	}
}

func TestParseNeverLosesReadableText(t *testing.T) {
	tests := []struct {
		name, raw, text string
		problem         string // a problem that must be recorded
	}{
		{
			name:    "multipart without boundary",
			raw:     msg("just text\r\n", "From: a@x.y", "Message-ID: <1@x>", "Content-Type: multipart/mixed"),
			text:    "just text\n",
			problem: "mime: part 0: a multipart/mixed without a boundary its body holds; the body is read as text",
		},
		{
			name:    "boundary never closed",
			raw:     msg("--b\r\nContent-Type: text/plain\r\n\r\nstill here\r\n", "From: a@x.y", "Message-ID: <1@x>", "Content-Type: multipart/mixed; boundary=b"),
			text:    "still here\r\n"[:10] + "\n",
			problem: `mime: part 0: missing boundary: Boundary "b" was not closed correctly`,
		},
		{
			name:    "boundary never matches: read with the delimiters the body holds",
			raw:     msg("--other\r\n\r\nHello\r\n--other--\r\n", "From: a@x.y", "Message-ID: <1@x>", "Content-Type: multipart/mixed; boundary=b"),
			text:    "Hello",
			problem: "mime: part 0: the multipart/mixed's boundary is missing or matches none of its delimiters; it is read with the delimiter --other that its body holds",
		},
		{
			name:    "bad base64 in a text part keeps what decoded",
			raw:     msg("SGVsbG8gd29yb\r\n", "From: a@x.y", "Message-ID: <1@x>", "Content-Type: text/plain", "Content-Transfer-Encoding: base64"),
			text:    "Hello wor",
			problem: "mime: part 0: the base64 data ends with a lone character; the 9 bytes decoded before it are kept",
		},
		{
			name:    "unknown transfer encoding: the raw bytes",
			raw:     msg("plain words\r\n", "From: a@x.y", "Message-ID: <1@x>", "Content-Type: text/plain", "Content-Transfer-Encoding: x-uuencode-ish"),
			text:    "plain words\n",
			problem: `mime: part 0: unknown Content-Transfer-Encoding "x-uuencode-ish"; the content is kept as it is`,
		},
		{
			name: "broken header lines",
			raw:  "From: a@x.y\r\nMessage-ID: <1@x>\r\n: no name\r\nBad Header Line\r\nX-Ok: yes\r\n\r\nbody text\r\n",
			text: "body text\n",
		},
		{
			name: "no header at all",
			raw:  "\r\nonly a body\r\n",
			text: "only a body\n",
		},
		{
			name: "8-bit bytes in a part header",
			raw:  msg("--b\r\nContent-Type: text/plain; name=\"r\xe9sum\xe9\"\r\nContent-Disposition: inline\r\n\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nthe text\r\n--b--\r\n", "From: a@x.y", "Message-ID: <1@x>", "Content-Type: multipart/mixed; boundary=b"),
			text: "the text",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustParse(t, tt.raw, arrival)
			if err := checkUTF8(m); err != nil {
				t.Error(err)
			}
			if m.Text != tt.text {
				t.Errorf("text %q, want %q (problems: %s)", m.Text, tt.text, problems(m))
			}
			if tt.problem != "" && !strings.Contains(problems(m), tt.problem) {
				t.Errorf("problems %q, want one %q", problems(m), tt.problem)
			}
		})
	}
}

func TestParseSizeLimit(t *testing.T) {
	raw := msg(strings.Repeat("x", 100), "From: a@x.y")
	p := Parser{MaxSize: int64(len(raw))}
	if _, err := p.Parse(strings.NewReader(raw), arrival); err != nil {
		t.Errorf("a message of exactly MaxSize bytes: %v", err)
	}
	p.MaxSize--
	if _, err := p.Parse(strings.NewReader(raw), arrival); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a message one byte over MaxSize: err %v, want ErrTooLarge", err)
	}
	boom := errors.New("connection reset")
	if _, err := Parse(iotest.ErrReader(boom), arrival); !errors.Is(err, boom) {
		t.Errorf("a failing reader: err %v, want it wrapped", err)
	}
	m := mustParse(t, raw, time.Time{})
	if m.Arrived.IsZero() || time.Since(m.Arrived) > time.Minute {
		t.Errorf("zero arrival time: Arrived = %v, want now", m.Arrived)
	}
}

func TestNoReply(t *testing.T) {
	base := []string{"From: Ann <ann@example.com>", "To: support@example.com", "Message-ID: <1@x>", "Date: Mon, 02 Feb 2026 10:00:00 +0000"}
	tests := []struct {
		name    string
		headers []string
		want    NoReply
	}{
		{"plain mail", nil, NoReply{}},
		{"Auto-Submitted: no", []string{"Auto-Submitted: no"}, NoReply{}},
		{"out of office", []string{"Auto-Submitted: auto-replied (vacation)"}, NoReply{ReasonAutoSubmitted, "Auto-Submitted: auto-replied"}},
		{"generated", []string{"Auto-Submitted: auto-generated; owner-email=x@y"}, NoReply{ReasonAutoSubmitted, "Auto-Submitted: auto-generated"}},
		{"legacy autoreply", []string{"X-Autoreply: yes"}, NoReply{ReasonAutoSubmitted, "X-Autoreply: yes"}},
		{"bulk", []string{"Precedence: bulk"}, NoReply{ReasonPrecedence, "Precedence: bulk"}},
		{"list precedence", []string{"Precedence: LIST"}, NoReply{ReasonPrecedence, "Precedence: list"}},
		{"junk", []string{"Precedence: junk"}, NoReply{ReasonPrecedence, "Precedence: junk"}},
		{"first-class precedence is answered", []string{"Precedence: first-class"}, NoReply{}},
		{"mailing list", []string{"List-Id: Acme users <users.acme.example>"}, NoReply{ReasonMailingList, "List-Id: Acme users <users.acme.example>"}},
		{"report", []string{"Content-Type: multipart/report; report-type=delivery-status; boundary=b"}, NoReply{ReasonDeliveryReport, "multipart/report; report-type=delivery-status"}},
		{"null return path", []string{"Return-Path: <>"}, NoReply{ReasonNullSender, "Return-Path: <>"}},
		{"return path", []string{"Return-Path: <ann@example.com>"}, NoReply{}},
		{"mailer daemon", []string{"Sender: x@y"}, NoReply{}},
		{"null return path with white space", []string{"Return-Path: < \t>"}, NoReply{ReasonNullSender, "Return-Path: <>"}},
		{"List-Unsubscribe without List-Id", []string{"List-Unsubscribe: <mailto:leave@news.example>"}, NoReply{ReasonMailingList, "List-Unsubscribe: <mailto:leave@news.example>"}},
		{"List-Id before List-Unsubscribe", []string{"List-Unsubscribe: <mailto:leave@news.example>", "List-Id: <users.acme.example>"}, NoReply{ReasonMailingList, "List-Id: <users.acme.example>"}},
		{"Exchange inbox rule loop", []string{"X-MS-Exchange-Inbox-Rules-Loop: ann@example.com"}, NoReply{ReasonLoop, "X-MS-Exchange-Inbox-Rules-Loop: ann@example.com"}},
		{"Exchange generated message", []string{"X-MS-Exchange-Generated-Message-Source: Mailbox Rules Agent"}, NoReply{ReasonAutoSubmitted, "X-MS-Exchange-Generated-Message-Source: Mailbox Rules Agent"}},
		{"X-Loop", []string{"X-Loop: tickets@example.com"}, NoReply{ReasonLoop, "X-Loop: tickets@example.com"}},
		{"precedence before loop", []string{"X-Loop: tickets@example.com", "Precedence: bulk"}, NoReply{ReasonPrecedence, "Precedence: bulk"}},
	}
	for _, tt := range tests {
		m := mustParse(t, msg("hi\r\n", append(append([]string{}, base...), tt.headers...)...), arrival)
		if m.NoReply != tt.want {
			t.Errorf("%s: NoReply = %+v, want %+v", tt.name, m.NoReply, tt.want)
		}
	}
	m := mustParse(t, msg("hi", "From: MAILER-DAEMON@mx.example.com", "Message-ID: <1@x>"), arrival)
	if m.NoReply != (NoReply{ReasonMailerDaemon, "MAILER-DAEMON@mx.example.com"}) {
		t.Errorf("MAILER-DAEMON: %+v", m.NoReply)
	}
	m = mustParse(t, msg("hi", "From: PostMaster@mx.example.com", "Message-ID: <1@x>", "Content-Type: text/plain"), arrival)
	if m.NoReply != (NoReply{ReasonMailerDaemon, "PostMaster@mx.example.com"}) {
		t.Errorf("postmaster: %+v", m.NoReply)
	}
	m = mustParse(t, msg("hi", "To: support@example.com", "Message-ID: <1@x>"), arrival)
	if m.NoReply != (NoReply{ReasonNullSender, "no From address"}) {
		t.Errorf("no From: %+v", m.NoReply)
	}
	// The first rule wins, in the documented order.
	m = mustParse(t, msg("hi", "From: MAILER-DAEMON@mx.example.com", "Message-ID: <1@x>", "Auto-Submitted: auto-replied", "Precedence: bulk"), arrival)
	if m.NoReply.Reason != ReasonMailerDaemon {
		t.Errorf("several rules: %+v, want mailer-daemon", m.NoReply)
	}
	for _, n := range []NoReply{{}, {ReasonPrecedence, "Precedence: bulk"}, {ReasonOwnAddress, ""}} {
		if got := ParseNoReply(n.String()); got != n {
			t.Errorf("ParseNoReply(%q) = %+v, want %+v", n.String(), got, n)
		}
	}
}
