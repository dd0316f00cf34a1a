package spec

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	goccy "github.com/goccy/go-yaml"
	goccyparser "github.com/goccy/go-yaml/parser"
)

// yamlParserProblems are the messages of yaml.v3's parser (as opposed to
// its scanner). For them yaml.v3 reports the 0-based line of the enclosing
// construct (yaml.v3 decode.go, parser.fail), which we shift to 1-based;
// scanner errors already carry a 1-based line.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

var unknownAnchor = regexp.MustCompile(`^unknown anchor '(.*)' referenced$`)

// yamlError turns a yaml.v3 syntax error into a diagnostic. yaml.v3 gives
// a line (for parser errors that of the enclosing collection) and no
// column; the column is found where it can be (syntaxColumn), else it is 1.
// A line that starts with a tab and a surrogate escape get a hint, since
// yaml.v3's own messages do not say what is wrong.
func yamlError(name string, src *source, data []byte, err error) Diagnostic {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line := 1
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		if yamlParserProblems[msg] {
			line++
		}
	}
	if m := unknownAnchor.FindStringSubmatch(msg); m != nil {
		line, col := findAlias(src, m[1])
		return Diagnostic{Pos: Pos{File: name, Line: line, Col: col}, Message: fmt.Sprintf("alias *%s refers to no anchor; write &%s on a value before it", m[1], m[1])}
	}
	if line > len(src.lines) {
		line = max(1, len(src.lines))
	}
	col := 0
	switch msg {
	case "found character that cannot start any token":
		col = badTokenStart(src.line(line))
	case "found a tab character that violates indentation":
		// yaml.v3 reports the line of the scalar the tab interrupts.
		for l := line; l <= len(src.lines) && l < line+100; l++ {
			if c := indentTab(src.line(l)); c > 0 {
				line, col = l, c
				break
			}
		}
	case "found invalid Unicode character escape code":
		if l, c, hint := badUnicodeEscape(src, line); hint != "" {
			line, col = l, c
			msg += "; " + hint
		}
	}
	if col == 0 {
		col = goccyColumn(data, line)
		if col > 0 && msg == "mapping values are not allowed in this context" {
			// goccy points at the scalar before the colon; the colon is the error.
			col = valueIndicator(src.line(line), col)
		}
	}
	if indentTab(src.line(line)) > 0 {
		msg += "; YAML indents with spaces, not tabs"
	}
	if k, v, ok := gluedKey(src.line(line)); ok && msg == "could not find expected ':'" {
		msg += fmt.Sprintf("; a colon needs a space after it to end a key: write %s: %s", k, v)
	}
	return Diagnostic{Pos: Pos{File: name, Line: line, Col: max(col, 1)}, Message: "invalid YAML: " + msg}
}

// indentTab returns the column of the first tab in line's indentation
// (the spaces and tabs before its first other character), or 0.
func indentTab(line []rune) int {
	for i, r := range line {
		switch r {
		case '\t':
			return i + 1
		case ' ':
		default:
			return 0
		}
	}
	return 0
}

// gluedKey reports whether line, after its indentation and any "- ", is a
// plain "key:value" with no space after the colon, which YAML reads as one
// string; it returns the key and the value.
func gluedKey(line []rune) (string, string, bool) {
	t := strings.TrimLeft(string(line), " ")
	for strings.HasPrefix(t, "- ") {
		t = strings.TrimLeft(t[2:], " ")
	}
	k, v, ok := strings.Cut(t, ":")
	if !ok || k == "" || v == "" || v[0] == ' ' || v[0] == '\t' || strings.ContainsAny(k, " \t\"'{}[],#&*!|>%@`") {
		return "", "", false
	}
	return k, v, true
}

// badTokenStart returns the column of the first character on line that
// cannot start a YAML token: a tab in the indentation, or @ or ` where a
// token starts (both are reserved). It returns 0 when there is none.
func badTokenStart(line []rune) int {
	for i, r := range line {
		if r == '\t' {
			return i + 1
		}
		if r != ' ' {
			break
		}
	}
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return 0
		case r == '"' || r == '\'':
			if i == 0 || strings.ContainsRune(" \t[{,:-?", line[i-1]) {
				quote = r
			}
		case r == '@' || r == '`':
			if i == 0 || strings.ContainsRune(" \t[{,", line[i-1]) {
				return i + 1
			}
		}
	}
	return 0
}

// valueIndicator returns the column of the first ": " (or ":" ending the
// line) at or after column col, outside quotes; col itself when there is
// none.
func valueIndicator(line []rune, col int) int {
	var quote rune
	for i := col - 1; i >= 0 && i < len(line); i++ {
		r := line[i]
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == ':' && (i+1 == len(line) || line[i+1] == ' ' || line[i+1] == '\t'):
			return i + 1
		}
	}
	return col
}

var unicodeEscape = regexp.MustCompile(`\\(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8})`)

// badUnicodeEscape finds the first \u or \U escape on line or the lines
// after it (a quoted string may span lines; yaml.v3 reports the line where
// it starts) that is not a character: a UTF-16 surrogate (\ud83d, half of
// a pair JSON would use) or a code point above U+10FFFF, and says what to
// write instead. YAML has no surrogate pairs: a character above U+FFFF is
// written \UXXXXXXXX.
func badUnicodeEscape(src *source, line int) (int, int, string) {
	for l := line; l <= len(src.lines) && l < line+100; l++ {
		text := string(src.line(l))
		for _, loc := range unicodeEscape.FindAllStringIndex(text, -1) {
			esc := text[loc[0]:loc[1]]
			v, _ := strconv.ParseUint(esc[2:], 16, 32)
			r := rune(v)
			col := utf8.RuneCountInString(text[:loc[0]]) + 1
			switch {
			case r >= 0xD800 && r <= 0xDBFF && strings.HasPrefix(text[loc[1]:], `\u`) && len(text) >= loc[1]+6:
				lo, err := strconv.ParseUint(text[loc[1]+2:loc[1]+6], 16, 32)
				if err == nil && lo >= 0xDC00 && lo <= 0xDFFF {
					c := (r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
					return l, col, fmt.Sprintf("%s%s is a UTF-16 surrogate pair, which YAML does not have; write \\U%08X (%s) or the character itself", esc, text[loc[1]:loc[1]+6], c, codePoint(c))
				}
				fallthrough
			case r >= 0xD800 && r <= 0xDFFF:
				return l, col, fmt.Sprintf("%s is half of a UTF-16 surrogate pair, not a character; write \\U followed by 8 hex digits, or the character itself", esc)
			case r > utf8.MaxRune:
				return l, col, fmt.Sprintf("%s is above U+10FFFF, the last Unicode character", esc)
			}
		}
	}
	return 0, 0, ""
}

// findAlias returns the position of the first alias *name in src, or 1:1.
func findAlias(src *source, name string) (int, int) {
	want := "*" + name
	for l, line := range src.lines {
		text := string(line)
		for off := 0; ; {
			j := strings.Index(text[off:], want)
			if j < 0 {
				break
			}
			i, end := off+j, off+j+len(want)
			if (i == 0 || strings.IndexByte(" \t[{,:-", text[i-1]) >= 0) && (end == len(text) || strings.IndexByte(" \t]},", text[end]) >= 0) {
				return l + 1, utf8.RuneCountInString(text[:i]) + 1
			}
			off = i + 1
		}
	}
	return 1, 1
}

// maxGoccyNesting bounds the nesting of inputs handed to goccy/go-yaml,
// whose parser recurses per level.
const maxGoccyNesting = 1000

// goccyColumn asks goccy/go-yaml, a second YAML parser that reports
// columns, where the syntax error is; its column is used when it places the
// error on the same line as yaml.v3 (the two parsers can disagree on what
// the first error is), else goccyColumn returns 0. Inputs nested deeper
// than maxGoccyNesting are not handed to it.
func goccyColumn(data []byte, line int) (col int) {
	if nesting(data) > maxGoccyNesting {
		return 0
	}
	defer func() {
		if recover() != nil {
			col = 0
		}
	}()
	_, err := goccyparser.ParseBytes(data, 0)
	var se *goccy.SyntaxError
	if !errors.As(err, &se) || se.Token == nil || se.Token.Position == nil || se.Token.Position.Line != line {
		return 0
	}
	col = se.Token.Position.Column
	if line == 1 && len(data) >= 3 && string(data[:3]) == string(utf8BOM) {
		col-- // goccy counts the byte order mark as a column; yaml.v3 does not
	}
	return col
}

// nesting returns an upper bound of data's nesting depth: the deepest
// unclosed [ and {, or the longest run of indentation and indicators
// (" ", "-", "?", ":") that starts a line.
func nesting(data []byte) int {
	depth, deepest, run, lineStart := 0, 0, 0, true
	for _, c := range data {
		switch c {
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		}
		switch {
		case c == '\n' || c == '\r':
			lineStart, run = true, 0
		case lineStart && (c == ' ' || c == '-' || c == '?' || c == ':' || c == '\t'):
			run++
			deepest = max(deepest, run)
		default:
			lineStart = false
		}
	}
	return deepest
}
