package runtime

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/history"
)

// turnText renders a stored message as the self-describing text of its replayed turn, and
// reports whether it has content (a body or attachments); a message without content renders
// as ("", false). The text is blocks separated by one blank line:
//
//	From: Ada <ada@example.com>
//	To: support@acme.test, billing@acme.test
//	Cc:
//	Date: Mon, 02 Jan 2006 15:04:05 +0000
//	Subject: Invoice
//
//	<body>
//
//	[attachment: report.pdf (application/pdf, 1234 bytes, id att-1)]
//
// The five header lines are always present, in this order, "Name: value" or "Name:" when the
// value is empty; To and Cc join their addresses with ", "; Date is FormatDate(m.Date) (UTC).
// Line breaks inside header values, and inside attachment fields, become spaces, so a value
// can never forge a header line. The body is Text with surrounding white space trimmed, or,
// when that is blank, HTMLText(HTML); it is omitted when blank. Each attachment adds one
// attachment note (metadata only), in the message's order.
func turnText(m *history.Message) (string, bool) {
	var b strings.Builder
	b.Grow(turnTextSize(m))
	if !writeTurnText(&b, m) {
		return "", false
	}
	s := b.String()
	return s[:len(s)-1], true // without the last block's line break
}

// turnTextSize returns an upper bound of the bytes writeTurnText writes for m when its body is
// its plain text, and a guess when the body comes from its HTML: a hint to size buffers by.
func turnTextSize(m *history.Message) int {
	n := len("From: \nTo: \nCc: \nDate: Mon, 02 Jan 2006 15:04:05 +0000\nSubject: \n\n\n") + len(m.From) + len(m.Subject) + len(m.Text)
	if len(m.Text) < 64 {
		n += len(m.HTML)
	}
	for _, a := range m.To {
		n += len(a) + 2
	}
	for _, a := range m.Cc {
		n += len(a) + 2
	}
	for _, a := range m.Attachments {
		n += len(a.Filename) + len(a.ContentType) + len(a.ID) + 64
	}
	return n
}

// writeTurnText writes turnText's text of m to b followed by a line break, or nothing when m
// has no content; it reports whether it wrote.
func writeTurnText(b *strings.Builder, m *history.Message) bool {
	body := strings.TrimSpace(m.Text)
	if body == "" && m.HTML != "" {
		body = HTMLText(m.HTML)
	}
	if body == "" && len(m.Attachments) == 0 {
		return false
	}
	var dateBuf [64]byte
	writeHeader(b, "From", oneLine(m.From))
	writeListHeader(b, "To", m.To)
	writeListHeader(b, "Cc", m.Cc)
	b.WriteString("Date: ")
	b.Write(m.Date.UTC().AppendFormat(dateBuf[:0], dateLayout))
	b.WriteByte('\n')
	writeHeader(b, "Subject", oneLine(m.Subject))
	if body != "" {
		b.WriteByte('\n')
		b.WriteString(body)
		b.WriteByte('\n')
	}
	if len(m.Attachments) > 0 {
		b.WriteByte('\n')
		var size [20]byte
		for _, a := range m.Attachments {
			b.WriteString("[attachment: ")
			b.WriteString(oneLine(a.Filename))
			b.WriteString(" (")
			b.WriteString(oneLine(a.ContentType))
			b.WriteString(", ")
			b.Write(strconv.AppendInt(size[:0], a.Size, 10))
			b.WriteString(" bytes, id ")
			b.WriteString(oneLine(a.ID))
			b.WriteString(")]\n")
		}
	}
	return true
}

// writeHeader writes "Name: value\n", or "Name:\n" for an empty value; value is one line.
func writeHeader(b *strings.Builder, name, value string) {
	b.WriteString(name)
	b.WriteByte(':')
	if value != "" {
		b.WriteByte(' ')
		b.WriteString(value)
	}
	b.WriteByte('\n')
}

// writeListHeader writes the header of the values joined with ", ", made one line. Values that
// are one trimmed line already are written one by one, without joining them first.
func writeListHeader(b *strings.Builder, name string, values []string) {
	switch {
	case len(values) == 1:
		writeHeader(b, name, oneLine(values[0]))
	case plainList(values):
		b.WriteString(name)
		b.WriteString(": ")
		for i, v := range values {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v)
		}
		b.WriteByte('\n')
	default:
		writeHeader(b, name, oneLine(strings.Join(values, ", ")))
	}
}

// plainList reports whether values, joined with ", ", are already one non-empty line without
// surrounding white space, so that oneLine would leave the joined text as it is.
func plainList(values []string) bool {
	if len(values) == 0 || values[len(values)-1] == "" {
		return false
	}
	for _, v := range values {
		if hasLineBreak(v) {
			return false
		}
	}
	if first := values[0]; first != "" {
		if r, _ := utf8.DecodeRuneInString(first); unicode.IsSpace(r) {
			return false
		}
	}
	r, _ := utf8.DecodeLastRuneInString(values[len(values)-1])
	return !unicode.IsSpace(r)
}

var lineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\u2028", " ", "\u2029", " ")

// oneLine replaces line breaks by spaces and trims the result.
func oneLine(s string) string {
	if hasLineBreak(s) {
		s = lineBreaks.Replace(s)
	}
	return strings.TrimSpace(s)
}

// hasLineBreak reports whether s holds "\r", "\n", U+2028 or U+2029 (both encoded as
// E2 80 A8/A9). A byte loop: strings.ContainsAny with non-ASCII runes decodes every rune.
func hasLineBreak(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\r', '\n':
			return true
		case 0xE2:
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				return true
			}
		}
	}
	return false
}
