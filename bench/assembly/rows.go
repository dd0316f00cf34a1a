package assembly

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

// This file is the row conversion the peer pipelines share: what a user of langchaingo or eino
// writes to turn stored rows into conversation turns with the same text personagen replays
// (the turn text and tool rounds that runtime.ThreadHistory renders, runtime.Clip). It is deliberately not slow: texts
// are rendered into one pre-sized buffer, so the peers pay one allocation per message text.
// It relies on the rows' tool uses coming in recording order, as a SQL ORDER BY gives them.

// peerText renders m as runtime.ThreadHistory renders a turn (header block, trimmed body, attachment notes)
// and reports whether m has content.
func peerText(m *history.Message) (string, bool) {
	body := strings.TrimSpace(m.Text)
	if body == "" && m.HTML != "" {
		body = runtime.HTMLText(m.HTML)
	}
	if body == "" && len(m.Attachments) == 0 {
		return "", false
	}
	var date [len(time.RFC1123Z) + 8]byte
	d := m.Date.UTC().AppendFormat(date[:0], time.RFC1123Z)
	n := len("From: \nTo: \nCc: \nDate: \nSubject: \n\n") + len(m.From) + len(m.Subject) + len(d) + len(body)
	for _, a := range m.To {
		n += len(a) + 2
	}
	for _, a := range m.Cc {
		n += len(a) + 2
	}
	for _, a := range m.Attachments {
		n += len(a.Filename) + len(a.ContentType) + len(a.ID) + 48
	}
	b := make([]byte, 0, n)
	b = peerHeader(b, "From", m.From)
	b = peerList(b, "To", m.To)
	b = peerList(b, "Cc", m.Cc)
	b = append(b, "Date: "...)
	b = append(b, d...)
	b = append(b, '\n')
	b = peerHeader(b, "Subject", m.Subject)
	if body != "" {
		b = append(b, '\n')
		b = append(b, body...)
		b = append(b, '\n')
	}
	if len(m.Attachments) > 0 {
		b = append(b, '\n')
		for i, a := range m.Attachments {
			if i > 0 {
				b = append(b, '\n')
			}
			b = append(b, "[attachment: "...)
			b = append(b, peerOneLine(a.Filename)...)
			b = append(b, " ("...)
			b = append(b, peerOneLine(a.ContentType)...)
			b = append(b, ", "...)
			b = strconv.AppendInt(b, a.Size, 10)
			b = append(b, " bytes, id "...)
			b = append(b, peerOneLine(a.ID)...)
			b = append(b, ")]"...)
		}
		b = append(b, '\n')
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	return string(b), true
}

func peerHeader(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, ':')
	if v := peerOneLine(value); v != "" {
		b = append(b, ' ')
		b = append(b, v...)
	}
	return append(b, '\n')
}

func peerList(b []byte, name string, values []string) []byte {
	b = append(b, name...)
	b = append(b, ": "...)
	start := len(b)
	for i, v := range values {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, v...)
	}
	// Trim as runtime's header() trims the joined value; an empty value drops the space.
	if v := bytes.TrimSpace(b[start:]); len(v) == 0 {
		b = b[:start-1]
	} else {
		b = b[:start+copy(b[start:], v)]
	}
	return append(b, '\n')
}

// peerOneLine is runtime's oneLine: line breaks become spaces, the value is trimmed.
func peerOneLine(s string) string {
	if strings.ContainsAny(s, "\r\n\u2028\u2029") {
		s = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\u2028", " ", "\u2029", " ").Replace(s)
	}
	return strings.TrimSpace(s)
}

// peerClip is runtime.Clip: at most limit characters, the last 12 of them "…[truncated]" when
// s was cut. Like runtime.Clip it scans at most limit+1 characters.
func peerClip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	const marker = "…[truncated]"
	keep := limit - utf8.RuneCountInString(marker)
	n, cut := 0, 0
	for i := range s {
		if n == keep {
			cut = i
		}
		if n == limit {
			return s[:cut] + marker
		}
		n++
	}
	return s
}

// peerArguments is the replayed call input as text: the stored payload when it is a JSON object,
// "{}" when blank, otherwise {"_clipped_arguments": "<payload>"}.
func peerArguments(args string) string {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return "{}"
	}
	if trimmed[0] == '{' && json.Valid([]byte(trimmed)) {
		return args
	}
	var buf bytes.Buffer
	buf.WriteString(`{"_clipped_arguments":`)
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(args) // encoding a string cannot fail
	buf.Truncate(buf.Len() - 1)
	buf.WriteByte('}')
	return buf.String()
}

// peerRounds calls fn once per tool round of uses (consecutive uses sharing RunID and
// TurnIndex; the rows come in recording order, as a SQL ORDER BY gives them).
func peerRounds(uses []history.ToolUse, fn func(round []history.ToolUse)) {
	for start := 0; start < len(uses); {
		end := start + 1
		for end < len(uses) && uses[end].RunID == uses[start].RunID && uses[end].TurnIndex == uses[start].TurnIndex {
			end++
		}
		fn(uses[start:end])
		start = end
	}
}

// noResultText is what personagen replays for a call without a recorded result.
const noResultText = "[no result was recorded for this call]"

// peerResult is the text of a replayed tool message.
func peerResult(u *history.ToolUse) string {
	if !u.HasResult {
		return noResultText
	}
	return peerClip(u.Result, ResultLimit)
}

// readPrompt reads the system prompt as runtime.LoadFile contributes it: without a leading byte
// order mark and without the file's final line terminator.
func readPrompt(fsys fs.FS) ([]byte, error) {
	b, err := fs.ReadFile(fsys, PromptPath)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimPrefix(b, []byte("\ufeff"))
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n > 1 && b[n-2] == '\r' {
			b = b[:n-2]
		}
	}
	return b, nil
}
