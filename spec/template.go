package spec

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// TemplateError is a template outside the subset: its position (of the
// offending {{, or of the scalar when exact columns cannot be known) and
// what is wrong.
type TemplateError struct {
	Pos     Pos
	Message string
}

// Error renders "file:line:col: message".
func (e *TemplateError) Error() string { return e.Pos.String() + ": " + e.Message }

var fieldRef = regexp.MustCompile(`^(\.[A-Za-z_][A-Za-z0-9_]*)+$`)

// Columns says how ParseTemplate positions a template's parts.
type Columns int

const (
	// ColumnsAtStart gives every part pos, the scalar's start: the value is
	// not spelled verbatim on one line of the file (it has escapes, or spans
	// lines), so character offsets in it are not columns.
	ColumnsAtStart Columns = iota
	// ColumnsExact gives each part its own column: the value is spelled
	// verbatim on pos's line from pos on (a single-line plain scalar, or a
	// quoted one without escapes, pos just after the opening quote), so a
	// part's column is pos.Col plus its offset in characters.
	ColumnsExact
)

// ParseTemplate parses src, the value of a template field whose scalar
// starts at pos, into literal and field parts, positioned as cols says.
// Allowed is literal text plus {{ .A.B }} with optional spaces inside the
// braces, for the fields in TemplateFields; everything else of Go's
// text/template (pipes, functions, actions, comments, trim markers) is an
// error, as is an unterminated {{. Adjacent literals are merged; an empty
// src gives no parts. All errors of src are returned. Its time is linear
// in len(src).
func ParseTemplate(src string, pos Pos, cols Columns) (Template, []*TemplateError) {
	t := Template{Raw: String{Value: src, Pos: pos}}
	var errs []*TemplateError
	// at converts a byte offset into a position. The offsets asked for
	// mostly grow, so it counts characters from the previous offset rather
	// than from the start: linear over the whole parse.
	lastOff, lastCol := 0, pos.Col
	at := func(byteOff int) Pos {
		if cols != ColumnsExact {
			return pos
		}
		if byteOff >= lastOff {
			lastCol += utf8.RuneCountInString(src[lastOff:byteOff])
		} else {
			lastCol -= utf8.RuneCountInString(src[byteOff:lastOff])
		}
		lastOff = byteOff
		p := pos
		p.Col = lastCol
		return p
	}
	unknown := make(map[string]string) // messages of unknown fields met so far
	lit := strings.Builder{}
	litStart := 0
	flush := func() {
		if lit.Len() > 0 {
			t.Parts = append(t.Parts, TemplatePart{Literal: lit.String(), Pos: at(litStart)})
			lit.Reset()
		}
	}
	i := 0
	for i < len(src) {
		j := strings.Index(src[i:], "{{")
		if j < 0 {
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteString(src[i:])
			break
		}
		if j > 0 {
			if lit.Len() == 0 {
				litStart = i
			}
			lit.WriteString(src[i : i+j])
		}
		open := i + j
		end := strings.Index(src[open+2:], "}}")
		if end < 0 {
			errs = append(errs, &TemplateError{Pos: at(open), Message: "unterminated {{ in template (a literal {{ cannot be written)"})
			break
		}
		inner := src[open+2 : open+2+end]
		next := open + 2 + end + 2
		action := strings.TrimSpace(inner)
		switch {
		case fieldRef.MatchString(action):
			path := strings.Split(action[1:], ".")
			if msg := checkField(path, unknown); msg != "" {
				errs = append(errs, &TemplateError{Pos: at(open), Message: msg})
			} else {
				flush()
				t.Parts = append(t.Parts, TemplatePart{Field: path, Pos: at(open)})
			}
		default:
			errs = append(errs, &TemplateError{Pos: at(open), Message: withOddRunes(fmt.Sprintf(
				"{{%s}} is outside the template subset: only {{ .Field.Chain }} references are allowed (no pipes, functions, actions or trim markers)", printable(inner)), "{{"+inner+"}}")})
		}
		i = next
	}
	flush()
	return t, errs
}

// LookupTemplateField returns the TemplateFields entry for path.
func LookupTemplateField(path []string) (TemplateField, bool) {
	i, ok := fieldIndex()[strings.Join(path, ".")]
	if !ok {
		return TemplateField{}, false
	}
	return TemplateFields[i], true
}

// fieldIndex maps a field's path joined with dots to its TemplateFields
// index; built once (TemplateFields is read-only).
var fieldIndex = sync.OnceValue(func() map[string]int {
	m := make(map[string]int, len(TemplateFields))
	for i, f := range TemplateFields {
		m[strings.Join(f.Path, ".")] = i
	}
	return m
})

// checkField returns why path is not a template field, or "". An unknown
// field's message suggests the nearest known one (by edit distance), or
// lists them all; messages are remembered in seen, keyed by the joined
// path, so a template repeating one unknown field costs one comparison.
func checkField(path []string, seen map[string]string) string {
	key := strings.Join(path, ".")
	if _, ok := fieldIndex()[key]; ok {
		return ""
	}
	if msg, ok := seen[key]; ok {
		return msg
	}
	name := "." + key
	best, bestD := "", 1<<30
	for _, f := range TemplateFields {
		if len(name) > 64 { // no field is near a name this long; spare the edit distance
			break
		}
		if d := levenshtein.ComputeDistance(name, f.Name()); d < bestD {
			best, bestD = f.Name(), d
		}
	}
	var msg string
	if bestD <= max(2, len(name)/4) {
		msg = fmt.Sprintf("unknown template field %s; did you mean %s?", name, best)
	} else {
		names := make([]string, len(TemplateFields))
		for i, f := range TemplateFields {
			names[i] = f.Name()
		}
		msg = fmt.Sprintf("unknown template field %s; known fields: %s", name, strings.Join(names, ", "))
	}
	seen[key] = msg
	return msg
}
