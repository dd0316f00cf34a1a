package mail

import (
	"bytes"
	"fmt"
	"io"
	"mime"
	netmail "net/mail"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
)

// maxIDLen is the longest message id, in bytes, that Parse keeps (the store's message id column
// holds 255 characters; ids are ASCII in practice). A longer Message-ID is replaced by a
// synthetic one; a longer reference is dropped. Both are recorded as problems.
const maxIDLen = 250

// maxReferences is the number of References ids Parse keeps: the first (the thread's root,
// which threading derives the thread id from) and the newest maxReferences-1, as RFC 5322
// section 3.6.4 suggests when a list grows long.
const maxReferences = 100

// headerDecoder decodes header values of one message: raw 8-bit bytes, RFC 2047 encoded words,
// folding. It records what it could not decode exactly on the message being parsed.
type headerDecoder struct {
	words mime.WordDecoder
	msg   *Message
}

func newHeaderDecoder(m *Message) *headerDecoder {
	d := &headerDecoder{msg: m}
	d.words.CharsetReader = d.charsetReader
	return d
}

// charsetReader is the mime.WordDecoder hook: it never fails, so one encoded word in an unknown
// charset cannot make the whole header unreadable. Such a word is read as raw bytes made valid
// UTF-8 by validText, and the charset is recorded as a problem.
func (d *headerDecoder) charsetReader(charset string, input io.Reader) (io.Reader, error) {
	raw, err := io.ReadAll(input)
	if err != nil {
		return nil, err
	}
	if dec := lookupCharset(charset); dec != nil {
		if out, err := dec(raw); err == nil {
			return bytes.NewReader(out), nil
		}
	}
	d.msg.problem(ProblemCharset, "header: unknown charset %q; the bytes are kept as they are", charset)
	s, _ := validText(raw)
	return strings.NewReader(s), nil
}

// charsetDecoder converts text in one charset to UTF-8.
type charsetDecoder func([]byte) ([]byte, error)

// lookupCharset returns the decoder for a MIME charset name: the WHATWG label index first (so
// "iso-8859-1" and "us-ascii" decode as windows-1252, as mail clients do), then the IANA
// registry, whose UTF-7 names decode with decodeUTF7. It returns nil for a name neither knows
// or whose charset golang.org/x/text cannot convert.
func lookupCharset(name string) charsetDecoder {
	name = strings.TrimSpace(strings.Trim(name, `"'`))
	if utf7Names[strings.ToLower(name)] {
		return func(b []byte) ([]byte, error) { return decodeUTF7(b), nil }
	}
	enc, err := htmlindex.Get(name)
	if err != nil {
		if enc, err = ianaindex.IANA.Encoding(name); err != nil {
			enc = nil
		}
	}
	if enc == nil {
		return nil
	}
	return func(b []byte) ([]byte, error) { return enc.NewDecoder().Bytes(b) }
}

// encodedQWord matches an RFC 2047 encoded word in the Q encoding whose text may hold raw bytes
// (a run of anything but "?" and white space): =?charset?Q?text?=.
var encodedQWord = regexp.MustCompile(`=\?([^?\s]+)\?[Qq]\?[^?\s]*\?=`)

// escapeEightBit rewrites each Q-encoded word of a raw header value that holds raw 8-bit bytes
// (which RFC 2047 forbids, and mime.WordDecoder leaves undecoded) into the word it should have
// been, each such byte written =XX, so the word decodes in its declared charset like any other:
// "=?iso-8859-1?Q?Fr\xf6sche?=" reads "Frösche". Each rewrite is recorded on the message.
func (d *headerDecoder) escapeEightBit(name, raw string) string {
	if isASCII([]byte(raw)) || !strings.Contains(raw, "=?") {
		return raw
	}
	return encodedQWord.ReplaceAllStringFunc(raw, func(w string) string {
		if isASCII([]byte(w)) {
			return w
		}
		charset := encodedQWord.FindStringSubmatch(w)[1]
		d.msg.problem(ProblemHeader, "%s: an encoded word holds raw 8-bit bytes; they are read in its charset %s", name, oneLine(d.raw(name, charset)))
		var b strings.Builder
		for i := 0; i < len(w); i++ {
			if c := w[i]; c >= utf8.RuneSelf {
				fmt.Fprintf(&b, "=%02X", c)
			} else {
				b.WriteByte(c)
			}
		}
		return b.String()
	})
}

// text decodes one unstructured header value (Subject, a display name): 8-bit bytes made
// valid, encoded words decoded, line breaks and tabs turned into spaces, outer space trimmed.
func (d *headerDecoder) text(name, raw string) string {
	v := d.raw(name, d.escapeEightBit(name, raw))
	if strings.Contains(v, "=?") {
		if dec, err := d.words.DecodeHeader(v); err == nil {
			// mime.WordDecoder decodes UTF-8 and ISO-8859-1 words itself, passing invalid
			// bytes through; make them valid like any other.
			var ok bool
			if v, ok = validText([]byte(dec)); !ok {
				d.msg.problem(ProblemCharset, "%s: an encoded word holds bytes that are not valid in its charset", name)
			}
		}
	}
	return oneLine(v)
}

// raw returns a header value as valid UTF-8, without decoding encoded words. Bytes that are not
// UTF-8 (a Latin-1 subject written without encoded words) are read as windows-1252 and recorded.
func (d *headerDecoder) raw(name, raw string) string {
	v, ok := validText([]byte(raw))
	if !ok {
		d.msg.problem(ProblemHeader, "%s: 8-bit bytes that are not UTF-8, read as windows-1252", name)
	}
	return v
}

// addresses reads an address list header leniently: when the whole list does not parse, each
// comma-separated item is parsed alone, an item that still fails gives the addresses it
// visibly contains, and an item with none is recorded as a problem. It never fails.
func (d *headerDecoder) addresses(name, raw string) []netmail.Address {
	v := d.raw(name, d.escapeEightBit(name, raw))
	if strings.TrimSpace(v) == "" {
		return nil
	}
	p := netmail.AddressParser{WordDecoder: &d.words}
	if list, err := p.ParseList(v); err == nil {
		return d.clean(v, list)
	}
	var out []netmail.Address
	for _, item := range splitAddressList(v) {
		if a, err := p.Parse(item); err == nil {
			out = append(out, d.clean(item, []*netmail.Address{a})...)
			continue
		}
		salvaged := d.salvage(item)
		if len(salvaged) == 0 {
			d.msg.problem(ProblemAddress, "%s: cannot read %q as an address; it is left out", name, item)
			continue
		}
		d.msg.problem(ProblemAddress, "%s: %q is not a well-formed address; kept %s", name, item, formatList(salvaged))
		out = append(out, salvaged...)
	}
	return out
}

// clean copies the addresses parsed from the header value raw, decoding encoded words that
// net/mail left in names and making names single-line. net/mail decodes a phrase's atoms that
// are whole encoded words but not the encoded words inside a quoted string, which many mailers
// write ("=?utf-8?q?J=C3=BCrgen?=" <j@x>). A name is decoded again only when every encoded word
// it holds appears as it is in raw: an encoded word that is not in raw is the text net/mail
// decoded (a name that literally reads "=?utf-8?q?x?="), and decoding it twice would change it.
func (d *headerDecoder) clean(raw string, list []*netmail.Address) []netmail.Address {
	out := make([]netmail.Address, 0, len(list))
	for _, a := range list {
		if a == nil || a.Address == "" {
			continue
		}
		addr, _ := validText([]byte(strings.TrimSpace(a.Address)))
		name := oneLine(d.raw("name", a.Name))
		if words := encodedWord.FindAllString(a.Name, -1); len(words) > 0 && !slices.ContainsFunc(words, func(w string) bool { return !strings.Contains(raw, w) }) {
			name = d.text("name", a.Name)
		}
		out = append(out, netmail.Address{Name: name, Address: addr})
	}
	return out
}

// encodedWord matches an RFC 2047 encoded word.
var encodedWord = regexp.MustCompile(`=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=`)

// salvage returns the addresses an unparseable item visibly holds: the angle-bracketed address
// with the text before it as the name ("a@x <b@y>" gives b@y named "a@x"), else every word
// that is an address ("a@x b@y" gives both). A candidate counts only when net/mail reads it as
// an addr-spec, so every address kept can be written into a reply's header and read back.
func (d *headerDecoder) salvage(item string) []netmail.Address {
	if lt := strings.LastIndexByte(item, '<'); lt >= 0 {
		if gt := strings.IndexByte(item[lt:], '>'); gt > 0 {
			if addr, ok := addrSpec(item[lt+1 : lt+gt]); ok {
				name := strings.TrimSpace(item[:lt])
				name = strings.TrimSpace(strings.Trim(name, `"`))
				return []netmail.Address{{Name: d.text("name", name), Address: addr}}
			}
		}
	}
	var out []netmail.Address
	for _, w := range strings.FieldsFunc(item, func(r rune) bool { return r == ' ' || r == '\t' || r == ';' || r == ',' }) {
		if addr, ok := addrSpec(strings.Trim(w, `"'<>()[]`)); ok {
			out = append(out, netmail.Address{Address: addr})
		}
	}
	return out
}

// addrSpec returns s as net/mail reads it when s is a bare addr-spec.
func addrSpec(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "@") || strings.ContainsAny(s, " \t<>") {
		return "", false
	}
	a, err := netmail.ParseAddress(s)
	if err != nil || a.Name != "" {
		return "", false
	}
	return a.Address, true
}

// splitAddressList splits an address list at commas that are outside quoted strings, comments
// and angle brackets, dropping group names ("team: a@x, b@y;") and empty items.
func splitAddressList(v string) []string {
	var items []string
	var cur strings.Builder
	inQuote, escaped := false, false
	comment, angle := 0, 0
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			items = append(items, s)
		}
		cur.Reset()
	}
	for _, r := range v {
		switch {
		case escaped:
			escaped = false
		case r == '\\' && (inQuote || comment > 0):
			escaped = true
		case r == '"' && comment == 0:
			inQuote = !inQuote
		case inQuote:
		case r == '(':
			comment++
		case r == ')' && comment > 0:
			comment--
		case comment > 0:
		case r == '<':
			angle++
		case r == '>' && angle > 0:
			angle--
		case angle > 0:
		case r == ',' || r == ';':
			flush()
			continue
		case r == ':':
			cur.Reset() // a group name ends here
			continue
		}
		cur.WriteRune(r)
	}
	flush()
	if inQuote || angle > 0 || comment > 0 {
		// An unclosed quote, bracket or comment swallowed the rest of the list: split at every
		// comma instead, so the items after it are still read.
		items = items[:0]
		for _, s := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
			if s = strings.TrimSpace(s); s != "" {
				items = append(items, s)
			}
		}
	}
	return items
}

// formatAddress renders an address for display and storage: "Name <addr>", the name quoted
// when it needs quoting, the bare address when there is no name. UTF-8 is written as is (RFC
// 6532), never as encoded words. The result always reads back through net/mail as the same
// address (a reply's header is built from it): control characters are dropped from the name,
// and a name that would not read back as itself even quoted is left out.
func formatAddress(a netmail.Address) string {
	// net/mail quotes a local part that needs it; it would also encode a non-ASCII name, so the
	// name is written here.
	spec := strings.TrimSuffix(strings.TrimPrefix((&netmail.Address{Address: a.Address}).String(), "<"), ">")
	name := strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, a.Name))
	if name == "" {
		return spec
	}
	plain := name + " <" + spec + ">"
	if !strings.ContainsAny(name, "()<>[]:;@\\,.\"") {
		if p, err := netmail.ParseAddress(plain); err == nil && p.Name == name {
			return plain
		}
	}
	quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(name) + `" <` + spec + ">"
	if p, err := netmail.ParseAddress(quoted); err == nil && p.Name == name {
		return quoted
	}
	return spec
}

// formatList renders addresses with formatAddress, joined with ", ".
func formatList(list []netmail.Address) string {
	s := make([]string, len(list))
	for i, a := range list {
		s[i] = formatAddress(a)
	}
	return strings.Join(s, ", ")
}

// messageIDs reads the ids of a Message-ID, In-Reply-To or References header, in order and
// without angle brackets: every <...> token; when there is none, every word that contains an @
// (some clients omit the brackets). Comments and the text between tokens are ignored, white
// space inside a token is removed, duplicates are dropped, and a token longer than maxIDLen
// bytes or holding control characters is dropped and recorded.
func (d *headerDecoder) messageIDs(name, raw string) []string {
	v := d.raw(name, raw)
	var ids []string
	seen := map[string]bool{}
	add := func(id string) {
		id = strings.Join(strings.Fields(id), "")
		switch {
		case id == "" || seen[id]:
			return
		case len(id) > maxIDLen:
			d.msg.problem(ProblemHeader, "%s: id of %d bytes is longer than %d; it is left out", name, len(id), maxIDLen)
			return
		case strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			d.msg.problem(ProblemHeader, "%s: id %q holds control characters; it is left out", name, id)
			return
		}
		seen[id] = true
		ids = append(ids, id)
	}
	rest := v
	found := false
	for {
		lt := strings.IndexByte(rest, '<')
		if lt < 0 {
			break
		}
		gt := strings.IndexByte(rest[lt:], '>')
		if gt < 0 {
			break
		}
		found = true
		add(rest[lt+1 : lt+gt])
		rest = rest[lt+gt+1:]
	}
	if !found {
		for _, w := range strings.FieldsFunc(stripComments(v), func(r rune) bool { return r == ' ' || r == '\t' || r == ',' }) {
			if strings.Contains(w, "@") {
				add(strings.Trim(w, `"'<>`))
			}
		}
	}
	return ids
}

// stripComments removes parenthesised comments (nesting allowed) from a header value.
func stripComments(v string) string {
	if !strings.Contains(v, "(") {
		return v
	}
	var b strings.Builder
	depth := 0
	for _, r := range v {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// validText returns b as a string of valid UTF-8 and whether b already was. Each byte that is
// not part of a valid UTF-8 sequence is read as windows-1252 (the usual meaning of 8-bit bytes
// in mail that declares no charset), so the UTF-8 around it survives unchanged.
func validText(b []byte) (string, bool) {
	if utf8.Valid(b) {
		return string(b), true
	}
	var out bytes.Buffer
	out.Grow(len(b) + len(b)/4)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			out.WriteRune(charmap.Windows1252.DecodeByte(b[0]))
			b = b[1:]
			continue
		}
		out.Write(b[:n])
		b = b[n:]
	}
	return out.String(), false
}

// oneLine replaces line breaks and tabs with spaces and trims the ends, so a decoded value can
// never forge a header line.
func oneLine(s string) string {
	if strings.ContainsAny(s, "\r\n\t") {
		s = strings.Map(func(r rune) rune {
			if r == '\r' || r == '\n' || r == '\t' {
				return ' '
			}
			return r
		}, s)
	}
	return strings.TrimSpace(s)
}

// problem records a problem of the given kind on m, once: a problem equal to one already
// recorded is dropped, and past maxProblems-1 problems one last entry says the rest were left
// out.
func (m *Message) problem(kind ProblemKind, format string, args ...any) {
	switch n := len(m.Problems); {
	case n >= maxProblems:
		return
	case n == maxProblems-1:
		m.Problems = append(m.Problems, Problem{Kind: kind, Detail: "more problems; the rest are left out"})
		return
	}
	detail, _ := validText([]byte(fmt.Sprintf(format, args...)))
	detail = clipBytes(detail, maxDetailBytes)
	p := Problem{Kind: kind, Detail: detail}
	if !slices.Contains(m.Problems, p) {
		m.Problems = append(m.Problems, p)
	}
}
