package mail

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jhillyerd/enmime/v2"
	"github.com/jhillyerd/enmime/v2/mediatype"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

// DefaultMaxSize is the size limit, in bytes of raw message, that Parse applies when
// Parser.MaxSize is 0: 25 MiB, the limit most mail services put on a message.
const DefaultMaxSize int64 = 25 << 20

// ErrTooLarge is returned (wrapped) by Parse for a message larger than the size limit; nothing
// of it is returned then.
var ErrTooLarge = errors.New("mail: message larger than the size limit")

// maxFutureSkew is how far after its arrival a Date may lie before Parse calls it absurd and
// uses the arrival time instead.
const maxFutureSkew = 24 * time.Hour

// earliestDate is the earliest Date Parse accepts; an earlier one is absurd.
var earliestDate = time.Date(1970, time.January, 1, 0, 0, 0, 0, time.UTC)

// Parser parses raw messages. The zero value is ready to use; a Parser is safe for concurrent
// use.
type Parser struct {
	// MaxSize is the largest raw message accepted, in bytes; 0 means DefaultMaxSize.
	MaxSize int64
}

// Parse parses one raw message with the zero Parser (see Parser.Parse).
func Parse(r io.Reader, arrived time.Time) (*Message, error) {
	var p Parser
	return p.Parse(r, arrived)
}

// Parse reads one raw RFC 5322 message from r (at most MaxSize bytes) and returns it decoded.
// arrived is when the message was received (the zero time means now): it stands in for a Date
// that is missing or absurd.
//
// It returns ErrTooLarge (wrapped) when r holds more than MaxSize bytes, and r's error when
// reading fails. Malformed content is never an error: what can be read is returned, and each
// thing that could not be read exactly is listed in Message.Problems (a message whose MIME
// structure cannot be parsed at all keeps its headers and its raw body as text).
func (p *Parser) Parse(r io.Reader, arrived time.Time) (*Message, error) {
	limit := p.MaxSize
	if limit <= 0 {
		limit = DefaultMaxSize
	}
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("mail: read message: %w", err)
	}
	if int64(len(raw)) > limit {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	if arrived.IsZero() {
		arrived = time.Now()
	}
	return parseRaw(raw, arrived), nil
}

// state is one parse in progress.
type state struct {
	m   *Message
	dec *headerDecoder
	// delims holds the boundary of every line of the message that may be a MIME delimiter
	// (see delimiterTokens), and the boundaries found by repairs.
	delims map[string]bool
	// boundaries holds every boundary the message's multiparts use, declared or found.
	boundaries map[string]bool
	// depthBase is the number of multiparts around the body a repair parses (see repair).
	depthBase int
	// repairs counts the multiparts repairBody has read (at most maxRepairs).
	repairs int
	// tooDeep is set when a multipart nested deeper than maxMultipartDepth was left out.
	tooDeep bool
	texts   []string
	htmls   []string
}

func parseRaw(raw []byte, arrived time.Time) *Message {
	m := &Message{Size: int64(len(raw)), Arrived: arrived}
	m.Direction = history.Inbound
	st := &state{m: m, dec: newHeaderDecoder(m), boundaries: map[string]bool{}}
	raw = st.leadingWhiteSpace(raw)
	root, err := st.readParts(raw)
	if err != nil {
		st.fallback(raw, err)
	} else {
		m.Header = root.Header
		st.walk(root)
		st.collectErrors(root)
		if strings.HasPrefix(root.ContentType, "multipart/") && root.FirstChild == nil {
			// The boundary occurs, but no part could be read with it.
			st.repairBody("0", "", root.ContentType, rawBody(raw), 0)
		}
		if st.tooDeep {
			m.problem(ProblemMIME, "multiparts are nested deeper than %d levels; the deeper ones are left out", maxMultipartDepth)
		}
	}
	st.bodies(raw)
	st.headers()
	st.limits()
	m.NoReply = noReply(m)
	m.NoReply.Detail = clipBytes(m.NoReply.Detail, maxDetailBytes)
	return m
}

// leadingWhiteSpace returns raw without the white space in front of its first line when that
// line is a header line indented by mistake (a message cut out of a log or a quoted block):
// read as it is, the line continues no header, the header block cannot be read, and the
// message would lose every header. A first line that is blank (no header at all) is left.
func (st *state) leadingWhiteSpace(raw []byte) []byte {
	if len(raw) == 0 || (raw[0] != ' ' && raw[0] != '\t') {
		return raw
	}
	trimmed := bytes.TrimLeft(raw, " \t")
	if len(trimmed) == 0 || trimmed[0] == '\r' || trimmed[0] == '\n' {
		return raw
	}
	st.m.problem(ProblemHeader, "the first header line starts with white space; it is read without it")
	return trimmed
}

// readParts runs enmime's parser with the options this package relies on. A panic inside the
// library is turned into an error, so the caller falls back to the raw text. A message that
// declares a boundary is read only up to its maxPartLines+1st line starting with "--" (see
// maxPartLines); parseMediaType holds the nesting to maxMultipartDepth. enmime leaves every
// part's content as it was sent (RawContent): transferDecoded and decodeText undo the transfer
// encoding and the charset.
func (st *state) readParts(raw []byte) (root *enmime.Part, err error) {
	if cut := partLinesCut(raw); cut >= 0 {
		st.m.problem(ProblemMIME, "more than %d lines start with \"--\" (MIME delimiters); the message is read up to byte %d of %d, the rest is left out", maxPartLines, cut, len(raw))
		raw = raw[:cut]
	}
	if st.delims == nil {
		st.delims = delimiterTokens(raw)
	}
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, fmt.Errorf("the MIME parser failed: %v", r)
		}
	}()
	parser := enmime.NewParser(
		enmime.SkipMalformedParts(true),
		enmime.RawContent(true),
		enmime.DisableTextConversion(true), // text from HTML goes through runtime.HTMLText
		enmime.DisableCharacterDetection(true),
		enmime.MaxStoredPartErrors(maxProblems),
		enmime.SetCustomParseMediaType(st.parseMediaType),
	)
	return parser.ReadParts(bytes.NewReader(raw))
}

// The media types parseMediaType gives a multipart that enmime must read as one leaf, its
// original type after the prefix: unbounded, a multipart without a boundary or whose boundary
// no line of the message holds (leaf repairs it from the delimiters its body holds, or reads it
// as text); tooDeep, a multipart nested deeper than maxMultipartDepth (leaf leaves it out).
const (
	unbounded = "personagen-unbounded-"
	tooDeep   = "personagen-too-deep-"
)

// parseMediaType is enmime's tolerant media type parser with these changes: RFC 2231 parameters
// in any charset, and raw 8-bit bytes in encoded words, are made readable first
// (recodeExtendedParams, escapeEightBit); a multipart without a usable boundary, or nested too
// deep, is marked to be read as one leaf (unbounded, tooDeep); and a boundary parameter on any
// other type is dropped (only multiparts have parts).
func (st *state) parseMediaType(ctype string) (string, map[string]string, []string, error) {
	ctype = st.recodeExtendedParams(st.dec.escapeEightBit("a parameter", ctype))
	mt, params, invalid, err := mediatype.ParseWithOptions(ctype, mediatype.ParseOptions{StripMediaTypeInvalidCharacters: true})
	if err != nil {
		return mt, params, invalid, err
	}
	if strings.HasPrefix(mt, "multipart/") {
		switch b := params["boundary"]; {
		case multipartDepth()+st.depthBase >= maxMultipartDepth:
			st.tooDeep = true
			mt = tooDeep + mt
		case b == "" || !st.delims[b]:
			mt = unbounded + mt
		default:
			st.boundaries[b] = true
			return mt, params, invalid, nil
		}
	}
	delete(params, "boundary")
	return mt, params, invalid, nil
}

// enmimeParseParts is the function enmime recurses through once per multipart level.
const enmimeParseParts = "github.com/jhillyerd/enmime/v2.parseParts"

// multipartDepth returns how many multiparts enclose the part whose media type enmime is
// parsing: the number of enmime's parseParts frames on the stack (0 at the top level).
// TestParseHoldsMultipartNesting fails if enmime stops recursing through that function.
func multipartDepth() int {
	var pcs [4 * maxMultipartDepth]uintptr
	frames := goruntime.CallersFrames(pcs[:goruntime.Callers(3, pcs[:])])
	depth := 0
	for {
		f, more := frames.Next()
		if f.Function == enmimeParseParts {
			depth++
		}
		if !more {
			return depth
		}
	}
}

// partLinesCut returns where a message that declares a boundary (holds "boundary" in any case)
// is cut so that the MIME parser reads at most maxPartLines lines starting with "--": the start
// of the next such line; -1 when the message is read whole.
func partLinesCut(raw []byte) int {
	if !containsFold(raw, "boundary") {
		return -1
	}
	n := 0
	for i := 0; i < len(raw); {
		if bytes.HasPrefix(raw[i:], []byte("--")) {
			if n++; n > maxPartLines {
				return i
			}
		}
		nl := bytes.IndexByte(raw[i:], '\n')
		if nl < 0 {
			break
		}
		i += nl + 1
	}
	return -1
}

// containsFold reports whether b holds the ASCII word w (lower case) in any letter case.
func containsFold(b []byte, w string) bool {
	for i := 0; i+len(w) <= len(b); i++ {
		if c := b[i] | 0x20; c == w[0] && bytes.EqualFold(b[i:i+len(w)], []byte(w)) {
			return true
		}
	}
	return false
}

// walk sorts the part tree into body texts and attachments. In a multipart/alternative the
// text comes from the first branch that has plain text and the HTML from the last branch that
// has HTML (RFC 2046: the last alternative is the richest); every other multipart contributes
// the bodies of all its branches in order. A leaf is a body when it is text/plain or text/html
// (or has no type), is not marked as an attachment and has no file name; every other leaf is an
// attachment.
func (st *state) walk(p *enmime.Part) {
	if p.FirstChild == nil {
		st.leaf(p)
		return
	}
	if p.ContentType != "multipart/alternative" {
		for c := p.FirstChild; c != nil; c = c.NextSibling {
			st.walk(c)
		}
		return
	}
	var text, html []string
	for c := p.FirstChild; c != nil; c = c.NextSibling {
		branch := *st
		branch.texts, branch.htmls = nil, nil
		branch.walk(c)
		st.tooDeep = st.tooDeep || branch.tooDeep
		if text == nil && len(branch.texts) > 0 {
			text = branch.texts
		}
		if len(branch.htmls) > 0 {
			html = branch.htmls
		}
	}
	st.texts = append(st.texts, text...)
	st.htmls = append(st.htmls, html...)
}

func (st *state) leaf(p *enmime.Part) {
	ctype := p.ContentType
	switch {
	case strings.HasPrefix(ctype, "multipart/"):
		return // a container whose children could not be read; enmime recorded why
	case strings.HasPrefix(ctype, tooDeep):
		return // recorded once for the message (tooDeep)
	case strings.HasPrefix(ctype, unbounded):
		if st.repair(p, strings.TrimPrefix(ctype, unbounded)) {
			return
		}
		ctype = "text/plain"
	}
	isBody := (ctype == "" || ctype == "text/plain" || ctype == "text/html") &&
		p.Disposition != "attachment" && p.FileName == ""
	content := st.transferDecoded(p, isBody)
	if !isBody {
		st.attachment(p, ctype, content)
		return
	}
	charset := p.Charset
	if charset == "" && ctype == "text/html" {
		charset = htmlCharset(content)
	}
	text := st.withoutDelimiters(p.PartID, normalizeNewlines(st.decodeText(p.PartID, content, charset)))
	if ctype == "text/html" {
		st.htmls = append(st.htmls, text)
	} else {
		st.texts = append(st.texts, text)
	}
}

// decodeText converts a text part's bytes from its declared charset to UTF-8:
//   - no charset, US-ASCII or UTF-8: the bytes as UTF-8, each byte that is not valid UTF-8 read
//     as windows-1252 (recorded);
//   - another charset, when the bytes are valid UTF-8 and not all ASCII: UTF-8 (the label is
//     wrong: text in a legacy charset is almost never valid UTF-8; recorded);
//   - a charset the WHATWG or IANA index knows: converted (so ISO-8859-1 reads as windows-1252,
//     as mail clients do, and ISO-2022-JP, Shift_JIS, GB2312 and the other legacy charsets
//     convert); bytes invalid in it become U+FFFD;
//   - an unknown charset: as for no charset, and recorded.
func (st *state) decodeText(partID string, raw []byte, charset string) string {
	cs := strings.ToLower(strings.TrimSpace(strings.Trim(charset, `"' `)))
	switch cs {
	case "", "us-ascii", "ascii", "utf-8", "utf8", "ansi_x3.4-1968":
		text, ok := validText(raw)
		if !ok {
			st.m.problem(ProblemCharset, "part %s: bytes that are not UTF-8 in %s text, read as windows-1252", partID, or(cs, "undeclared"))
		}
		return text
	}
	if utf8.Valid(raw) && !isASCII(raw) {
		st.m.problem(ProblemCharset, "part %s: declared %s but the text is UTF-8; read as UTF-8", partID, charset)
		return string(raw)
	}
	dec := lookupCharset(cs)
	if dec == nil {
		text, _ := validText(raw)
		st.m.problem(ProblemCharset, "part %s: unknown charset %q; the text is kept best-effort (bytes that are not UTF-8 read as windows-1252)", partID, charset)
		return text
	}
	out, err := dec(raw)
	if err != nil {
		text, _ := validText(raw)
		st.m.problem(ProblemCharset, "part %s: cannot convert from %s (%v); the text is kept best-effort", partID, charset, err)
		return text
	}
	text, _ := validText(out)
	return text
}

// htmlCharset returns the charset an HTML body declares in a meta tag ("" when none).
func htmlCharset(b []byte) string {
	if m := metaCharset.FindSubmatch(b); m != nil {
		return string(m[1])
	}
	return ""
}

var metaCharset = regexp.MustCompile(`(?i)<meta[^>]*charset\s*=\s*["']?\s*([a-z0-9_.:-]+)`)

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// normalizeNewlines turns "\r\n" and lone "\r" into "\n".
func normalizeNewlines(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

func (st *state) attachment(p *enmime.Part, mediaType string, data []byte) {
	ctype, _ := validText([]byte(mediaType))
	if ctype == "" || !strings.Contains(ctype, "/") {
		ctype = "application/octet-stream"
	}
	name, ok := validText([]byte(p.FileName))
	if !ok {
		st.m.problem(ProblemHeader, "part %s: file name has 8-bit bytes that are not UTF-8, read as windows-1252", p.PartID)
	}
	name = oneLine(name)
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = strings.TrimSpace(name[i+1:])
	}
	if data == nil {
		data = []byte{}
	}
	id := AttachmentID(data)
	if cid, _ := validText([]byte(p.ContentID)); oneLine(cid) != "" {
		if st.m.ContentIDs == nil {
			st.m.ContentIDs = map[string]string{}
		}
		st.m.ContentIDs[oneLine(cid)] = id
	}
	st.m.Attachments = append(st.m.Attachments, history.Attachment{
		ID:          id,
		Filename:    name,
		ContentType: ctype,
		Size:        int64(len(data)),
		Data:        data,
	})
}

// AttachmentID returns the stable id of an attachment with the given bytes: "att_" and the
// first 32 hex digits (128 bits) of their SHA-256.
func AttachmentID(data []byte) string {
	sum := sha256.Sum256(data)
	return "att_" + hex.EncodeToString(sum[:16])
}

// collectErrors records enmime's part errors as problems. A missing Content-Type (RFC 2045
// defines the default) and "no text/plain part" (Text then comes from the HTML) are not
// problems.
func (st *state) collectErrors(root *enmime.Part) {
	_ = root.DepthMatchAll(func(p *enmime.Part) bool {
		// enmime reports a header's malformed parameters in map order; sort each part's
		// errors so the same input always gives the same problems.
		errs := slices.Clone(p.Errors)
		slices.SortStableFunc(errs, func(a, b *enmime.Error) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Detail, b.Detail))
		})
		for _, e := range errs {
			switch e.Name {
			case enmime.ErrorMissingContentType, enmime.ErrorPlainTextFromHTML:
				continue
			case enmime.ErrorCharsetConversion, enmime.ErrorCharsetDeclaration:
				st.m.problem(ProblemCharset, "part %s: %s", p.PartID, e.Detail)
			default:
				st.m.problem(ProblemMIME, "part %s: %s: %s", p.PartID, strings.ToLower(e.Name), e.Detail)
			}
		}
		return false
	})
}

// fallback keeps what a message whose MIME structure could not be parsed still has: the
// headers, read line by line, and the body after the first blank line as raw text.
func (st *state) fallback(raw []byte, cause error) {
	st.m.problem(ProblemMIME, "the MIME structure cannot be read (%v); the body is kept as raw text", cause)
	br := bufio.NewReader(bytes.NewReader(raw))
	st.m.Header = readHeaderSafely(br)
	body, _ := io.ReadAll(br)
	text, ok := validText(body)
	if !ok {
		st.m.problem(ProblemCharset, "body: bytes that are not UTF-8, read as windows-1252")
	}
	st.texts = []string{st.withoutDelimiters("0", normalizeNewlines(text))}
}

// readHeaderSafely reads a header block with enmime's lenient reader; whatever it cannot read
// is dropped (a panic included), and a nil header becomes an empty one.
func readHeaderSafely(br *bufio.Reader) (h textproto.MIMEHeader) {
	defer func() {
		if recover() != nil || h == nil {
			h = textproto.MIMEHeader{}
		}
	}()
	h, _ = enmime.ReadHeader(br, discardErrors{})
	return h
}

type discardErrors struct{}

func (discardErrors) AddError(string, string, ...any)   {}
func (discardErrors) AddWarning(string, string, ...any) {}

// bodies joins the collected body texts and derives Text from HTML when there is no plain text.
// When the MIME structure gave nothing at all — no text, no HTML, no attachment — but the raw
// body is not blank (a multipart none of whose parts could be read, even with the boundary its
// delimiters show), the raw body is kept as the text without its delimiter lines, so readable
// text is never lost; unless parts nested too deep were left out.
func (st *state) bodies(raw []byte) {
	m := st.m
	m.Text = strings.Join(st.texts, "\n\n")
	m.HTML = strings.Join(st.htmls, "\n")
	if strings.TrimSpace(m.Text) == "" && strings.TrimSpace(m.HTML) != "" {
		m.Text = runtime.HTMLText(m.HTML)
		m.TextFromHTML = true
	}
	if strings.TrimSpace(m.Text) != "" || strings.TrimSpace(m.HTML) != "" || len(m.Attachments) > 0 || st.tooDeep {
		return // (parts nested too deep were left out on purpose)
	}
	if body := rawBody(raw); len(bytes.TrimSpace(body)) > 0 {
		text, _ := validText(body)
		m.problem(ProblemMIME, "no part could be read; the raw body is kept as the text")
		m.Text = st.withoutDelimiters("0", normalizeNewlines(text))
	}
}

// rawBody returns what follows the header block of a raw message (nil when there is no blank
// line).
func rawBody(raw []byte) []byte {
	for _, sep := range []string{"\r\n\r\n", "\n\n"} {
		if i := bytes.Index(raw, []byte(sep)); i >= 0 {
			return raw[i+len(sep):]
		}
	}
	return nil
}

// headers decodes the top-level headers into the message's fields.
func (st *state) headers() {
	m, d, h := st.m, st.dec, st.m.Header
	all := func(name string) string { return strings.Join(h.Values(name), ", ") }
	m.Subject = d.text("Subject", h.Get("Subject"))
	a := &m.Addresses
	a.From = d.addresses("From", all("From"))
	a.To = d.addresses("To", all("To"))
	a.Cc = d.addresses("Cc", all("Cc"))
	a.Bcc = d.addresses("Bcc", all("Bcc"))
	a.ReplyTo = d.addresses("Reply-To", all("Reply-To"))
	// From is one stored field: all its addresses when they fit, else the first.
	if m.From = strings.Join(st.formatLimited("From", a.From), ", "); len(m.From) > maxAddressBytes {
		m.From = strings.Join(st.formatLimited("From", a.From[:1]), "")
	}
	m.To, m.Cc, m.ReplyTo = st.formatLimited("To", a.To), st.formatLimited("Cc", a.Cc), st.formatLimited("Reply-To", a.ReplyTo)

	if ids := d.messageIDs("Message-ID", h.Get("Message-Id")); len(ids) > 0 {
		m.MessageID = ids[0]
	} else {
		m.MessageID, m.SyntheticID = syntheticID(m, h.Get("Date")), true
		if strings.TrimSpace(h.Get("Message-Id")) == "" {
			m.problem(ProblemMessageID, "no Message-ID; the synthetic id %s is derived from the content", m.MessageID)
		} else {
			m.problem(ProblemMessageID, "Message-ID %q is unusable; the synthetic id %s is derived from the content", oneLine(d.raw("Message-ID", h.Get("Message-Id"))), m.MessageID)
		}
	}
	refs := d.messageIDs("References", strings.Join(h.Values("References"), " "))
	refs = removeID(refs, m.MessageID)
	if len(refs) > maxReferences {
		refs = append(refs[:1], refs[len(refs)-(maxReferences-1):]...)
	}
	m.References = refs
	if ids := removeID(d.messageIDs("In-Reply-To", h.Get("In-Reply-To")), m.MessageID); len(ids) > 0 {
		m.InReplyTo = ids[0]
	}
	m.ThreadIndex = st.threadIndex(h.Get("Thread-Index"))
	st.date(h.Get("Date"))
}

// threadIndex returns the conversation root of an Outlook Thread-Index header value (see
// Message.ThreadIndex): "" for none, and, recorded, for a value that is not base64 of 22 bytes
// and 5 more per reply.
func (st *state) threadIndex(raw string) string {
	v := strings.Join(strings.Fields(st.dec.raw("Thread-Index", raw)), "")
	if v == "" {
		return ""
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(v, "="))
	}
	if err != nil || len(b) < threadIndexRootLen || (len(b)-threadIndexRootLen)%5 != 0 {
		st.m.problem(ProblemHeader, "Thread-Index %q is not base64 of %d bytes and 5 per reply; it is not used for threading", clipBytes(v, 100), threadIndexRootLen)
		return ""
	}
	return hex.EncodeToString(b[:threadIndexRootLen])
}

func removeID(ids []string, id string) []string {
	out := ids[:0]
	for _, v := range ids {
		if v != id {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// date sets Date from the Date header, or from the arrival time when the header is missing,
// unreadable or absurd.
func (st *state) date(raw string) {
	m := st.m
	m.Date = m.Arrived
	v := oneLine(st.dec.raw("Date", raw))
	if v == "" {
		m.problem(ProblemDate, "no Date header; the arrival time is used")
		return
	}
	t, note, ok := parseDate(v)
	switch {
	case !ok:
		m.problem(ProblemDate, "cannot read Date %q; the arrival time is used", v)
	case t.Before(earliestDate) || t.After(m.Arrived.Add(maxFutureSkew)):
		m.problem(ProblemDate, "Date %q is absurd (before 1970 or more than a day after arrival); the arrival time is used", v)
	default:
		m.Date, m.DateFromHeader = t, true
		if note != "" {
			m.problem(ProblemDate, "Date %q: %s", v, note)
		}
	}
}

// syntheticID derives a Message-ID from what identifies a message to its readers, so two
// copies of one message (delivered twice, with different Received headers) get the same id:
// the SHA-256 of the From, To, Cc and Subject values as decoded, the raw Date header, the body
// texts and the attachment ids; the first 32 hex digits @personagen.invalid (a reserved
// domain, so the id can never clash with a real one).
func syntheticID(m *Message, rawDate string) string {
	h := sha256.New()
	for _, v := range []string{formatList(m.Addresses.From), formatList(m.Addresses.To), formatList(m.Addresses.Cc), m.Subject, strings.TrimSpace(rawDate), m.Text, m.HTML} {
		io.WriteString(h, v)
		h.Write([]byte{0})
	}
	for _, a := range m.Attachments {
		io.WriteString(h, a.ID)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16]) + "@personagen.invalid"
}
