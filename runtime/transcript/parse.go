package transcript

import (
	"fmt"
	"strings"

	"github.com/personagen/personagen/runtime/chat"
)

// ParseError is the error Parse returns for text it cannot read. Line is the 1-based line
// number the problem was found on and Msg says what is wrong there.
type ParseError struct {
	Line int
	Msg  string
}

// Error renders "line 12: msg".
func (e *ParseError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

// Parse reads a transcript (the format: docs/transcript.md) into messages.
//
// Block headers ("user:" alone on a line) and inline headers ("user: hello", text trimmed of
// surrounding blanks) start system, user and assistant messages; blank lines at either edge of
// a message's text (or of each text run between part lines) are dropped; "\"-escaped lines lose
// one backslash; fenced code blocks are kept verbatim. A file whose line breaks are all "\r\n"
// is read as if they were "\n"; otherwise a '\r' is content. A UTF-8 byte order mark at the
// very start of text is dropped (one anywhere else is content).
//
// Parse returns a *ParseError naming the line for: text before the first header or after a
// function_call_output line, a "tool:" header, a function_call or provider_state line outside an
// assistant message, a part line outside a system/user/assistant message, text or a part after
// an assistant's function_call lines, text, a part or a function_call after its provider_state
// lines, a function_call / function_call_output / part / provider_state line whose JSON is
// invalid, lacks a required key, has an unknown key or names an unknown part type, and a code
// fence that is never closed. An empty or blank text yields
// no messages and no error. It re-creates scout-ai's Chat.parse (seed 002) for the four roles.
func Parse(text string) ([]chat.Message, error) {
	text = strings.TrimPrefix(text, "\ufeff") // a byte order mark some editors write; Print never does
	if strings.Contains(text, "\r\n") && strings.Count(text, "\n") == strings.Count(text, "\r\n") {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	p := parser{}
	var (
		fenceCh   byte
		fenceN    int
		fenceLine int
	)
	lineNo := 0
	for rest := text; rest != "" || lineNo == 0; {
		var line string
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			line, rest = rest, ""
		}
		lineNo++
		if fenceN > 0 {
			if err := p.content(lineNo, line, true); err != nil {
				return nil, err
			}
			if fenceClose(fenceCh, fenceN, line) {
				fenceN = 0
			}
			continue
		}
		if isEscaped(line) {
			if err := p.content(lineNo, line[1:], true); err != nil {
				return nil, err
			}
			continue
		}
		if kw, inline, ok := headerKeyword(line); ok {
			if err := p.header(lineNo, kw, inline); err != nil {
				return nil, err
			}
			continue
		}
		if ch, n, ok := fenceOpen(line); ok {
			if err := p.content(lineNo, line, true); err != nil {
				return nil, err
			}
			fenceCh, fenceN, fenceLine = ch, n, lineNo
			continue
		}
		if err := p.content(lineNo, line, false); err != nil {
			return nil, err
		}
	}
	if fenceN > 0 {
		return nil, &ParseError{Line: fenceLine, Msg: fmt.Sprintf("code fence %s opened here is never closed",
			strings.Repeat(string(fenceCh), fenceN))}
	}
	p.closeMessage()
	return p.msgs, nil
}

// parser holds the messages read so far and the message being read.
type parser struct {
	msgs []chat.Message
	open bool // a system/user/assistant message is being read
	// afterOutput is the line of the last function_call_output when no message is open
	// since; 0 otherwise.
	afterOutput int

	role     chat.Role
	seg      []segLine   // the current run of text lines
	items    []chat.Part // text runs (as text parts) and part lines, in order
	partLine bool        // the message had a part line, so its content is items
	calls    []chat.ToolCall
	states   []chat.ProviderState
}

// segLine is one text line of a message; protected lines (escaped, inline, or inside a fence)
// are never trimmed as blank.
type segLine struct {
	text      string
	protected bool
}

func (p *parser) content(lineNo int, line string, protected bool) error {
	blank := !protected && isBlank(line)
	switch {
	case p.open && (len(p.calls) > 0 || len(p.states) > 0):
		if blank {
			return nil
		}
		what := "function_call"
		if len(p.states) > 0 {
			what = "provider_state"
		}
		return &ParseError{Line: lineNo, Msg: "text after " + what + " lines; start a new message with a role header"}
	case p.open:
		p.seg = append(p.seg, segLine{text: line, protected: protected})
		return nil
	case blank:
		return nil
	case p.afterOutput > 0:
		return &ParseError{Line: lineNo, Msg: fmt.Sprintf(
			"text after the function_call_output on line %d; start a new message with a role header", p.afterOutput)}
	default:
		return &ParseError{Line: lineNo, Msg: "text before the first role header (system:, user: or assistant:)"}
	}
}

func (p *parser) header(lineNo int, kw, inline string) error {
	switch kw {
	case kwSystem, kwUser, kwAssistant:
		p.closeMessage()
		p.open, p.role = true, chat.Role(kw)
		if t := strings.Trim(inline, " \t\r"); t != "" {
			p.seg = append(p.seg, segLine{text: t, protected: true})
		}
		return nil
	case kwTool:
		return &ParseError{Line: lineNo, Msg: `"tool:" is not a message header; write a tool result as function_call_output: {"id":…,"content":…}`}
	case kwCall:
		if !p.open || p.role != chat.RoleAssistant {
			return &ParseError{Line: lineNo, Msg: "function_call outside an assistant message; put it under an assistant: header"}
		}
		if len(p.states) > 0 {
			return &ParseError{Line: lineNo, Msg: "function_call after provider_state lines; an assistant's calls come before its provider state"}
		}
		c, err := decodeCall(inline)
		if err != nil {
			return &ParseError{Line: lineNo, Msg: "function_call: " + err.Error()}
		}
		p.flushText()
		p.calls = append(p.calls, c)
		return nil
	case kwOutput:
		m, err := decodeOutput(inline)
		if err != nil {
			return &ParseError{Line: lineNo, Msg: "function_call_output: " + err.Error()}
		}
		p.closeMessage()
		p.msgs = append(p.msgs, m)
		p.afterOutput = lineNo
		return nil
	case kwState:
		if !p.open || p.role != chat.RoleAssistant {
			return &ParseError{Line: lineNo, Msg: "provider_state outside an assistant message; put it under an assistant: header"}
		}
		st, err := decodeState(inline)
		if err != nil {
			return &ParseError{Line: lineNo, Msg: "provider_state: " + err.Error()}
		}
		p.flushText()
		p.states = append(p.states, st)
		return nil
	default: // kwPart
		switch {
		case !p.open:
			return &ParseError{Line: lineNo, Msg: "part outside a message; put it under a system:, user: or assistant: header"}
		case len(p.calls) > 0:
			return &ParseError{Line: lineNo, Msg: "part after function_call lines; parts come before an assistant's calls"}
		case len(p.states) > 0:
			return &ParseError{Line: lineNo, Msg: "part after provider_state lines; parts come before an assistant's provider state"}
		}
		part, err := decodePart(inline)
		if err != nil {
			return &ParseError{Line: lineNo, Msg: "part: " + err.Error()}
		}
		p.flushText()
		p.items = append(p.items, part)
		p.partLine = true
		return nil
	}
}

// flushText turns the current run of text lines, trimmed of unprotected blank lines at both
// edges, into a text item; a run that trims to nothing adds none.
func (p *parser) flushText() {
	seg := p.seg
	for len(seg) > 0 && !seg[0].protected && isBlank(seg[0].text) {
		seg = seg[1:]
	}
	for len(seg) > 0 && !seg[len(seg)-1].protected && isBlank(seg[len(seg)-1].text) {
		seg = seg[:len(seg)-1]
	}
	if len(seg) > 0 {
		var b strings.Builder
		for i, l := range seg {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(l.text)
		}
		p.items = append(p.items, chat.TextPart(b.String()))
	}
	p.seg = p.seg[:0]
}

// closeMessage appends the open message, if any, and resets the per-message state.
func (p *parser) closeMessage() {
	if !p.open {
		return
	}
	p.flushText()
	m := chat.Message{Role: p.role, ToolCalls: p.calls, State: p.states}
	switch {
	case p.partLine:
		m.Parts = p.items
	case len(p.items) == 1:
		m.Text = p.items[0].Text
	}
	p.msgs = append(p.msgs, m)
	p.open, p.role, p.items, p.partLine, p.calls, p.states, p.afterOutput = false, "", nil, false, nil, nil, 0
}
