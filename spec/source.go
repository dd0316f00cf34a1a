package spec

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// source is a spec file's text split into lines as YAML counts them (\n,
// \r\n or a lone \r ends a line), each line as runes, so a 1-based column
// as yaml.v3 reports it (in characters) indexes it directly. A UTF-8 byte
// order mark at the start is not part of line 1: yaml.v3 does not count it.
type source struct {
	lines [][]rune
}

func newSource(data []byte) *source {
	data = bytes.TrimPrefix(data, utf8BOM)
	s := &source{}
	start := 0
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case '\n':
			s.lines = append(s.lines, []rune(string(data[start:i])))
			start = i + 1
		case '\r':
			s.lines = append(s.lines, []rune(string(data[start:i])))
			if i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	s.lines = append(s.lines, []rune(string(data[start:])))
	return s
}

// line returns line n (1-based), or nil when there is none.
func (s *source) line(n int) []rune {
	if n < 1 || n > len(s.lines) {
		return nil
	}
	return s.lines[n-1]
}

// spells reports whether the text at line:col (1-based) starts with v.
// It costs O(len(v)), whatever the line's length.
func (s *source) spells(line, col int, v string) bool {
	l := s.line(line)
	i := col - 1
	if i < 0 || i > len(l) {
		return false
	}
	for _, r := range v {
		if i >= len(l) || l[i] != r {
			return false
		}
		i++
	}
	return true
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// maxTextDiagnostics bounds how many bad characters one file reports.
const maxTextDiagnostics = 10

// checkText reports what makes data unusable as a spec's text before YAML
// sees it: an encoding other than UTF-8 (a UTF-16 or UTF-32 byte order
// mark, or the first byte that is not valid UTF-8, at its line and
// column), and characters YAML does not allow in a file or that YAML
// parsers disagree on, each named by its code point: C0 and C1 control
// characters other than tab, line feed and carriage return; DEL; U+FFFE and
// U+FFFF; and NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR, which YAML 1.1
// (and yaml.v3) read as line breaks but YAML 1.2 and editors do not, so
// every later line number would be off.
func checkText(name string, data []byte) []Diagnostic {
	at := func(line, col int, format string, args ...any) Diagnostic {
		return Diagnostic{Pos: Pos{File: name, Line: line, Col: col}, Message: fmt.Sprintf(format, args...)}
	}
	for _, bom := range []struct {
		mark []byte
		enc  string
	}{
		{[]byte{0x00, 0x00, 0xFE, 0xFF}, "UTF-32"},
		{[]byte{0xFF, 0xFE, 0x00, 0x00}, "UTF-32"},
		{[]byte{0xFE, 0xFF}, "UTF-16"},
		{[]byte{0xFF, 0xFE}, "UTF-16"},
	} {
		if bytes.HasPrefix(data, bom.mark) {
			return []Diagnostic{at(1, 1, "the file is %s (it starts with a %s byte order mark); save it as UTF-8", bom.enc, bom.enc)}
		}
	}
	var diags []Diagnostic
	line, col := 1, 1
	rest := bytes.TrimPrefix(data, utf8BOM)
	for len(rest) > 0 {
		r, size := utf8.DecodeRune(rest)
		if r == utf8.RuneError && size <= 1 {
			return append(diags, at(line, col, "the file is not UTF-8: byte 0x%02X cannot start or continue a UTF-8 character (is the file Latin-1 or Windows-1252?); save it as UTF-8", rest[0]))
		}
		rest = rest[size:]
		switch {
		case r == '\n':
			line, col = line+1, 1
			continue
		case r == '\r':
			if len(rest) > 0 && rest[0] == '\n' {
				rest = rest[1:]
			}
			line, col = line+1, 1
			continue
		case len(diags) >= maxTextDiagnostics:
		case r == 0x85 || r == 0x2028 || r == 0x2029:
			diags = append(diags, at(line, col, "%s is a line break to YAML 1.1 parsers (yaml.v3 among them) but not to YAML 1.2 or editors, so line numbers would disagree; remove it, or write %s in a double-quoted string",
				codePoint(r), map[rune]string{0x85: `\N`, 0x2028: `\L`, 0x2029: `\P`}[r]))
		case r < 0x20 && r != '\t' || r >= 0x7F && r <= 0x9F:
			diags = append(diags, at(line, col, "%s is a control character, which YAML does not allow in a file; remove it, or write %s in a double-quoted string", codePoint(r), escapeFor(r)))
		case r == 0xFFFE || r == 0xFFFF:
			diags = append(diags, at(line, col, "%s is not a character; remove it", codePoint(r)))
		}
		col++
	}
	return diags
}

// escapeFor returns the YAML double-quoted escape for a control character.
func escapeFor(r rune) string {
	switch r {
	case 0:
		return `\0`
	case 7:
		return `\a`
	case 8:
		return `\b`
	case 0x0B:
		return `\v`
	case 0x0C:
		return `\f`
	case 0x1B:
		return `\e`
	}
	return fmt.Sprintf(`\x%02X`, r)
}

// yamlDirectives handles %YAML directives before the first document: a
// spec is read as YAML 1.2, so "%YAML 1.2" is accepted (and blanked into a
// comment, as yaml.v3 only parses 1.1 documents) and any other version is
// an error at the directive, as are a second %YAML directive and a
// directive not followed by a document start (---), which YAML requires
// (blanking would hide both from yaml.v3). It returns the data to parse.
func yamlDirectives(name string, data []byte) ([]byte, []Diagnostic) {
	off := 0
	if bytes.HasPrefix(data, utf8BOM) {
		off = len(utf8BOM)
	}
	at := func(line int, format string, args ...any) []Diagnostic {
		return []Diagnostic{{Pos: Pos{File: name, Line: line, Col: 1}, Message: fmt.Sprintf(format, args...)}}
	}
	var out []byte
	yamlLine := 0 // the line of the %YAML directive, once seen
	for n := 1; off < len(data); n++ {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			end = len(data) - off
		}
		line := strings.TrimRight(string(data[off:off+end]), "\r")
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
		case strings.HasPrefix(line, "%YAML"):
			f := strings.Fields(strings.SplitN(line, "#", 2)[0])
			if len(f) != 2 || f[0] != "%YAML" || f[1] != "1.2" {
				version := strings.TrimSpace(strings.TrimPrefix(line, "%YAML"))
				return nil, at(n, "%%YAML %s: a spec is read as YAML 1.2 (core schema: yes and no are strings, 010 is not octal); remove the directive, or write %%YAML 1.2", version)
			}
			if yamlLine > 0 {
				return nil, at(n, "a second %%YAML directive (the first is on line %d); remove one", yamlLine)
			}
			yamlLine = n
			if out == nil {
				out = bytes.Clone(data)
			}
			out[off] = '#'
		case strings.HasPrefix(line, "%"):
			// %TAG and reserved directives: yaml.v3 handles or refuses them.
		default:
			if yamlLine > 0 && !strings.HasPrefix(line, "---") {
				return nil, at(n, "the %%YAML directive on line %d must be followed by a document start: write --- before this line", yamlLine)
			}
			if out == nil {
				return data, nil
			}
			return out, nil
		}
		off += end + 1
	}
	if out == nil {
		return data, nil
	}
	return out, nil
}
