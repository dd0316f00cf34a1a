package spec

import (
	"fmt"
	"regexp"
	"strings"
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

// ParseTemplate parses src, the value of a template field whose scalar
// starts at pos, into literal and field parts. colExact says whether a
// character offset in src maps to the same offset in the file's line (a
// single-line plain scalar, or a quoted one without escapes: the caller
// passes pos just after the opening quote); when false every part gets
// pos. Allowed is literal text plus {{ .A.B }} with optional spaces inside
// the braces, for the fields in TemplateFields; everything else of Go's
// text/template (pipes, functions, actions, comments, trim markers) is an
// error, as is an unterminated {{. Adjacent literals are merged; an empty
// src gives no parts. All errors of src are returned.
func ParseTemplate(src string, pos Pos, colExact bool) (Template, []*TemplateError) {
	t := Template{Raw: String{Value: src, Pos: pos}}
	var errs []*TemplateError
	at := func(byteOff int) Pos {
		if !colExact {
			return pos
		}
		p := pos
		p.Col += utf8.RuneCountInString(src[:byteOff])
		return p
	}
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
			if msg := checkField(path); msg != "" {
				errs = append(errs, &TemplateError{Pos: at(open), Message: msg})
			} else {
				flush()
				t.Parts = append(t.Parts, TemplatePart{Field: path, Pos: at(open)})
			}
		default:
			errs = append(errs, &TemplateError{Pos: at(open), Message: fmt.Sprintf(
				"{{%s}} is outside the template subset: only {{ .Field.Chain }} references are allowed (no pipes, functions, actions or trim markers)", inner)})
		}
		i = next
	}
	flush()
	return t, errs
}

// LookupTemplateField returns the TemplateFields entry for path.
func LookupTemplateField(path []string) (TemplateField, bool) {
	for _, f := range TemplateFields {
		if strings.Join(f.Path, ".") == strings.Join(path, ".") {
			return f, true
		}
	}
	return TemplateField{}, false
}

func checkField(path []string) string {
	if _, ok := LookupTemplateField(path); ok {
		return ""
	}
	name := "." + strings.Join(path, ".")
	best, bestD := "", 1<<30
	for _, f := range TemplateFields {
		if d := levenshtein.ComputeDistance(name, f.Name()); d < bestD {
			best, bestD = f.Name(), d
		}
	}
	if bestD <= max(2, len(name)/4) {
		return fmt.Sprintf("unknown template field %s; did you mean %s?", name, best)
	}
	names := make([]string, len(TemplateFields))
	for i, f := range TemplateFields {
		names[i] = f.Name()
	}
	return fmt.Sprintf("unknown template field %s; known fields: %s", name, strings.Join(names, ", "))
}
