package spec

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// GoName derives the exported Go identifier for a persona (or any spec)
// name. It is the single derivation shared by the collision check and the
// generator, so the two can never disagree.
//
// Rules: the name is split into words at every rune that cannot appear in a
// Go identifier, and at underscores (support-agent, support_agent and
// "support agent" all give SupportAgent); each word's first rune is
// upper-cased and the rest kept; when the result does not start with an
// upper-case letter (a leading digit, a script without case such as 中文, or
// empty input) it is prefixed with "X". Because the result is always
// exported, it can never be a Go keyword or predeclared identifier (those
// are all lower case). The function is pure and deterministic.
func GoName(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 1)
	upperNext := true
	for _, r := range s {
		if r == utf8.RuneError || r == '_' || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			upperNext = true
			continue
		}
		if upperNext {
			r = unicode.ToUpper(r)
			upperNext = false
		}
		b.WriteRune(r)
	}
	out := b.String()
	first, _ := utf8.DecodeRuneInString(out)
	if out == "" || !unicode.IsUpper(first) {
		return "X" + out
	}
	return out
}
