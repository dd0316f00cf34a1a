package assembly

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// Baseline is the hand-written reference of request assembly: the tightest plain Go we could
// write that builds the same messages from the same rows, importing only the message types
// (chat.Message and chat.ToolCall for the output, history.Message for the rows) and the
// standard library — no resolver chain, no history source, no template, no runtime function.
// It is the physical limit of this work, which the generated pipeline is measured against;
// TestBaselineMatchesPipeline holds that it produces exactly the pipeline's messages.
//
// Per request it makes a handful of allocations: the prompt file's bytes, the record text (the
// host's), one message slice, one slice of every tool call, one string arena holding every
// text it renders (the prompt, the 50 history texts and the clipped results; each message's
// Text is a substring of it) and one byte arena holding every call input. Unclipped results
// are the rows' own strings.
//
// It handles what the fixture's rows hold and refuses, with an error, rows it would have to
// render differently: an HTML-only body (the pipeline converts it with an HTML-to-text
// library), tool uses out of recording order (the pipeline sorts them) and a call id that is
// empty or repeats one of its round (the pipeline renames it).
type Baseline struct {
	f *Fixture
}

// NewBaseline returns the hand-written assembly of f's request.
func NewBaseline(f *Fixture) *Baseline { return &Baseline{f: f} }

// The literal texts the replay writes (the pipeline's runtime.TruncationMarker, clipped-arguments
// key and date layout, restated).
const (
	baseMarker    = "…[truncated]"
	baseMarkerLen = 12 // characters
	baseClipped   = `{"_clipped_arguments":`
	baseDate      = time.RFC1123Z
)

// span is where a message's text lies in the string arena.
type span struct{ msg, start, end int }

// Build assembles the request's messages: the prompt file, the sender's record, the replay of
// the thread's last HistoryMessages rows (the current message left out), the current message.
func (b *Baseline) Build(_ context.Context) ([]chat.Message, error) {
	f := b.f
	prompt, err := fs.ReadFile(f.Files, PromptPath)
	if err != nil {
		return nil, err
	}
	prompt = bytes.TrimPrefix(prompt, []byte("\ufeff"))
	if n := len(prompt); n > 0 && prompt[n-1] == '\n' {
		prompt = prompt[:n-1]
		if n > 1 && prompt[n-2] == '\r' {
			prompt = prompt[:n-2]
		}
	}
	acct, ok := f.Env.Lookup(f.Current.From)
	if !ok {
		return nil, errors.New("baseline: no account for the sender")
	}
	record := acct.LLMText()

	// The window: the last HistoryMessages rows that are not the current message.
	start, kept := len(f.Rows), 0
	for start > 0 && kept < HistoryMessages {
		start--
		if f.Rows[start].MessageID != f.Current.MessageID {
			kept++
		}
	}
	rows := f.Rows[start:]

	// Sizes first, so every buffer is allocated once; where each long result is cut (-1: not
	// at all) is found on the way, once, in row order.
	var cutsBuf [64]int
	cuts := cutsBuf[:0]
	nMsgs, nCalls, nText, nInput := 3, 0, len(prompt), 0
	for i := range rows {
		m := &rows[i]
		if m.MessageID == f.Current.MessageID {
			continue
		}
		nMsgs++
		nText += 96 + len(m.From) + len(m.Subject) + len(m.Text)
		for _, a := range m.To {
			nText += len(a) + 2
		}
		for _, a := range m.Cc {
			nText += len(a) + 2
		}
		for _, a := range m.Attachments {
			nText += 64 + len(a.Filename) + len(a.ContentType) + len(a.ID)
		}
		for k := range m.ToolUses {
			u := &m.ToolUses[k]
			if k == 0 || u.RunID != m.ToolUses[k-1].RunID || u.TurnIndex != m.ToolUses[k-1].TurnIndex {
				nMsgs++ // the round's assistant message
			}
			nMsgs++
			nCalls++
			nInput += len(u.Arguments) + len(baseClipped) + 8
			if u.HasResult && len(u.Result) > ResultLimit { // never more characters than bytes
				cut, over := clipAt(u.Result)
				if over {
					nText += cut + len(baseMarker)
				} else {
					cut = -1
				}
				cuts = append(cuts, cut)
			}
		}
	}
	msgs := make([]chat.Message, 0, nMsgs)
	calls := make([]chat.ToolCall, 0, nCalls)
	inputs := make([]byte, 0, nInput)
	spans := make([]span, 0, nMsgs)
	var text strings.Builder
	text.Grow(nText)

	put := func(role chat.Role, write func()) {
		s := text.Len()
		write()
		spans = append(spans, span{len(msgs), s, text.Len()})
		msgs = append(msgs, chat.Message{Role: role})
	}
	put(chat.RoleSystem, func() { text.Write(prompt) })
	msgs = append(msgs, chat.Message{Role: chat.RoleSystem, Text: record})

	for i := range rows {
		m := &rows[i]
		if m.MessageID == f.Current.MessageID {
			continue
		}
		body := strings.TrimSpace(m.Text)
		if body == "" && m.HTML != "" {
			return nil, fmt.Errorf("baseline: message %s has an HTML-only body", m.MessageID)
		}
		if body != "" || len(m.Attachments) > 0 {
			role := chat.RoleUser
			if m.Direction == history.Outbound {
				role = chat.RoleAssistant
			}
			put(role, func() { writeHistoryText(&text, m, body) })
			spans[len(spans)-1].end-- // the last block's line break stays in the arena, unused
		}
		for k := 0; k < len(m.ToolUses); {
			end := k + 1
			for end < len(m.ToolUses) && m.ToolUses[end].RunID == m.ToolUses[k].RunID &&
				m.ToolUses[end].TurnIndex == m.ToolUses[k].TurnIndex {
				end++
			}
			round := m.ToolUses[k:end]
			first := len(calls)
			for j := range round {
				u := &round[j]
				if j > 0 && (u.Position <= round[j-1].Position || u.Seq < round[j-1].Seq) ||
					k > 0 && j == 0 && u.Seq < m.ToolUses[k-1].Seq {
					return nil, fmt.Errorf("baseline: tool uses of %s are not in recording order", m.MessageID)
				}
				if u.ToolCallID == "" {
					return nil, fmt.Errorf("baseline: a call of %s has no id", m.MessageID)
				}
				for _, c := range calls[first:] {
					if c.ID == u.ToolCallID {
						return nil, fmt.Errorf("baseline: call id %s repeats in its round", u.ToolCallID)
					}
				}
				s := len(inputs)
				inputs = appendInput(inputs, u.Arguments)
				calls = append(calls, chat.ToolCall{ID: u.ToolCallID, Name: u.ToolName, Input: inputs[s:len(inputs):len(inputs)]})
			}
			msgs = append(msgs, chat.Message{Role: chat.RoleAssistant, ToolCalls: calls[first:len(calls):len(calls)]})
			for j := range round {
				u := &round[j]
				switch {
				case !u.HasResult:
					msgs = append(msgs, chat.Message{Role: chat.RoleTool, Text: "[no result was recorded for this call]", ToolCallID: u.ToolCallID})
				case len(u.Result) > ResultLimit && cuts[0] >= 0:
					cut := cuts[0]
					put(chat.RoleTool, func() { text.WriteString(u.Result[:cut]); text.WriteString(baseMarker) })
					msgs[len(msgs)-1].ToolCallID = u.ToolCallID
				default:
					msgs = append(msgs, chat.Message{Role: chat.RoleTool, Text: u.Result, ToolCallID: u.ToolCallID})
				}
				if u.HasResult && len(u.Result) > ResultLimit {
					cuts = cuts[1:]
				}
			}
			k = end
		}
	}
	msgs = append(msgs, chat.Message{Role: chat.RoleUser, Text: f.Current.Text})

	all := text.String() // the builder's bytes, not a copy: every span is a substring
	for _, s := range spans {
		msgs[s.msg].Text = all[s.start:s.end]
	}
	return msgs, nil
}

// writeHistoryText writes the self-describing text of a replayed message followed by a line
// break: five header lines, the body, one note per attachment, blocks separated by a blank
// line.
func writeHistoryText(b *strings.Builder, m *history.Message, body string) {
	header(b, "From", m.From)
	listHeader(b, "To", m.To)
	listHeader(b, "Cc", m.Cc)
	var date [64]byte
	b.WriteString("Date: ")
	b.Write(m.Date.UTC().AppendFormat(date[:0], baseDate))
	b.WriteByte('\n')
	header(b, "Subject", m.Subject)
	if body != "" {
		b.WriteByte('\n')
		b.WriteString(body)
		b.WriteByte('\n')
	}
	if len(m.Attachments) > 0 {
		b.WriteByte('\n')
		for _, a := range m.Attachments {
			b.WriteString("[attachment: ")
			b.WriteString(oneLine(a.Filename))
			b.WriteString(" (")
			b.WriteString(oneLine(a.ContentType))
			b.WriteString(", ")
			var n [20]byte
			b.Write(strconv.AppendInt(n[:0], a.Size, 10))
			b.WriteString(" bytes, id ")
			b.WriteString(oneLine(a.ID))
			b.WriteString(")]\n")
		}
	}
}

// header writes "Name: value\n", or "Name:\n" when the value is blank; line breaks inside the
// value become spaces.
func header(b *strings.Builder, name, value string) {
	b.WriteString(name)
	b.WriteByte(':')
	if v := oneLine(value); v != "" {
		b.WriteByte(' ')
		b.WriteString(v)
	}
	b.WriteByte('\n')
}

// listHeader writes the header of values joined with ", ", made one line and trimmed as a
// whole: written piece by piece when that gives the same text, joined first otherwise.
func listHeader(b *strings.Builder, name string, values []string) {
	if !plainList(values) {
		header(b, name, strings.Join(values, ", "))
		return
	}
	b.WriteString(name)
	b.WriteString(": ")
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v)
	}
	b.WriteByte('\n')
}

// plainList reports whether values joined with ", " are already one trimmed, non-empty line.
func plainList(values []string) bool {
	if len(values) == 0 {
		return false
	}
	for _, v := range values {
		if hasBreak(v) {
			return false
		}
	}
	first, last := values[0], values[len(values)-1]
	if first == "" && len(values) == 1 || last == "" {
		return false
	}
	if first != "" {
		if r, _ := utf8.DecodeRuneInString(first); unicode.IsSpace(r) {
			return false
		}
	}
	r, _ := utf8.DecodeLastRuneInString(last)
	return !unicode.IsSpace(r)
}

// oneLine replaces line breaks by spaces and trims white space.
func oneLine(s string) string {
	if hasBreak(s) {
		s = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\u2028", " ", "\u2029", " ").Replace(s)
	}
	return strings.TrimSpace(s)
}

func hasBreak(s string) bool {
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

// clipAt returns where s is cut to keep ResultLimit characters with the marker, and whether s
// has more than ResultLimit characters at all. Eight ASCII bytes are stepped over at a time.
func clipAt(s string) (cut int, over bool) {
	const keep = ResultLimit - baseMarkerLen
	n, i := 0, 0 // n characters lie before byte i
	for i < len(s) {
		if i+8 <= len(s) && (s[i]|s[i+1]|s[i+2]|s[i+3]|s[i+4]|s[i+5]|s[i+6]|s[i+7]) < utf8.RuneSelf {
			if keep >= n && keep < n+8 {
				cut = i + keep - n
			}
			if ResultLimit < n+8 {
				return cut, true
			}
			n, i = n+8, i+8
			continue
		}
		if n == keep {
			cut = i
		}
		if n == ResultLimit {
			return cut, true
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
		}
		n++
	}
	return 0, false
}

// appendInput appends the replayed input of a stored argument payload: the payload itself when
// it is a JSON object, {} when blank, otherwise {"_clipped_arguments": "<payload>"}.
func appendInput(dst []byte, args string) []byte {
	t := strings.TrimSpace(args)
	switch {
	case t == "":
		return append(dst, "{}"...)
	case t[0] == '{' && t[len(t)-1] == '}' && json.Valid([]byte(t)):
		return append(dst, args...)
	}
	dst = append(dst, baseClipped...)
	dst = appendQuoted(dst, args)
	return append(dst, '}')
}

// appendQuoted appends s as a JSON string, as encoding/json writes it without HTML escaping:
// quotes, backslashes and control characters escaped, invalid UTF-8 as \ufffd, U+2028 and
// U+2029 escaped.
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			start = i + size
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
