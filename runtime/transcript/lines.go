package transcript

import "strings"

// The keywords Parse reads as headers when they start a line at column 0 followed by a colon.
// Every other "word:" line (foo_bar:, x1:, User:, meta:) is ordinary content.
const (
	kwSystem    = "system"
	kwUser      = "user"
	kwAssistant = "assistant"
	kwTool      = "tool"
	kwCall      = "function_call"
	kwOutput    = "function_call_output"
	kwPart      = "part"
	kwState     = "provider_state"
)

// headerKeyword reports whether line is a header line: it starts at column 0 with one of the
// reserved keywords immediately followed by ':'. It returns the keyword and the text after the
// colon.
func headerKeyword(line string) (kw, rest string, ok bool) {
	i := strings.IndexByte(line, ':')
	if i <= 0 {
		return "", "", false
	}
	switch w := line[:i]; w {
	case kwSystem, kwUser, kwAssistant, kwTool, kwCall, kwOutput, kwPart, kwState:
		return w, line[i+1:], true
	}
	return "", "", false
}

// isBlank reports whether s holds only spaces, tabs and carriage returns. Unprotected blank
// lines at either edge of a text block are trimmed by Parse.
func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// fenceOpen reports whether line opens a fenced code block: at column 0, a run of at least
// three backticks or three tildes; a backtick fence's info string may not contain a backtick
// (as in CommonMark, so "```x```" is inline code, not a fence). It returns the fence character
// and the run length.
func fenceOpen(line string) (ch byte, n int, ok bool) {
	if len(line) < 3 || (line[0] != '`' && line[0] != '~') {
		return 0, 0, false
	}
	ch = line[0]
	for n < len(line) && line[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, false
	}
	if ch == '`' && strings.IndexByte(line[n:], '`') >= 0 {
		return 0, 0, false
	}
	return ch, n, true
}

// fenceClose reports whether line closes a fence opened with n characters ch: at column 0, a
// run of at least n characters ch followed only by blanks.
func fenceClose(ch byte, n int, line string) bool {
	k := 0
	for k < len(line) && line[k] == ch {
		k++
	}
	return k >= n && isBlank(line[k:])
}

// escapeShaped reports whether a line, once its leading backslashes are removed, is one Parse
// treats specially outside a fence: a header, a blank line, or a fence opener. A content line
// starting with '\' whose remainder is escape-shaped loses exactly one leading backslash in
// Parse; Print adds one to every such line (the mboxrd "From " quoting scheme), so the two are
// exact inverses.
func escapeShaped(line string) bool {
	core := strings.TrimLeft(line, `\`)
	if _, _, ok := headerKeyword(core); ok {
		return true
	}
	if isBlank(core) {
		return true
	}
	_, _, ok := fenceOpen(core)
	return ok
}

// isEscaped reports whether line, outside a fence, is an escaped content line.
func isEscaped(line string) bool {
	return len(line) > 0 && line[0] == '\\' && escapeShaped(line)
}
