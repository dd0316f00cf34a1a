package spec

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/runenames"
)

// codePoint names a character for a message: "U+0430 CYRILLIC SMALL
// LETTER A", so a character that is invisible or looks like another one
// can be told apart.
func codePoint(r rune) string {
	name := runenames.Name(r)
	if name == "" || strings.HasPrefix(name, "<") {
		return fmt.Sprintf("U+%04X", r)
	}
	return fmt.Sprintf("U+%04X %s", r, name)
}

// maxOddRunes bounds how many characters oddRunes names.
const maxOddRunes = 3

// oddRunes describes the characters of s that are not printable ASCII, for
// a value that is expected to be ASCII (a key, a name, a Go reference, a
// template field, a timezone, a cron expression): "character 2 is U+0430
// CYRILLIC SMALL LETTER A". It returns "" when s is printable ASCII.
// Characters are counted from 1, in Unicode code points.
func oddRunes(s string) string {
	var notes []string
	more := 0
	i := 0
	for _, r := range s {
		i++
		if r >= 0x20 && r < 0x7F {
			continue
		}
		if len(notes) == maxOddRunes {
			more++
			continue
		}
		notes = append(notes, fmt.Sprintf("character %d is %s", i, codePoint(r)))
	}
	if len(notes) == 0 {
		return ""
	}
	out := strings.Join(notes, ", ")
	if more > 0 {
		out += fmt.Sprintf(" and %d more are not ASCII", more)
	} else {
		out += ", not ASCII"
	}
	return out
}

// withOddRunes appends oddRunes(s) to msg, when there are any, as "msg
// (character 2 is …, not ASCII)".
func withOddRunes(msg, s string) string {
	if note := oddRunes(s); note != "" {
		return msg + " (" + note + ")"
	}
	return msg
}

// quoteOdd quotes s (strconv.Quote) and names its odd characters after it.
func quoteOdd(s string) string { return withOddRunes(strconv.Quote(s), s) }

// printable returns s with control characters (C0, DEL, C1) and the line
// and paragraph separators written as Go escapes (\n, \x1b, \u2028), so a
// message quoting spec text stays on one line and cannot drive a terminal.
func printable(s string) string {
	if !strings.ContainsFunc(s, unprintable) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unprintable(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unprintable(r rune) bool {
	return unicode.IsControl(r) || r == 0x2028 || r == 0x2029
}
