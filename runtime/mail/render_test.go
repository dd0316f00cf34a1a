package mail

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	netmail "net/mail"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/history"
)

var renderDate = time.Date(2026, 2, 2, 10, 5, 0, 0, time.UTC)

// renderBase returns a reply as NewReply makes it, for the tests to vary.
func renderBase() *history.Message {
	return &history.Message{
		MessageID:  "0123456789abcdef0123456789abcdef@acme.example",
		Direction:  history.Outbound,
		From:       "Acme Support <support@acme.example>",
		To:         []string{"Jürgen <j@cust.example>"},
		Subject:    "Re: Order 42",
		Date:       renderDate,
		InReplyTo:  "q2@cust.example",
		References: []string{"q1@cust.example", "q2@cust.example"},
		Text:       "It ships today.\n",
	}
}

// TestRenderReadsBack renders replies holding what was once written wrong, and hostile or
// awkward values, and reads each back with Parse and with Python's email package: every value
// reads back exactly and no line is longer than 998 octets.
func TestRenderReadsBack(t *testing.T) {
	long := func(s string, n int) string { return strings.Repeat(s, n) }
	attach := func(name, ctype string, data []byte) func(*history.Message) {
		return func(m *history.Message) {
			m.Attachments = append(m.Attachments, history.Attachment{Filename: name, ContentType: ctype, Data: data})
		}
	}
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	var manyTo []string
	for i := range 40 {
		manyTo = append(manyTo, fmt.Sprintf("Customer Number %d <c%d@cust.example>", i, i))
	}
	var manyRefs []string
	for i := range 100 {
		manyRefs = append(manyRefs, fmt.Sprintf("%032x@mail.cust.example", i))
	}
	var names []string
	var msgs []*history.Message
	var raws [][]byte
	for _, tc := range []struct {
		name string
		edit func(*history.Message)
	}{
		// Body lines over 998 octets were sent as 7bit.
		{"a body line of 2000 octets is not sent as 7bit", func(m *history.Message) { m.Text = long("a", 2000) }},
		{"a body line of 2000 octets with spaces", func(m *history.Message) { m.Text = long("word ", 400) + "\nend\n" }},
		{"an HTML line of 3000 octets", func(m *history.Message) { m.HTML = "<p>" + long("x", 3000) + "</p>" }},
		{"a long line in a multipart text part", func(m *history.Message) { m.Text = long("b", 1500); attach("a.txt", "text/plain", []byte("x"))(m) }},
		{"lines ending in white space keep it", func(m *history.Message) { m.Text = "a  \nb\t\nc \n" }},
		{"every kind of line break reads back as one", func(m *history.Message) { m.Text = "a\r\nb\rc\nd\r\n" }},
		{"control characters in the body", func(m *history.Message) { m.Text = "a\x00b\x1b[0m\x0c\x7f\n" }},
		{"an equals sign and a boundary-like line in the body", func(m *history.Message) {
			m.Text = "x=1\n--=_mixed_0123\n=_\n--\n"
			attach("a.bin", "", []byte("x"))(m)
		}},
		{"mostly non-ASCII text", func(m *history.Message) { m.Text = long("Привет, как дела? ", 30) + "\n" }},
		{"a text-only body without a final line break", func(m *history.Message) { m.Text = "ok" }},
		{"a text-only body with a long last line and no final line break", func(m *history.Message) { m.Text = long("z", 200) }},
		{"an empty body", func(m *history.Message) { m.Text = "" }},
		{"HTML and no text", func(m *history.Message) { m.Text, m.HTML = "", "<p>Hallo</p>" }},
		// A subject holding a literal encoded word was sent raw and decoded by the receiver.
		{"a subject that is a literal encoded word", func(m *history.Message) { m.Subject = "=?utf-8?Q?x?=" }},
		{"a subject holding a literal encoded word among words", func(m *history.Message) { m.Subject = "Re: =?utf-8?q?hi?= there" }},
		{"a subject holding =? alone", func(m *history.Message) { m.Subject = "a =? b ?= c" }},
		{"a non-ASCII subject", func(m *history.Message) { m.Subject = "Re: Grüße aus Köln – 東京" }},
		{"a long non-ASCII subject folds", func(m *history.Message) { m.Subject = long("Größe ", 120) + "Ende" }},
		{"a long ASCII subject folds", func(m *history.Message) { m.Subject = long("order ", 200) + "end" }},
		{"a subject word of 1200 octets", func(m *history.Message) { m.Subject = long("x", 1200) }},
		{"a subject with leading and trailing spaces", func(m *history.Message) { m.Subject = "  Re: spaced  " }},
		{"a subject with repeated inner spaces", func(m *history.Message) { m.Subject = "a   b" }},
		{"an empty subject", func(m *history.Message) { m.Subject = "" }},
		{"a subject of specials", func(m *history.Message) { m.Subject = `"quoted" (comment) <x> a;b, c\d` }},
		// Display names.
		{"a display name that is a literal encoded word", func(m *history.Message) { m.From = `"=?utf-8?q?x?=" <support@acme.example>` }},
		{"a display name with quotes and a backslash", func(m *history.Message) { m.From = `"Acme \"Support\" \\ Team" <support@acme.example>` }},
		{"a display name with specials", func(m *history.Message) { m.To = []string{`"Smith, John (Sales)" <j@cust.example>`} }},
		{"a long non-ASCII display name", func(m *history.Message) { m.To = []string{long("Jürgen ", 40) + "<j@cust.example>"} }},
		{"a display name word of 1100 octets", func(m *history.Message) { m.To = []string{long("n", 1100) + " <j@cust.example>"} }},
		{"a display name with leading and trailing spaces", func(m *history.Message) { m.To = []string{`"  Ann  " <a@cust.example>`} }},
		{"forty recipients fold", func(m *history.Message) { m.To, m.Cc = manyTo, []string{"boss@cust.example"} }},
		{"a quoted local part", func(m *history.Message) { m.To = []string{`"j smith"@cust.example`} }},
		// msg-ids.
		{"a hundred references fold", func(m *history.Message) { m.References = manyRefs }},
		{"a domain-literal id", func(m *history.Message) { m.InReplyTo, m.References = "q2@[192.0.2.1]", []string{"q2@[192.0.2.1]"} }},
		{"an id of 250 bytes", func(m *history.Message) { m.InReplyTo = long("i", 240) + "@cust.exam" }},
		// Attachment names with " did not read back.
		{`a file name with "`, attach(`say "hi".txt`, "text/plain", []byte("hi\n"))},
		{`a file name with \`, attach(`a\b.txt`, "text/plain", []byte("x"))},
		{"a file name with ;", attach("a;b.txt", "application/octet-stream", []byte("x"))},
		{"a non-ASCII file name", attach("Größe – Übersicht.pdf", "application/pdf", []byte("%PDF"))},
		{"a 300-character file name", attach(long("n", 296)+".txt", "text/plain", []byte("x"))},
		{"a long non-ASCII file name", attach(long("Ü", 150)+".txt", "text/plain", []byte("x"))},
		{"a file name with spaces, % and '", attach("100% it's my invoice.pdf", "application/pdf", []byte("x"))},
		{"a file name with =? that is no encoded word", attach("a=?b.txt", "", []byte("x"))},
		{"a file name with repeated spaces", attach("a  b.txt", "", []byte("x"))},
		{"an attachment without a name", attach("", "application/octet-stream", []byte("x"))},
		{"an empty attachment", attach("empty.bin", "", nil)},
		{"a text attachment with long lines and bare line breaks keeps its bytes", attach("log.txt", "text/plain", []byte(long("y", 3000)+"\na\rb\r\n"))},
		{"a binary attachment keeps its bytes", attach("all.bin", "application/octet-stream", allBytes)},
		{"a content type with parameters", attach("l1.csv", "text/csv; charset=iso-8859-1; header=present", []byte("Gr\xf6\xdfe;1\n"))},
		{"an HTML body and two attachments", func(m *history.Message) {
			m.HTML = "<p>Hallo Jürgen</p>"
			attach("a.txt", "text/plain", []byte("a"))(m)
			attach("b.png", "image/png", []byte("\x89PNG"))(m)
		}},
	} {
		m := renderBase()
		tc.edit(m)
		raw, err := Render(m)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		names, msgs, raws = append(names, tc.name), append(msgs, m), append(raws, raw)
	}
	pys := pythonRead(t, raws) // one Python process reads them all
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			for _, p := range readBackProblems(msgs[i], raws[i], pys[i]) {
				t.Error(p)
			}
			if t.Failed() {
				t.Logf("rendered:\n%s", clip(string(raws[i])))
			}
		})
	}
}

// TestRenderRefuses pins Render's error for each value it refuses to write, rather than write
// it changed or broken.
func TestRenderRefuses(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef@acme.example"
	for _, tc := range []struct {
		name string
		edit func(*history.Message)
		want string
	}{
		{"no Message-ID", func(m *history.Message) { m.MessageID = "" },
			`mail: render: Message-ID "" is empty`},
		{"a Message-ID without @", func(m *history.Message) { m.MessageID = "not-an-id" },
			`mail: render: Message-ID "not-an-id" has no "@"`},
		{"a Message-ID in angle brackets", func(m *history.Message) { m.MessageID = "<a@x>" },
			"mail: render: Message-ID \"<a@x>\" the part before the @, \"<a\", is not a dot-atom (ASCII letters, digits and !#$%&'*+-/=?^_`{|}~, dots between them)"},
		{"a Message-ID with a space", func(m *history.Message) { m.MessageID = "a b@x" },
			"mail: render: Message-ID \"a b@x\" the part before the @, \"a b\", is not a dot-atom (ASCII letters, digits and !#$%&'*+-/=?^_`{|}~, dots between them)"},
		{"a Message-ID with a CR LF", func(m *history.Message) { m.MessageID = "a@x\r\nBcc: evil@x" },
			`mail: render: Message-ID "a@x\r\nBcc: evil@x" the part after the @, "x\r\nBcc: evil@x", is not a dot-atom or a [literal]`},
		{"a non-ASCII Message-ID", func(m *history.Message) { m.MessageID = "ä@x" },
			"mail: render: Message-ID \"ä@x\" the part before the @, \"ä\", is not a dot-atom (ASCII letters, digits and !#$%&'*+-/=?^_`{|}~, dots between them)"},
		{"a Message-ID with two dots in a row", func(m *history.Message) { m.MessageID = "a..b@x" },
			"mail: render: Message-ID \"a..b@x\" the part before the @, \"a..b\", is not a dot-atom (ASCII letters, digits and !#$%&'*+-/=?^_`{|}~, dots between them)"},
		{"a Message-ID with two @", func(m *history.Message) { m.MessageID = "a@b@c" },
			`mail: render: Message-ID "a@b@c" the part after the @, "b@c", is not a dot-atom or a [literal]`},
		{"a Message-ID with an unclosed literal", func(m *history.Message) { m.MessageID = "a@[1.2.3.4" },
			`mail: render: Message-ID "a@[1.2.3.4" the part after the @, "[1.2.3.4", is not a [literal] of printable ASCII without [, ] and \`},
		{"a Message-ID of 251 bytes", func(m *history.Message) { m.MessageID = strings.Repeat("i", 245) + "@x.com" },
			fmt.Sprintf("mail: render: Message-ID %q is 251 bytes long, more than 250", strings.Repeat("i", 245)+"@x.com")},
		{"an In-Reply-To that is no msg-id", func(m *history.Message) { m.InReplyTo = "=?utf-8?q?x?=" },
			`mail: render ` + id + `: In-Reply-To "=?utf-8?q?x?=" has no "@"`},
		{"a References entry that is no msg-id", func(m *history.Message) { m.References = []string{"q1@x", "a b@x"} },
			"mail: render " + id + ": References[1] \"a b@x\" the part before the @, \"a b\", is not a dot-atom (ASCII letters, digits and !#$%&'*+-/=?^_`{|}~, dots between them)"},
		{"no Date", func(m *history.Message) { m.Date = time.Time{} },
			"mail: render " + id + ": no Date"},
		{"no From", func(m *history.Message) { m.From = "" },
			`mail: render ` + id + `: From "": mail: no address`},
		{"two From", func(m *history.Message) { m.From = "a@x, c@x" },
			`mail: render ` + id + `: From "a@x, c@x": mail: expected single address, got ", c@x"`},
		{"no recipient", func(m *history.Message) { m.To = nil },
			"mail: render " + id + ": no To or Cc recipient"},
		{"a To entry that does not parse", func(m *history.Message) { m.To = []string{"b@x", "<<nope"} },
			`mail: render ` + id + `: To "<<nope": mail: invalid string`},
		{"a To address of 255 bytes", func(m *history.Message) { m.To = []string{strings.Repeat("a", 250) + "@x.de"} },
			fmt.Sprintf(`mail: render %s: To %q: address is 255 bytes long, more than 254`, id, strings.Repeat("a", 250)+"@x.de")},
		// A host-built subject with CR/LF ended up inside an encoded word.
		{"a subject with CR LF", func(m *history.Message) { m.Subject = "Order 42\r\nBcc: evil@x" },
			`mail: render ` + id + `: Subject "Order 42\r\nBcc: evil@x" holds the control character U+000D at byte 8; a header value is one line of text`},
		{"a subject with a tab", func(m *history.Message) { m.Subject = "a\tb" },
			`mail: render ` + id + `: Subject "a\tb" holds the control character U+0009 at byte 1; a header value is one line of text`},
		{"a subject with a C1 control", func(m *history.Message) { m.Subject = "a\u0085b" },
			`mail: render ` + id + `: Subject "a\u0085b" holds the control character U+0085 at byte 1; a header value is one line of text`},
		{"a subject that is not UTF-8", func(m *history.Message) { m.Subject = "Gr\xf6\xdfe" },
			`mail: render ` + id + `: Subject "Gr\xf6\xdfe" is not valid UTF-8`},
		{"a display name with a line break", func(m *history.Message) { m.From = "=?utf-8?q?Acme=0ASupport?= <support@acme.example>" },
			`mail: render ` + id + `: From "=?utf-8?q?Acme=0ASupport?= <support@acme.example>": display name holds the control character U+000A at byte 4; a header value is one line of text`},
		{"a display name with a quoted line break", func(m *history.Message) { m.To = []string{"\"Ann\r\nBcc: evil@x\" <a@x>"} },
			`mail: render ` + id + `: To "\"Ann\r\nBcc: evil@x\" <a@x>": mail: missing word in phrase: mail: bad character in quoted-string: '\r'`},
		{"a file name with a line break", func(m *history.Message) {
			m.Attachments = []history.Attachment{{Filename: "a\r\nb.txt", Data: []byte("x")}}
		}, `mail: render ` + id + `: attachment 1: file name "a\r\nb.txt" holds the control character U+000D at byte 1; a header value is one line of text`},
		{"a file name holding an encoded word", func(m *history.Message) {
			m.Attachments = []history.Attachment{{Filename: "=?utf-8?q?x?=.txt", Data: []byte("x")}}
		}, `mail: render ` + id + `: attachment 1: file name "=?utf-8?q?x?=.txt" holds an RFC 2047 encoded word, which receivers decode (Parse among them); rename the file`},
		{"a content type with a line break", func(m *history.Message) {
			m.Attachments = []history.Attachment{{Filename: "a.txt", ContentType: "text/plain\r\nBcc: evil@x", Data: []byte("x")}}
		}, `mail: render ` + id + `: attachment 1: content type "text/plain\r\nBcc: evil@x": mime: unexpected content after media subtype`},
		{"a multipart content type", func(m *history.Message) {
			m.Attachments = []history.Attachment{{Filename: "a", ContentType: "multipart/mixed; boundary=x", Data: []byte("x")}}
		}, `mail: render ` + id + `: attachment 1: content type multipart/mixed cannot hold an attachment's bytes; send it as application/octet-stream`},
		{"a message content type", func(m *history.Message) {
			m.Attachments = []history.Attachment{{Filename: "fwd.eml", ContentType: "message/rfc822", Data: []byte("x")}}
		}, `mail: render ` + id + `: attachment 1: content type message/rfc822 cannot hold an attachment's bytes; send it as application/octet-stream`},
		{"a text that is not UTF-8", func(m *history.Message) { m.Text = "\xff" },
			`mail: render ` + id + `: Text is not valid UTF-8`},
		{"an HTML body that is not UTF-8", func(m *history.Message) { m.HTML = "\xff" },
			`mail: render ` + id + `: HTML is not valid UTF-8`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := renderBase()
			tc.edit(m)
			raw, err := Render(m)
			if err == nil || err.Error() != tc.want {
				t.Errorf("Render:\n got %v\nwant %s", err, tc.want)
			}
			if raw != nil {
				t.Errorf("Render returned %d bytes with its error", len(raw))
			}
		})
	}
}

// TestNewReplyCleansWhatItTakes pins what NewReply does with each host or sender value that
// could not be written as it is: folded or dropped when it comes from the message answered (a
// hostile sender must not make the reply impossible), refused when it is the persona's own
// configuration. Every reply it returns renders and reads back exactly.
func TestNewReplyCleansWhatItTakes(t *testing.T) {
	answered := func() *history.Message {
		return &history.Message{
			ThreadID:   "support/t1",
			MessageID:  "q2@cust.example",
			References: []string{"q1@cust.example"},
			From:       "Jürgen <j@cust.example>",
			Subject:    "Order 42",
		}
	}
	type want struct {
		subject, inReplyTo string
		refs, to           []string
		from, messageID    string
	}
	base := want{subject: "Re: Order 42", inReplyTo: "q2@cust.example", refs: []string{"q1@cust.example", "q2@cust.example"},
		to: []string{"Jürgen <j@cust.example>"}, from: "Acme Support <support@acme.example>"}
	// The replies made, read back with Python together after the table.
	var names []string
	var msgs []*history.Message
	var raws [][]byte
	for _, tc := range []struct {
		name    string
		persona [2]string // display name, address; zero: supportPersona
		edit    func(*history.Message)
		want    func(*want)
		err     string
	}{
		{name: "a subject with CR LF is folded to spaces",
			edit: func(m *history.Message) { m.Subject = "Order 42\r\nBcc: evil@x" },
			want: func(w *want) { w.subject = "Re: Order 42  Bcc: evil@x" }},
		{name: "a subject with NUL, tab and escape is folded to spaces",
			edit: func(m *history.Message) { m.Subject = "\tOrder\x00 42\x1b" },
			want: func(w *want) { w.subject = "Re: Order  42" }},
		{name: "a subject that is not UTF-8 keeps what is",
			edit: func(m *history.Message) { m.Subject = "Gr\xf6\xdfe" },
			want: func(w *want) { w.subject = "Re: Gr\uFFFDe" }},
		{name: "a subject holding a literal encoded word is kept",
			edit: func(m *history.Message) { m.Subject = "=?utf-8?q?x?=" },
			want: func(w *want) { w.subject = "Re: =?utf-8?q?x?=" }},
		{name: "an answered Message-ID that is no msg-id is left out of In-Reply-To and References",
			edit: func(m *history.Message) { m.MessageID = "=?utf-8?q?=E4?=" },
			want: func(w *want) { w.inReplyTo, w.refs = "", []string{"q1@cust.example"} }},
		{name: "an answered non-ASCII Message-ID is left out",
			edit: func(m *history.Message) { m.MessageID = "ä@cust.example" },
			want: func(w *want) { w.inReplyTo, w.refs = "", []string{"q1@cust.example"} }},
		{name: "References that are no msg-ids are left out",
			edit: func(m *history.Message) {
				m.References = []string{"bad", "q1@cust.example", "a\"b@x", "[x]@y", "q1@cust.example", "ok@[10.0.0.1]"}
			},
			want: func(w *want) { w.refs = []string{"q1@cust.example", "ok@[10.0.0.1]", "q2@cust.example"} }},
		{name: "a recipient name with control characters is folded",
			edit: func(m *history.Message) {
				m.From, m.ReplyTo = "x@cust.example", []string{"\"Ann\x00\x1bSmith\" <ann@cust.example>"}
			},
			want: func(w *want) { w.to = []string{`"Ann  Smith" <ann@cust.example>`} }},
		{name: "a recipient address too long to send is left out",
			edit: func(m *history.Message) {
				m.ReplyTo = []string{strings.Repeat("a", 250) + "@cust.example", "Ann <ann@cust.example>"}
			},
			want: func(w *want) { w.to = []string{"Ann <ann@cust.example>"} }},
		{name: "no recipient that can be written",
			edit: func(m *history.Message) { m.From = strings.Repeat("a", 250) + "@cust.example" },
			err:  "mail: nothing to reply to: message q2@cust.example has no Reply-To or From address that can be written"},
		{name: "a recipient whose name is a literal encoded word keeps it",
			edit: func(m *history.Message) { m.From = `"=?utf-8?q?x?=" <j@cust.example>` },
			want: func(w *want) { w.to = []string{`"=?utf-8?q?x?=" <j@cust.example>`} }},
		{name: "a persona name with a line break is refused",
			persona: [2]string{"Acme\r\nBcc: evil@x", "support@acme.example"},
			err:     `mail: reply: persona support: mailbox "Acme\r\nBcc: evil@x <support@acme.example>": display name holds the control character U+000D at byte 4; a header value is one line of text`},
		{name: "a persona address with a display name is refused",
			persona: [2]string{"Acme", "Acme <support@acme.example>"},
			err:     `mail: reply: persona support: mailbox address "Acme <support@acme.example>" is not a plain address (local@domain)`},
		{name: "a persona on an internationalised domain sends an ASCII Message-ID",
			persona: [2]string{"Bücher", "info@bücher.example"},
			want: func(w *want) {
				w.from = "Bücher <info@bücher.example>"
				w.messageID = ReplyMessageID("run-1", "info@bücher.example")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := supportPersona
			if tc.persona != [2]string{} {
				p = newPersona("support", tc.persona[0], tc.persona[1])
			}
			in := answered()
			if tc.edit != nil {
				tc.edit(in)
			}
			out, err := NewReply(p, in, "run-1", "It ships today.", renderDate)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("NewReply:\n got %v\nwant %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			w := base
			w.messageID = ReplyMessageID("run-1", "support@acme.example")
			if tc.want != nil {
				tc.want(&w)
			}
			got := want{subject: out.Subject, inReplyTo: out.InReplyTo, refs: out.References, to: out.To, from: out.From, messageID: out.MessageID}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", w) {
				t.Errorf("NewReply:\n got %q\nwant %q", got, w)
			}
			raw, err := Render(out)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			names, msgs, raws = append(names, tc.name), append(msgs, out), append(raws, raw)
		})
	}
	pys := pythonRead(t, raws)
	for i, name := range names {
		for _, p := range readBackProblems(msgs[i], raws[i], pys[i]) {
			t.Errorf("%s: %s", name, p)
		}
	}
	if id := ReplyMessageID("run-1", "info@bücher.example"); !strings.HasSuffix(id, "@xn--bcher-kva.example") {
		t.Errorf("ReplyMessageID on an internationalised domain: %q", id)
	}
	if id := ReplyMessageID("run-1", "info@[192.0.2.1]"); !strings.HasSuffix(id, "@[192.0.2.1]") {
		t.Errorf("ReplyMessageID on a domain literal: %q", id)
	}
	if id := ReplyMessageID("run-1", "info@a b"); !strings.HasSuffix(id, "@personagen.invalid") {
		t.Errorf("ReplyMessageID on a domain that is no msg-id domain: %q", id)
	}
}

// renderSeeds are FuzzRender's seeds: a subject, a display name, a body and an attachment's
// name and bytes.
var renderSeeds = []struct {
	subject, name, text, filename string
	data                          []byte
}{
	{"Re: Order 42", "Acme Support", "It ships today.\n", "invoice.pdf", []byte("%PDF")},
	{"=?utf-8?Q?x?=", "=?utf-8?q?x?=", "=?utf-8?q?x?=", "=?x.txt", nil},
	{"  lead and trail  ", `"Smith, J." \ x`, "a  \nb\t\r\nc\rd", `say "hi";\x.txt`, []byte("a\nb\r")},
	{strings.Repeat("Größe ", 100), strings.Repeat("Jürgen ", 30), strings.Repeat("ü", 3000), strings.Repeat("Ü", 200), []byte{0, 1, 2, 255}},
	{strings.Repeat("x", 1500), strings.Repeat("n", 1100), strings.Repeat("a", 2000), strings.Repeat("f", 1000), nil},
	{"Order\r\nBcc: evil@x", "Ann\nSmith", "\x00\x1b\x7f", "a\r\nb", []byte("x")},
	{"東京 – \u00a0nbsp\u2028sep\ufeff", "\u00a0Ann\u3000", "\u2028\u2029\n", " spaced name.txt ", []byte("\r\n")},
	{"Gr\xf6\xdfe", "\xff", "\xfe", "\xfd", nil},
	{"", "", "", "", nil},
	{"a =? b ?= c", "=?", "--=_mixed_x\n=_", "a=?b=?c", []byte("=_")},
}

// renderCase builds the reply FuzzRender renders from its inputs: the base reply from a
// persona named name, with the subject, the text as its body (and as HTML, escaped, when it is
// long enough), and an attachment named filename holding data.
func renderCase(subject, name, text, filename string, data []byte) *history.Message {
	m := renderBase()
	m.Subject, m.Text = subject, text
	if len(text)%3 == 0 && text != "" {
		m.HTML = "<p>" + strings.NewReplacer("&", "&amp;", "<", "&lt;").Replace(text) + "</p>"
	}
	// One B-encoded word carries any name to Render unchanged (net/mail's Address.String
	// leaves a backslash in a Q-encoded word, which net/mail cannot read back).
	m.From = "<support@acme.example>"
	if name != "" {
		m.From = "=?utf-8?b?" + base64.StdEncoding.EncodeToString([]byte(name)) + "?= " + m.From
	}
	m.Attachments = []history.Attachment{{Filename: filename, ContentType: "application/octet-stream", Data: data}}
	return m
}

// renderRefusal says why Render must refuse the reply FuzzRender built, independently of
// Render's own checks; "" when it must render it.
func renderRefusal(subject, name, text, filename string) string {
	control := func(s string) bool {
		return !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 })
	}
	switch {
	case control(subject):
		return "subject"
	case control(name):
		return "name"
	case control(filename) || encodedWord.MatchString(filename):
		return "file name"
	case !utf8.ValidString(text):
		return "text"
	}
	return ""
}

// renderFuzzCases returns the messages FuzzRender checks for one input: the reply renderCase
// builds when Render must not refuse it, else the same reply with what Render refuses folded
// away (control characters turned into spaces, bytes that are not UTF-8 into U+FFFD, a file
// name holding an encoded word left out); and the reply NewReply makes in answer to a message
// with the subject and the sender's display name (NewReply folds what Render refuses).
func renderFuzzCases(t *testing.T, subject, name, text, filename string, data []byte) []*history.Message {
	var out []*history.Message
	m := renderCase(subject, name, text, filename, data)
	_, err := Render(m)
	switch why := renderRefusal(subject, name, text, filename); {
	case why == "" && err != nil:
		t.Fatalf("Render refused a reply it can write: %v", err)
	case why != "" && err == nil:
		t.Fatalf("Render wrote a reply whose %s it must refuse", why)
	case why == "":
		out = append(out, m)
	default:
		fname := foldText(filename)
		if encodedWord.MatchString(fname) {
			fname = ""
		}
		out = append(out, renderCase(foldText(subject), foldText(name), strings.ToValidUTF8(text, "\uFFFD"), fname, data))
	}
	answered := &history.Message{MessageID: "q@cust.example", Subject: subject,
		From: formatAddress(netmail.Address{Name: name, Address: "j@cust.example"})}
	reply, err := NewReply(supportPersona, answered, "run", text, renderDate)
	if err != nil {
		t.Fatalf("NewReply: %v", err)
	}
	if renderRefusal("", "", "", filename) == "" {
		reply.Attachments = []history.Attachment{{Filename: filename, Data: data}}
	}
	return append(out, reply)
}

// FuzzRender renders replies with any subject, display name, body and attachment name: Render
// either refuses what it must (a control character or bytes that are not UTF-8 in a header
// value, an encoded word in a file name) or writes a message with no line over 998 octets that
// Parse reads back exactly; and NewReply's reply to a message with that subject and sender name
// always renders and reads back exactly. Python's reading of the seeds (and of a corpus the
// fuzzer found) is checked by TestFuzzRenderSeedsReadBackInPython; run it with
//
//	go test ./runtime/mail -run '^$' -fuzz FuzzRender -fuzztime 5m
func FuzzRender(f *testing.F) {
	for _, s := range renderSeeds {
		f.Add(s.subject, s.name, s.text, s.filename, s.data)
	}
	f.Fuzz(func(t *testing.T, subject, name, text, filename string, data []byte) {
		for _, m := range renderFuzzCases(t, subject, name, text, filename, data) {
			raw, err := Render(m)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			again, _ := Render(m)
			if !bytes.Equal(raw, again) {
				t.Fatal("Render is not deterministic")
			}
			for _, p := range readBackProblems(m, raw, nil) {
				t.Error(p)
			}
		}
	})
}

// TestFuzzRenderSeedsReadBackInPython reads FuzzRender's seeds (renderSeeds and the regression
// inputs in testdata/fuzz/FuzzRender) back with Python's email package too. With
// PERSONAGEN_RENDER_CORPUS set to a directory of fuzz corpus files (go test -fuzz keeps what it
// found in $(go env GOCACHE)/fuzz/github.com/personagen/personagen/runtime/mail/FuzzRender), it
// reads those too.
func TestFuzzRenderSeedsReadBackInPython(t *testing.T) {
	type input struct {
		subject, name, text, filename string
		data                          []byte
	}
	var inputs []input
	for _, s := range renderSeeds {
		inputs = append(inputs, input{s.subject, s.name, s.text, s.filename, s.data})
	}
	files, _ := filepath.Glob("testdata/fuzz/FuzzRender/*")
	if dir := os.Getenv("PERSONAGEN_RENDER_CORPUS"); dir != "" {
		found, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil || len(found) == 0 {
			t.Fatalf("PERSONAGEN_RENDER_CORPUS=%s: no corpus files (%v)", dir, err)
		}
		t.Logf("%d corpus inputs from %s", len(found), dir)
		files = append(files, found...)
	}
	for _, path := range files {
		v, err := readCorpusFile(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		inputs = append(inputs, input{v[0].(string), v[1].(string), v[2].(string), v[3].(string), v[4].([]byte)})
	}
	var msgs []*history.Message
	var raws [][]byte
	for _, in := range inputs {
		for _, m := range renderFuzzCases(t, in.subject, in.name, in.text, in.filename, in.data) {
			raw, err := Render(m)
			if err != nil {
				t.Fatal(err)
			}
			msgs, raws = append(msgs, m), append(raws, raw)
		}
	}
	pys := pythonRead(t, raws)
	if pys[0] == nil {
		t.Skip("FuzzRender runs the Parse half")
	}
	failed := 0
	for i, m := range msgs {
		if probs := readBackProblems(m, raws[i], pys[i]); len(probs) > 0 {
			failed++
			t.Errorf("subject %q, From %q, file name %q:\n  %s", clip(m.Subject), clip(m.From), clip(fileName(m)), strings.Join(probs, "\n  "))
		}
	}
	t.Logf("%d renderings read back by Parse and Python, %d differ", len(msgs), failed)
}

func fileName(m *history.Message) string {
	if len(m.Attachments) == 0 {
		return ""
	}
	return m.Attachments[0].Filename
}

// readCorpusFile reads a "go test fuzz v1" corpus file of FuzzRender's inputs: four strings
// and a []byte.
func readCorpusFile(path string) ([]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	if !sc.Scan() || sc.Text() != "go test fuzz v1" {
		return nil, errors.New("not a go test fuzz v1 file")
	}
	var vals []any
	for sc.Scan() {
		line := sc.Text()
		kind, lit, ok := strings.Cut(line, "(")
		if !ok || !strings.HasSuffix(lit, ")") {
			return nil, fmt.Errorf("line %q", line)
		}
		s, err := strconv.Unquote(strings.TrimSuffix(lit, ")"))
		if err != nil {
			return nil, fmt.Errorf("line %q: %v", line, err)
		}
		switch kind {
		case "string":
			vals = append(vals, s)
		case "[]byte":
			vals = append(vals, []byte(s))
		default:
			return nil, fmt.Errorf("line %q: type %s", line, kind)
		}
	}
	if len(vals) != 5 {
		return nil, fmt.Errorf("%d values, want 5", len(vals))
	}
	return vals, sc.Err()
}
