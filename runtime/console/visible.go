package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Text a model or an email wrote may carry characters a reader cannot see but a terminal or a
// browser obeys: terminal escapes, bidi overrides that show "exe.pdf" for "fdp.exe", zero-width
// characters. Where such text is shown for a decision (a tool call's arguments, a note), those
// characters are made visible as their JSON escapes, by one rule: hidden.

// hidden reports whether r is shown as its escape: a control character (C0, DEL, C1), a format
// character (Cf: bidi embeddings, overrides and isolates, zero-width characters, tags), a line
// or paragraph separator, or U+FFFD (what an invalid byte reads as).
func hidden(r rune) bool {
	return r == unicode.ReplacementChar || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
}

// escape is r as JSON escapes it: \uXXXX in lower-case hex, a surrogate pair above U+FFFF.
func escape(r rune) string {
	if r > 0xFFFF {
		r1, r2 := utf16.EncodeRune(r)
		return fmt.Sprintf("\\u%04x\\u%04x", r1, r2)
	}
	return fmt.Sprintf("\\u%04x", r)
}

// Visible returns s with every hidden character — control (C0, DEL, C1, so line breaks and
// tabs too), format (bidi embeddings, overrides and isolates, zero-width characters, tags), line
// or paragraph separator, and U+FFFD (an invalid byte) — written as its JSON escape (`\u202e`;
// a surrogate pair above U+FFFF), so that text from a model or an email cannot move a terminal's
// cursor, recolour it or reorder what it shows. Every other character is kept.
func Visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		if hidden(r) {
			b.WriteString(escape(r))
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// VisibleJSON returns s compacted when it is valid JSON, then as Visible writes it: a compacted
// JSON text has no raw control character outside its strings, so every escape falls inside a
// string and the result decodes to the same JSON value. Text that is not JSON is only made
// Visible.
func VisibleJSON(s string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err == nil {
		s = b.String()
	}
	return Visible(s)
}

// segment is a piece of text as a page shows it: plain text, or a hidden character's escape
// (Hidden), which the page marks as one.
type segment struct {
	Text   string
	Hidden bool
}

// segments splits s into plain text and the escapes of its hidden characters, as a page shows
// a call's arguments or a note: like Visible, except that a line break and a tab stay as they
// are (a <pre> shows them as what they are). JSON is indented first (pretty), so the
// arguments read as they would in an editor.
func segments(s string) []segment {
	var out []segment
	var plain strings.Builder
	for _, r := range pretty(s) {
		if r == '\n' || r == '\t' || !hidden(r) {
			plain.WriteRune(r)
			continue
		}
		if plain.Len() > 0 {
			out = append(out, segment{Text: plain.String()})
			plain.Reset()
		}
		out = append(out, segment{Text: escape(r), Hidden: true})
	}
	if plain.Len() > 0 {
		out = append(out, segment{Text: plain.String()})
	}
	return out
}
