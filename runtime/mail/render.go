package mail

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"mime"
	"mime/quotedprintable"
	netmail "net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/history"
)

// Render returns m as an RFC 5322 message with CRLF line ends, ready for an SMTP DATA command
// (the sender adds the dot-stuffing and the final "."). The same m always gives the same bytes.
//
// Header fields, in this order: From, To, Cc, Subject, Date (m.Date in UTC), Message-ID,
// In-Reply-To and References from m's fields; Auto-Submitted: auto-replied (RFC 3834: a
// program wrote the message in answer to another, so well-behaved auto-responders — another
// persona included — do not answer it); X-Auto-Response-Suppress: OOF, AutoReply (the same
// request in Microsoft Exchange's terms); MIME-Version and the body's Content-Type.
//
// How each value is written (the package documentation has the rules in full): a Subject or
// display name that is printable ASCII with single spaces and short words is written as it is,
// any other (non-ASCII, a literal "=?", long words, leading, trailing or repeated spaces) as
// RFC 2047 encoded words in UTF-8, so every receiver reads back exactly the text given; fields
// are folded at 78 characters; a file name is written quoted when it is plain, else in RFC
// 2231's percent-encoded form with continuations. The body is text/plain (m.Text), in a
// multipart/alternative with text/html when m.HTML is set, in a multipart/mixed with the
// attachments when there are any (each as base64, its bytes unchanged). A text part is 7bit
// only when every line is printable ASCII of at most 78 octets without trailing white space;
// otherwise it is quoted-printable or base64, whichever is shorter. No line of the result is
// longer than 998 octets, and only header lines holding a long msg-id or address are longer
// than 78.
//
// Render writes what m holds or refuses it; it never changes a value (but for writing the
// bodies' line breaks as CRLF). It returns an error, naming the field and the value, when:
//   - MessageID, InReplyTo (when set) or one of References is not a valid RFC 5322 msg-id
//     (dot-atom-text "@" dot-atom-text or "[literal]", at most 250 bytes, no angle brackets);
//   - Date is the zero time;
//   - From is not exactly one address, a To or Cc entry is not one address, there is no To or
//     Cc recipient, or an address is longer than 254 bytes;
//   - Subject, a display name or a file name is not valid UTF-8 or holds a control character
//     (C0 including CR, LF and TAB, DEL, C1): a header value is one line of text (NewReply
//     folds them away from what it takes from the message answered);
//   - a file name holds an RFC 2047 encoded word (receivers that decode encoded words in file
//     names, Parse among them, would show another name);
//   - Text or HTML is not valid UTF-8;
//   - an attachment's ContentType does not parse as a media type, or is multipart/* or
//     message/* (which cannot carry arbitrary bytes; "" means application/octet-stream).
func Render(m *history.Message) ([]byte, error) {
	if p := msgIDProblem(m.MessageID); p != "" {
		return nil, fmt.Errorf("mail: render: Message-ID %q %s", m.MessageID, p)
	}
	fail := func(format string, args ...any) error {
		return fmt.Errorf("mail: render %s: %s", m.MessageID, fmt.Sprintf(format, args...))
	}
	if m.InReplyTo != "" {
		if p := msgIDProblem(m.InReplyTo); p != "" {
			return nil, fail("In-Reply-To %q %s", m.InReplyTo, p)
		}
	}
	for i, id := range m.References {
		if p := msgIDProblem(id); p != "" {
			return nil, fail("References[%d] %q %s", i, id, p)
		}
	}
	if m.Date.IsZero() {
		return nil, fail("no Date")
	}
	from, err := netmail.ParseAddress(m.From)
	if err != nil {
		return nil, fail("From %q: %v", m.From, err)
	}
	if p := addressProblem(*from); p != "" {
		return nil, fail("From %q: %s", m.From, p)
	}
	to, err := parseEach("To", m.To)
	if err != nil {
		return nil, fail("%v", err)
	}
	cc, err := parseEach("Cc", m.Cc)
	if err != nil {
		return nil, fail("%v", err)
	}
	if len(to)+len(cc) == 0 {
		return nil, fail("no To or Cc recipient")
	}
	if p := textProblem(m.Subject); p != "" {
		return nil, fail("Subject %q %s", m.Subject, p)
	}
	if !utf8.ValidString(m.Text) {
		return nil, fail("Text is not valid UTF-8")
	}
	if !utf8.ValidString(m.HTML) {
		return nil, fail("HTML is not valid UTF-8")
	}
	atts := make([]*part, len(m.Attachments))
	for i, a := range m.Attachments {
		p, err := attachmentPart(a)
		if err != nil {
			return nil, fail("attachment %d: %v", i+1, err)
		}
		atts[i] = p
	}

	whole := m.HTML == "" && len(atts) == 0
	body := textPart("plain", m.Text, whole)
	if m.HTML != "" {
		body = multipart("alternative", m.MessageID, body, textPart("html", m.HTML, false))
	}
	if len(atts) > 0 {
		body = multipart("mixed", m.MessageID, append([]*part{body}, atts...)...)
	}

	var b strings.Builder
	writeField(&b, "From", addressTokens([]netmail.Address{*from}))
	if len(to) > 0 {
		writeField(&b, "To", addressTokens(to))
	}
	if len(cc) > 0 {
		writeField(&b, "Cc", addressTokens(cc))
	}
	writeField(&b, "Subject", textTokens(m.Subject))
	writeField(&b, "Date", []string{m.Date.UTC().Format(time.RFC1123Z)})
	writeField(&b, "Message-ID", idTokens(m.MessageID))
	if m.InReplyTo != "" {
		writeField(&b, "In-Reply-To", idTokens(m.InReplyTo))
	}
	if len(m.References) > 0 {
		writeField(&b, "References", idTokens(m.References...))
	}
	writeField(&b, "Auto-Submitted", []string{"auto-replied"})
	writeField(&b, "X-Auto-Response-Suppress", []string{"OOF,", "AutoReply"})
	writeField(&b, "MIME-Version", []string{"1.0"})
	body.write(&b)
	return []byte(b.String()), nil
}

// parseEach parses one address per string and checks that each can be written.
func parseEach(field string, list []string) ([]netmail.Address, error) {
	out := make([]netmail.Address, len(list))
	for i, s := range list {
		a, err := netmail.ParseAddress(s)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", field, s, err)
		}
		if p := addressProblem(*a); p != "" {
			return nil, fmt.Errorf("%s %q: %s", field, s, p)
		}
		out[i] = *a
	}
	return out, nil
}

// part is one MIME entity being rendered: its header fields (folded, each ending in CRLF)
// and either its encoded body or its children.
type part struct {
	header   string
	body     string
	boundary string
	children []*part
}

// write writes p's header, the blank line and its body (a multipart's delimiters and
// children).
func (p *part) write(b *strings.Builder) {
	b.WriteString(p.header)
	b.WriteString("\r\n")
	if p.children == nil {
		b.WriteString(p.body)
		return
	}
	for _, c := range p.children {
		b.WriteString("--" + p.boundary + "\r\n")
		c.write(b)
		b.WriteString("\r\n") // the CRLF before a delimiter belongs to the delimiter
	}
	b.WriteString("--" + p.boundary + "--\r\n")
}

func fields(f ...func(*strings.Builder)) string {
	var b strings.Builder
	for _, w := range f {
		w(&b)
	}
	return b.String()
}

func field(name string, tokens ...string) func(*strings.Builder) {
	return func(b *strings.Builder) { writeField(b, name, tokens) }
}

// multipart returns a multipart/subtype of the children. Its boundary is derived from the
// message id (so the rendering is deterministic) and starts with "=_", which neither
// quoted-printable nor base64 can produce and which 7bit text never holds (textBody), so no
// body line can be mistaken for a delimiter.
func multipart(subtype, messageID string, children ...*part) *part {
	sum := sha256.Sum256([]byte("personagen mime boundary\x00" + subtype + "\x00" + messageID))
	boundary := "=_" + subtype + "_" + hex.EncodeToString(sum[:12])
	return &part{
		header:   fields(field("Content-Type", "multipart/"+subtype+";", `boundary="`+boundary+`"`)),
		boundary: boundary,
		children: children,
	}
}

// textPart returns a text/subtype part holding s in UTF-8; whole says it is the entire
// message body (see textBody).
func textPart(subtype, s string, whole bool) *part {
	cte, body := textBody(s, whole)
	return &part{
		header: fields(field("Content-Type", "text/"+subtype+";", "charset=utf-8"), field("Content-Transfer-Encoding", cte)),
		body:   body,
	}
}

// textBody returns the transfer encoding and the encoded body of a text part holding s, its
// line breaks (CRLF, LF or a lone CR) written as CRLF:
//   - 7bit when every line is printable ASCII (tabs allowed) of at most 78 octets that does not
//     end in white space (which transports may strip), and s holds no "=_" (the start of every
//     boundary); a whole-message body must also end in a line break;
//   - else quoted-printable when at most one byte in six needs escaping, base64 otherwise (the
//     shorter of the two). Both keep lines within 76 characters, and a whole-message body
//     ends in CRLF (a quoted-printable soft line break after text that has no final line
//     break), so the message ends in a line break without changing the text.
func textBody(s string, whole bool) (cte, body string) {
	s = crlf(s)
	if sevenBit(s, whole) {
		return "7bit", s
	}
	escapes := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c > 0x7e || c == '=' || c < 0x20 && c != '\t' && c != '\r' && c != '\n' {
			escapes++
		}
	}
	if escapes*6 > len(s) {
		return "base64", base64Lines([]byte(s))
	}
	var buf bytes.Buffer
	w := quotedprintable.NewWriter(&buf)
	w.Write([]byte(s))
	w.Close()
	body = buf.String()
	if whole && body != "" && !strings.HasSuffix(body, "\r\n") {
		body += "=\r\n"
	}
	return "quoted-printable", body
}

func sevenBit(s string, whole bool) bool {
	if strings.Contains(s, "=_") || whole && s != "" && !strings.HasSuffix(s, "\r\n") {
		return false
	}
	for line := range strings.SplitSeq(s, "\r\n") {
		if len(line) > foldLine || strings.HasSuffix(line, " ") || strings.HasSuffix(line, "\t") {
			return false
		}
		for i := 0; i < len(line); i++ {
			if c := line[i]; c > 0x7e || c < 0x20 && c != '\t' {
				return false
			}
		}
	}
	return true
}

// base64Lines returns b in base64, in lines of 76 characters, each ending in CRLF.
func base64Lines(b []byte) string {
	enc := base64.StdEncoding.EncodeToString(b)
	var out strings.Builder
	out.Grow(len(enc) + len(enc)/76*2 + 2)
	for len(enc) > 0 {
		n := min(76, len(enc))
		out.WriteString(enc[:n])
		out.WriteString("\r\n")
		enc = enc[n:]
	}
	return out.String()
}

// attachmentPart returns the part of attachment a: its media type with its parameters and the
// file name (name), Content-Disposition: attachment with the file name (filename), its bytes
// in base64.
func attachmentPart(a history.Attachment) (*part, error) {
	if p := textProblem(a.Filename); p != "" {
		return nil, fmt.Errorf("file name %q %s", a.Filename, p)
	}
	if encodedWord.MatchString(a.Filename) {
		return nil, fmt.Errorf("file name %q holds an RFC 2047 encoded word, which receivers decode (Parse among them); rename the file", a.Filename)
	}
	ctype := a.ContentType
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	mt, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		return nil, fmt.Errorf("content type %q: %v", a.ContentType, err)
	}
	if strings.HasPrefix(mt, "multipart/") || strings.HasPrefix(mt, "message/") {
		return nil, errors.New("content type " + mt + " cannot hold an attachment's bytes; send it as application/octet-stream")
	}
	delete(params, "name")
	ctToks := []string{mt}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		ctToks = appendParam(ctToks, paramTokens(k, params[k]))
	}
	cdToks := []string{"attachment"}
	if a.Filename != "" {
		ctToks = appendParam(ctToks, paramTokens("name", a.Filename))
		cdToks = appendParam(cdToks, paramTokens("filename", a.Filename))
	}
	return &part{
		header: fields(field("Content-Type", ctToks...), field("Content-Transfer-Encoding", "base64"), field("Content-Disposition", cdToks...)),
		body:   base64Lines(a.Data),
	}, nil
}

// appendParam appends a parameter's tokens to a media type's, separated by ";".
func appendParam(toks, param []string) []string {
	toks[len(toks)-1] += ";"
	return append(toks, param...)
}

// crlf turns every line break of s into "\r\n".
func crlf(s string) string {
	return strings.ReplaceAll(normalizeNewlines(s), "\n", "\r\n")
}
