package transcript

import (
	"strings"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime/chat"
)

// Print renders msgs in the transcript format, one message after another with a blank line
// between them (except between consecutive tool messages, so a round's results stay together)
// and a newline after the last; an empty list prints as "".
//
// A system, user or assistant message prints as its role header alone on a line ("user:")
// followed by its content: text as raw lines (escaped where Parse would misread them, see
// docs/transcript.md), each non-text part as a "part: {json}" line, then one
// "function_call: {json}" line per tool call and one "provider_state: {json}" line per State
// item. A tool message prints as one "function_call_output: {json}" line, with "is_error":true
// when IsError is set. Print never uses the inline header form.
//
// Print is deterministic (no maps, no clock) and Parse(Print(msgs)) equals msgs (message by
// message under chat.Message.Equal) for every list in its domain: roles are the four defined roles,
// ToolCalls and State appear only on assistant messages, ToolCallID and IsError only on tool
// messages, every tool-call Input is empty or a JSON object, every State Data is empty or
// valid JSON, every part type is text, image or document, and
// strings that travel inside JSON (ids, names, tool results, filenames, media types, provider
// names, and a text part printed as JSON) are valid UTF-8, since JSON cannot carry other bytes (encoding/json
// writes U+FFFD for them). Message text printed as raw lines carries any bytes, invalid UTF-8
// included. Outside the domain Print still writes deterministic text, which Parse may reject
// or read back differently. It re-creates scout-ai's Chat.print (seed 002) with an exact
// escape rule.
func Print(msgs []chat.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 && (m.Role != chat.RoleTool || msgs[i-1].Role != chat.RoleTool) {
			b.WriteByte('\n')
		}
		if m.Role == chat.RoleTool {
			b.WriteString(kwOutput + ": ")
			appendOutput(&b, m)
			b.WriteByte('\n')
			continue
		}
		b.WriteString(string(m.Role))
		b.WriteString(":\n")
		if len(m.Parts) > 0 {
			printParts(&b, m.Parts)
		} else {
			printText(&b, m.Text)
		}
		for _, c := range m.ToolCalls {
			b.WriteString(kwCall + ": ")
			appendCall(&b, c)
			b.WriteByte('\n')
		}
		for _, st := range m.State {
			b.WriteString(kwState + ": ")
			appendState(&b, st)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// printParts writes a part list. A text part is written as raw lines when it is non-empty and
// the part before it was not written as raw text (two raw texts in a row would merge into one
// when parsed); otherwise it is written as a part line. When a text part holds invalid UTF-8,
// which a part line cannot carry, its neighbour yields the raw form to it.
func printParts(b *strings.Builder, parts []chat.Part) {
	prevRaw := false
	for i, p := range parts {
		if p.Type == chat.PartText && p.Text != "" && !prevRaw &&
			(!utf8.ValidString(p.Text) || !needsRaw(parts, i+1)) {
			printText(b, p.Text)
			prevRaw = true
			continue
		}
		b.WriteString(kwPart + ": ")
		appendJSON(b, toWire(p))
		b.WriteByte('\n')
		prevRaw = false
	}
}

// needsRaw reports whether parts[i] exists and is a text part that only the raw form carries
// exactly (it holds invalid UTF-8).
func needsRaw(parts []chat.Part, i int) bool {
	return i < len(parts) && parts[i].Type == chat.PartText && parts[i].Text != "" &&
		!utf8.ValidString(parts[i].Text)
}

// printText writes text as lines, each followed by '\n'; empty text writes nothing. Lines of a
// fenced code block whose closing fence is also in text are written as they are. Every other
// line gets one extra leading backslash when Parse would otherwise misread it: a header line
// (system:, user:, assistant:, tool:, function_call:, function_call_output:, part:), a line of
// backslashes followed by something escape-shaped (so that Parse's unescaping is undone
// exactly), a fence opener that is never closed inside text, and a blank first or last line
// (which Parse would trim).
func printText(b *strings.Builder, text string) {
	if text == "" {
		return
	}
	lines := strings.Split(text, "\n")
	last := len(lines) - 1
	var closers *closerIndex
	for i := 0; i <= last; i++ {
		line := lines[i]
		if ch, n, ok := fenceOpen(line); ok {
			if closers == nil {
				closers = newCloserIndex(lines)
			}
			if j := closers.next(i, ch, n); j >= 0 {
				for _, l := range lines[i : j+1] {
					b.WriteString(l)
					b.WriteByte('\n')
				}
				i = j
				continue
			}
			b.WriteByte('\\')
		} else if _, _, hdr := headerKeyword(line); hdr || isEscaped(line) ||
			((i == 0 || i == last) && isBlank(line)) {
			b.WriteByte('\\')
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
}

// closerIndex finds closing fences in linear total time: for each line it knows the longest
// closing run of backticks and of tildes on any later line, so an opener that is never closed
// costs O(1) instead of a scan to the end of the text.
type closerIndex struct {
	lines []string
	// after[k][i] is the longest closer run of fence character k (0 '`', 1 '~') among
	// lines[i+1:].
	after [2][]int
}

func newCloserIndex(lines []string) *closerIndex {
	c := &closerIndex{lines: lines}
	for k, ch := range [2]byte{'`', '~'} {
		after := make([]int, len(lines))
		best := 0
		for i := len(lines) - 1; i >= 0; i-- {
			after[i] = best
			if r := closerRun(ch, lines[i]); r > best {
				best = r
			}
		}
		c.after[k] = after
	}
	return c
}

// next returns the index of the first line after lines[open] that closes a fence of n
// characters ch, or -1 when none does.
func (c *closerIndex) next(open int, ch byte, n int) int {
	k := 0
	if ch == '~' {
		k = 1
	}
	if c.after[k][open] < n {
		return -1
	}
	for j := open + 1; j < len(c.lines); j++ {
		if fenceClose(ch, n, c.lines[j]) {
			return j
		}
	}
	return -1
}

// closerRun returns the run length of ch when line could close a fence of ch (a run of at
// least three ch followed only by blanks), else 0.
func closerRun(ch byte, line string) int {
	k := 0
	for k < len(line) && line[k] == ch {
		k++
	}
	if k < 3 || !isBlank(line[k:]) {
		return 0
	}
	return k
}
