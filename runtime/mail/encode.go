package mail

import (
	"encoding/base64"
	"fmt"
	netmail "net/mail"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The line lengths Render writes to (RFC 5322 section 2.1.1).
const (
	// maxLine is the most octets a line may hold, CRLF excluded; no rendered line is longer.
	maxLine = 998
	// foldLine is the line length Render folds header fields at, and the longest line of a
	// text part it sends as 7bit; only a field token that cannot be split (a msg-id, an
	// address) makes a longer line.
	foldLine = 78
	// maxPlainWord is the longest word a header value may hold and still be written as it is;
	// a value with a longer word is written as encoded words, which fold.
	maxPlainWord = 66
	// maxAddrSpec is the longest address Render writes, in bytes: the longest an SMTP path may
	// carry (RFC 5321 section 4.5.3.1.3 allows 256 octets with the angle brackets).
	maxAddrSpec = 254
)

// textProblem says why s cannot be written as the text of a header field (a Subject, a
// display name, a file name): "" when it can. Such text is valid UTF-8 without control
// characters (C0, DEL, C1): a header value is one line, and a line break inside it would end
// the field (or, encoded, reach the receiver as a line break inside a subject).
func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for i, r := range s {
		if isControl(r) {
			return fmt.Sprintf("holds the control character %U at byte %d; a header value is one line of text", r, i)
		}
	}
	return ""
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }

// foldText makes s writable as header text: bytes that are not UTF-8 become U+FFFD, each
// control character (line breaks and tabs included) a space, and the ends are trimmed.
func foldText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// plainWords returns the words of s when s can be written in a header as it is: printable
// ASCII words separated by single spaces, none longer than maxPlainWord, and no "=?" anywhere
// (a receiver would try to decode it as an encoded word). Otherwise ok is false and s is
// written as encoded words. The empty string has no words and is plain.
func plainWords(s string) (words []string, ok bool) {
	if s == "" {
		return nil, true
	}
	if strings.Contains(s, "=?") {
		return nil, false
	}
	words = strings.Split(s, " ")
	for _, w := range words {
		if w == "" || len(w) > maxPlainWord {
			return nil, false // a leading, trailing or double space, or a long word
		}
		for i := 0; i < len(w); i++ {
			if w[i] < 0x21 || w[i] > 0x7e {
				return nil, false
			}
		}
	}
	return words, true
}

// encodedWords returns s as RFC 2047 encoded words in UTF-8, each at most 75 characters and
// split at character boundaries, so that a decoder joining them gets s back exactly (spaces
// included: they are inside the words, and the white space between two encoded words is not
// part of the text). The Q encoding writes letters, digits and !*+-/ as they are, the only
// characters RFC 2047 section 5 allows in a display name, so the words are valid in a phrase
// as well as in unstructured text, and readable where the text is mostly ASCII; the B
// encoding is used when it is at least a quarter shorter (text mostly in other scripts).
func encodedWords(s string) []string {
	qLen := 0
	for i := 0; i < len(s); i++ {
		qLen += qWidth(s[i])
	}
	if bLen := (len(s) + 2) / 3 * 4; 4*bLen <= 3*qLen {
		return bWords(s)
	}
	return qWords(s)
}

const (
	wordPrefixQ = "=?utf-8?q?"
	wordPrefixB = "=?utf-8?b?"
	// maxWordText is the encoded text an encoded word of 75 characters holds (RFC 2047
	// section 2): 75 less the prefix and "?=".
	maxWordText = 75 - len(wordPrefixQ) - len("?=")
	// maxWordBytes is the most bytes of s one B-encoded word holds.
	maxWordBytes = maxWordText / 4 * 3
)

func qLiteral(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!*+-/", c) >= 0
}

func qWidth(c byte) int {
	if qLiteral(c) || c == ' ' {
		return 1
	}
	return 3
}

func qWords(s string) []string {
	const hex = "0123456789ABCDEF"
	var words []string
	var cur strings.Builder
	for len(s) > 0 {
		_, n := utf8.DecodeRuneInString(s)
		var enc strings.Builder
		for i := 0; i < n; i++ {
			switch c := s[i]; {
			case qLiteral(c):
				enc.WriteByte(c)
			case c == ' ':
				enc.WriteByte('_')
			default:
				enc.WriteByte('=')
				enc.WriteByte(hex[c>>4])
				enc.WriteByte(hex[c&15])
			}
		}
		if cur.Len() > 0 && cur.Len()+enc.Len() > maxWordText {
			words = append(words, wordPrefixQ+cur.String()+"?=")
			cur.Reset()
		}
		cur.WriteString(enc.String())
		s = s[n:]
	}
	if cur.Len() > 0 {
		words = append(words, wordPrefixQ+cur.String()+"?=")
	}
	return words
}

func bWords(s string) []string {
	var words []string
	for len(s) > 0 {
		n := 0
		for n < len(s) {
			_, size := utf8.DecodeRuneInString(s[n:])
			if n > 0 && n+size > maxWordBytes {
				break
			}
			n += size
		}
		words = append(words, wordPrefixB+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return words
}

// textTokens returns the tokens of an unstructured field's value (a Subject): the words of s
// when it is plain (plainWords), else s as encoded words. Either way a receiver reads back s
// exactly.
func textTokens(s string) []string {
	if words, ok := plainWords(s); ok {
		return words
	}
	return encodedWords(s)
}

// phraseTokens returns the tokens of a display name, written so that a receiver reads back
// exactly the name given, spaces included (a receiver reading RFC 5322 and RFC 2047 as
// written: net/mail does; Python's email package does too, with the fix for its gh-128110):
//   - a name of printable ASCII words separated by single spaces, each at most maxPlainWord
//     long and without "=?", is written as it is: as atoms, or as one quoted string when a
//     word holds a character an atom may not (`"Smith, J."`);
//   - otherwise each word is an atom, a quoted string (printable ASCII) or encoded words (any
//     other, a run of them joined by single spaces into one text);
//   - a single space between two words is the white space between their tokens, except
//     between two encoded words, where white space is not part of the text: that space is
//     written inside the first of them;
//   - every other run of spaces (leading, trailing, or two and more) is written as quoted
//     strings of spaces: a receiver joins a phrase's words with single spaces, so a run of k
//     spaces between two words is k-1 spaces in quoted strings and the white space around them.
//     Encoded words never carry a run of spaces, which receivers may collapse.
func phraseTokens(name string) []string {
	if words, ok := plainWords(name); ok {
		if !strings.ContainsFunc(name, func(r rune) bool { return r != ' ' && !isAtext(r) }) {
			return words
		}
		toks := make([]string, len(words))
		for i, w := range words {
			toks[i] = quotePairs(w)
		}
		toks[0] = `"` + toks[0]
		toks[len(toks)-1] += `"`
		return toks
	}
	words, gaps := splitSpaces(name)
	if len(words) == 0 {
		return spaceTokens(gaps[0] + 1)
	}
	toks := spaceTokens(gaps[0])
	var run []string // the words of the encoded run being built
	for i, w := range words {
		last := i == len(words)-1
		if tok, ok := plainToken(w); ok {
			toks = append(toks, tok)
		} else {
			run = append(run, w)
			if !last && gaps[i+1] == 1 {
				if _, ok := plainToken(words[i+1]); !ok {
					continue // the single space goes inside the run
				}
			}
			toks = append(toks, encodedWords(strings.Join(run, " "))...)
			run = nil
		}
		switch gap := gaps[i+1]; {
		case last:
			toks = append(toks, spaceTokens(gap)...)
		case gap > 1:
			toks = append(toks, spaceTokens(gap-1)...)
		}
	}
	return toks
}

// splitSpaces splits s at runs of spaces: its words, and the length of each run (gaps[0] before
// the first word, gaps[i] before words[i], gaps[len(words)] after the last; 0 for none).
func splitSpaces(s string) (words []string, gaps []int) {
	for {
		n := len(s) - len(strings.TrimLeft(s, " "))
		gaps, s = append(gaps, n), s[n:]
		if s == "" {
			return words, gaps
		}
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		words, s = append(words, s[:end]), s[end:]
	}
}

// spaceTokens returns quoted strings that, with a single space after each, write k spaces:
// none for k = 0, else strings of at most maxPlainWord spaces whose lengths and separating
// spaces add up to k.
func spaceTokens(k int) []string {
	var toks []string
	for k > 0 {
		n := min(k-1, maxPlainWord)
		toks = append(toks, `"`+strings.Repeat(" ", n)+`"`)
		k -= n + 1
	}
	return toks
}

// plainToken returns word as an atom, or as a quoted string when it holds a character an atom
// may not, when it is printable ASCII of at most maxPlainWord characters without "=?".
func plainToken(word string) (string, bool) {
	if words, ok := plainWords(word); !ok || len(words) != 1 {
		return "", false
	}
	if !strings.ContainsFunc(word, func(r rune) bool { return !isAtext(r) }) {
		return word, true
	}
	return `"` + quotePairs(word) + `"`, true
}

// quotePairs escapes `"` and `\` for a quoted string.
func quotePairs(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// isAtext reports whether r is an RFC 5322 atext character.
func isAtext(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", r)
}

// addressProblem says why a cannot be written in an address field: "" when it can. Its name
// must be header text (textProblem); its address must read back through net/mail as itself
// and be at most maxAddrSpec bytes.
func addressProblem(a netmail.Address) string {
	if p := textProblem(a.Name); p != "" {
		return "display name " + p
	}
	switch {
	case a.Address == "":
		return "has no address"
	case len(a.Address) > maxAddrSpec:
		return fmt.Sprintf("address is %d bytes long, more than %d", len(a.Address), maxAddrSpec)
	}
	spec := angleAddr(a)
	back, err := netmail.ParseAddress(spec)
	if err != nil || back.Address != a.Address {
		return fmt.Sprintf("address %q does not read back as itself", a.Address)
	}
	return ""
}

// angleAddr renders a's address in angle brackets, its local part quoted when it needs it.
func angleAddr(a netmail.Address) string {
	return (&netmail.Address{Address: a.Address}).String()
}

// addressTokens returns the tokens of an address list field: each address's phrase tokens and
// its <addr-spec>, a comma after every address but the last.
func addressTokens(list []netmail.Address) []string {
	var toks []string
	for i, a := range list {
		if a.Name != "" {
			toks = append(toks, phraseTokens(a.Name)...)
		}
		spec := angleAddr(a)
		if i < len(list)-1 {
			spec += ","
		}
		toks = append(toks, spec)
	}
	return toks
}

// writeField writes one header field, "name: " and the tokens separated by single spaces,
// folded (CRLF and a space) before a token that would take the line past foldLine. The
// first token always stays on the field's first line. A receiver unfolds by removing the CRLF,
// so the value reads back as the tokens joined by single spaces.
func writeField(b *strings.Builder, name string, tokens []string) {
	b.WriteString(name)
	b.WriteByte(':')
	n := len(name) + 1
	for i, t := range tokens {
		if i > 0 && n+1+len(t) > foldLine {
			b.WriteString("\r\n")
			n = 0
		}
		b.WriteByte(' ')
		b.WriteString(t)
		n += 1 + len(t)
	}
	b.WriteString("\r\n")
}

// msgIDProblem says why id (without angle brackets) is not an RFC 5322 msg-id (section 3.6.4:
// dot-atom-text "@", then dot-atom-text or a no-fold-literal "[...]"), at most maxIDLen bytes:
// "" when it is one.
func msgIDProblem(id string) string {
	if id == "" {
		return "is empty"
	}
	if len(id) > maxIDLen {
		return fmt.Sprintf("is %d bytes long, more than %d", len(id), maxIDLen)
	}
	left, right, ok := strings.Cut(id, "@")
	switch {
	case !ok:
		return `has no "@"`
	case !dotAtomText(left):
		return fmt.Sprintf("the part before the @, %q, is not a dot-atom (ASCII letters, digits and !#$%%&'*+-/=?^_`{|}~, dots between them)", left)
	case strings.HasPrefix(right, "["):
		if !noFoldLiteral(right) {
			return fmt.Sprintf("the part after the @, %q, is not a [literal] of printable ASCII without [, ] and \\", right)
		}
	case !dotAtomText(right):
		return fmt.Sprintf("the part after the @, %q, is not a dot-atom or a [literal]", right)
	}
	return ""
}

var (
	dotAtomRE       = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$")
	noFoldLiteralRE = regexp.MustCompile(`^\[[\x21-\x5a\x5e-\x7e]*\]$`)
)

func dotAtomText(s string) bool   { return dotAtomRE.MatchString(s) }
func noFoldLiteral(s string) bool { return noFoldLiteralRE.MatchString(s) }

// idTokens returns the tokens of a msg-id field: each id in angle brackets.
func idTokens(ids ...string) []string {
	toks := make([]string, len(ids))
	for i, id := range ids {
		toks[i] = "<" + id + ">"
	}
	return toks
}

// paramTokens returns a MIME parameter (RFC 2045, RFC 2231) as header tokens. A plain value
// (printable ASCII of at most maxParamPlain characters, single spaces between words, none of
// `"`, `\`, `;` and no "=?") is written quoted: attr="value". Any other value is written in
// RFC 2231's extended form, percent-encoded UTF-8, split into numbered continuations of at
// most maxParamPiece characters at character boundaries when it is long; receivers join and
// decode them, so the value reads back exactly:
//
//	filename*=utf-8''Gr%C3%B6%C3%9Fe.pdf
//	filename*0*=utf-8''Gr%C3%B6%C3%9Fe...; filename*1*=...
//
// Every token but the last ends with ";"; the caller adds the ";" that separates it from a
// next parameter.
func paramTokens(attr, value string) []string {
	if plainParam(value) {
		return []string{attr + `="` + value + `"`}
	}
	var pieces []string
	var cur strings.Builder
	limit := maxParamPiece - len("utf-8''")
	for len(value) > 0 {
		_, n := utf8.DecodeRuneInString(value)
		enc := percentEncode(value[:n])
		if cur.Len() > 0 && cur.Len()+len(enc) > limit {
			pieces = append(pieces, cur.String())
			cur.Reset()
			limit = maxParamPiece
		}
		cur.WriteString(enc)
		value = value[n:]
	}
	pieces = append(pieces, cur.String())
	if len(pieces) == 1 {
		return []string{attr + "*=utf-8''" + pieces[0]}
	}
	toks := make([]string, len(pieces))
	for i, p := range pieces {
		if i == 0 {
			p = "utf-8''" + p
		}
		toks[i] = fmt.Sprintf("%s*%d*=%s", attr, i, p)
		if i < len(pieces)-1 {
			toks[i] += ";"
		}
	}
	return toks
}

const (
	// maxParamPlain is the longest parameter value written quoted.
	maxParamPlain = 60
	// maxParamPiece is the longest percent-encoded piece of one RFC 2231 continuation.
	maxParamPiece = 60
)

func plainParam(v string) bool {
	if v == "" || len(v) > maxParamPlain || strings.Contains(v, "=?") || strings.ContainsAny(v, `"\;`) {
		return false
	}
	words, ok := plainWords(v)
	return ok && len(words) > 0
}

// percentEncode writes each byte of s that is not an RFC 2231 attribute-char as %XX.
func percentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
