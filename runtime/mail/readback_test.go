package mail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	netmail "net/mail"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/history"
)

// The outbox tests read every rendered message back twice: with this package's Parse and with
// an independent parser, Python's email package with policy.default (readback.py), and
// compare what both read with what was rendered.

// pyMessage is one rendered message as Python's email package reads it (readback.py).
type pyMessage struct {
	Error       string
	Subject     *string
	From        []pyAddress
	To          []pyAddress
	Cc          []pyAddress
	MessageID   string `json:"message_id"`
	InReplyTo   string `json:"in_reply_to"`
	References  []string
	Text        *string
	HTML        *string
	Attachments []pyAttachment
	Defects     []string
}

type pyAddress struct{ Name, Address string }

type pyAttachment struct {
	Name        *string
	ContentType string `json:"content_type"`
	Data        []byte
}

// pythonRead reads raws back with readback.py, in one python3 process; pythonRead(...)[i] is
// raws[i] as Python reads it. Without python3 on PATH it returns a slice of nils, so only Parse
// reads the renderings back, and logs that; under CI=true it fails the test instead.
func pythonRead(t testing.TB, raws [][]byte) []*pyMessage {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is not on PATH: the outbox tests read rendered mail back with Python's email package, and CI=true does not skip them")
		}
		t.Log("python3 is not on PATH; the Python read-back is skipped")
		return make([]*pyMessage, len(raws))
	}
	in, err := json.Marshal(raws)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/outbox/readback.py")
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("readback.py: %v\n%s", err, stderr.String())
	}
	var msgs []*pyMessage
	if err := json.Unmarshal(out, &msgs); err != nil || len(msgs) != len(raws) {
		t.Fatalf("readback.py: %d results for %d messages (%v)", len(msgs), len(raws), err)
	}
	return msgs
}

// readBackProblems renders nothing itself: it checks the rendering raw of m. Every line holds at
// most 998 octets and ends in CRLF, and Parse (and Python's reading py, when not nil) reads back
// exactly what m holds: the subject, the From, To and Cc names and addresses, the Message-ID,
// In-Reply-To and References, the text and HTML bodies, and each attachment's name, media type
// and bytes, with no parse problem or defect. What each parser normalises by its own
// documented rules is applied to the expectation: Parse trims the ends of a subject, a name and
// a file name, keeps a file name's base name, holds a subject and a file name to the store's
// limits (recording that, the one problem allowed), and reads a message whose bodies are
// blank as its raw body; Python trims the ends of a file name; both read line breaks as "\n".
func readBackProblems(m *history.Message, raw []byte, py *pyMessage) []string {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, fmt.Sprintf(format, args...)) }
	lines := bytes.Split(raw, []byte("\r\n"))
	for i, line := range lines {
		if len(line) > maxLine {
			bad("line %d is %d octets long", i+1, len(line))
		}
		if bytes.ContainsAny(line, "\r\n") {
			bad("line %d holds a bare CR or LF", i+1)
		}
	}
	if len(lines[len(lines)-1]) != 0 {
		bad("the message does not end in CRLF")
	}

	from, _ := netmail.ParseAddress(m.From)
	var to, cc []netmail.Address
	for _, s := range m.To {
		a, _ := netmail.ParseAddress(s)
		to = append(to, *a)
	}
	for _, s := range m.Cc {
		a, _ := netmail.ParseAddress(s)
		cc = append(cc, *a)
	}
	trimmed := func(list []netmail.Address) []netmail.Address {
		var out []netmail.Address
		for _, a := range list {
			out = append(out, netmail.Address{Name: strings.TrimSpace(a.Name), Address: a.Address})
		}
		return out
	}
	text, html := normalizeNewlines(m.Text), normalizeNewlines(m.HTML)

	back, err := Parse(bytes.NewReader(raw), arrival)
	if err != nil {
		return append(probs, "Parse: "+err.Error())
	}
	if want := clipBytes(strings.TrimSpace(m.Subject), maxSubjectBytes); back.Subject != want {
		bad("Parse: Subject %q, want %q", clip(back.Subject), clip(want))
	}
	if got, want := back.Addresses.From, trimmed([]netmail.Address{*from}); !sameList(got, want) {
		bad("Parse: From %q, want %q", got, want)
	}
	if got, want := back.Addresses.To, trimmed(to); !sameList(got, want) {
		bad("Parse: To %q, want %q", got, want)
	}
	if got, want := back.Addresses.Cc, trimmed(cc); !sameList(got, want) {
		bad("Parse: Cc %q, want %q", got, want)
	}
	if back.MessageID != m.MessageID || back.InReplyTo != m.InReplyTo || !sameList(back.References, m.References) {
		bad("Parse: ids %q %q %q, want %q %q %q", back.MessageID, back.InReplyTo, back.References, m.MessageID, m.InReplyTo, m.References)
	}
	blank := strings.TrimSpace(text) == "" && strings.TrimSpace(html) == "" && len(m.Attachments) == 0
	switch {
	case back.TextFromHTML && strings.TrimSpace(text) == "":
	case blank:
		// A message whose parts hold no text that is not white space keeps its raw body as
		// the text (Parse's rule for a broken MIME structure); a reply is never blank.
	case back.Text != text:
		bad("Parse: Text %q, want %q", clip(back.Text), clip(text))
	}
	if back.HTML != html {
		bad("Parse: HTML %q, want %q", clip(back.HTML), clip(html))
	}
	if len(back.Attachments) != len(m.Attachments) {
		bad("Parse: %d attachments, want %d", len(back.Attachments), len(m.Attachments))
	} else {
		for i, a := range m.Attachments {
			got, mt := back.Attachments[i], mediaType(a.ContentType)
			name := a.Filename
			if j := strings.LastIndexAny(name, `/\`); j >= 0 {
				name = name[j+1:]
			}
			name = clipBytes(strings.TrimSpace(name), maxFilenameBytes)
			if got.Filename != name || got.ContentType != mt || !bytes.Equal(got.Data, a.Data) {
				bad("Parse: attachment %d: %q %q %d bytes, want %q %q %d bytes", i+1, clip(got.Filename), got.ContentType, len(got.Data), clip(name), mt, len(a.Data))
			}
		}
	}
	for _, p := range back.Problems {
		if !limitProblem.MatchString(p.Detail) && !(blank && p.Detail == "no part could be read; the raw body is kept as the text") {
			bad("Parse: problem %s", p)
		}
	}
	if back.NoReply.Reason != ReasonAutoSubmitted {
		bad("Parse: NoReply %+v, want auto-submitted", back.NoReply)
	}
	if py == nil {
		return probs
	}

	if py.Error != "" {
		return append(probs, "Python: "+py.Error)
	}
	pyAddrs := func(list []netmail.Address) []pyAddress {
		var out []pyAddress
		for _, a := range list {
			out = append(out, pyAddress{a.Name, a.Address})
		}
		return out
	}
	if py.Subject == nil || *py.Subject != m.Subject {
		bad("Python: Subject %s, want %q", quotePtr(py.Subject), m.Subject)
	}
	if got, want := pyAddrsRead(py.From), pyAddrs([]netmail.Address{*from}); !sameList(got, want) {
		bad("Python: From %q, want %q", got, want)
	}
	if got, want := pyAddrsRead(py.To), pyAddrs(to); !sameList(got, want) {
		bad("Python: To %q, want %q", got, want)
	}
	if got, want := pyAddrsRead(py.Cc), pyAddrs(cc); !sameList(got, want) {
		bad("Python: Cc %q, want %q", got, want)
	}
	if py.MessageID != m.MessageID || py.InReplyTo != m.InReplyTo || !sameList(py.References, m.References) {
		bad("Python: ids %q %q %q, want %q %q %q", py.MessageID, py.InReplyTo, py.References, m.MessageID, m.InReplyTo, m.References)
	}
	if py.Text == nil || normalizeNewlines(*py.Text) != text {
		bad("Python: Text %s, want %q", quotePtr(py.Text), clip(text))
	}
	switch {
	case m.HTML == "" && py.HTML != nil:
		bad("Python: HTML %s, want none", quotePtr(py.HTML))
	case m.HTML != "" && (py.HTML == nil || normalizeNewlines(*py.HTML) != html):
		bad("Python: HTML %s, want %q", quotePtr(py.HTML), clip(html))
	}
	if len(py.Attachments) != len(m.Attachments) {
		bad("Python: %d attachments, want %d", len(py.Attachments), len(m.Attachments))
	} else {
		for i, a := range m.Attachments {
			got, mt := py.Attachments[i], mediaType(a.ContentType)
			name := strings.TrimSpace(a.Filename)
			if got.Name == nil && name != "" || got.Name != nil && *got.Name != name || got.ContentType != mt || !bytes.Equal(got.Data, a.Data) {
				bad("Python: attachment %d: %s %q %d bytes, want %q %q %d bytes", i+1, quotePtr(got.Name), got.ContentType, len(got.Data), name, mt, len(a.Data))
			}
		}
	}
	if len(py.Defects) > 0 {
		bad("Python: defects %v", py.Defects)
	}
	return probs
}

// pyAddrsRead returns Python's addresses with each addr-spec as net/mail reads it: Python keeps
// a quoted local part quoted ("j smith"@x), net/mail does not (j smith@x); both name the same
// mailbox.
func pyAddrsRead(list []pyAddress) []pyAddress {
	out := make([]pyAddress, len(list))
	for i, a := range list {
		out[i] = a
		if p, err := netmail.ParseAddress("<" + a.Address + ">"); err == nil {
			out[i].Address = p.Address
		}
	}
	return out
}

// limitProblem matches the problems Parse records when it holds a value to the store's limits.
var limitProblem = regexp.MustCompile(`^(From|To|Cc): the name of .* is too long; the bare address is kept$|^attachment \d+: file name of \d+ bytes cut to \d+$|^Subject: \d+ bytes; cut to \d+$`)

// sameList reports whether two lists hold the same values, nil and empty being the same.
func sameList[T any](a, b []T) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

// mediaType returns the media type of a content type, as both parsers report it.
func mediaType(ctype string) string {
	if ctype == "" {
		return "application/octet-stream"
	}
	mt, _, _ := mime.ParseMediaType(ctype)
	return mt
}

func quotePtr(s *string) string {
	if s == nil {
		return "none"
	}
	return fmt.Sprintf("%q", clip(*s))
}

// clip shortens a long value for a failure message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:100] + fmt.Sprintf("…(%d bytes)…", len(s)-200) + s[len(s)-100:]
	}
	return s
}
