package spec

import (
	"net/mail"
	"strings"
)

// Mailbox is the mailbox block of a spec: the persona's email identity.
type Mailbox struct {
	Pos Pos
	// Address is the bare address (addr-spec) the persona receives mail at and replies from.
	Address String
	// Aliases are other bare addresses that reach the persona, in spec order.
	Aliases []String
	// Name is the display name of the persona's replies; zero when absent.
	Name String
}

// mailbox reads a mailbox block. Each address must parse as an RFC 5322 addr-spec written bare
// (no display name, no angle brackets), and no address may repeat, compared case-insensitively
// as routing compares them.
func (b *personaBuilder) mailbox(t *tnode) *Mailbox {
	m := &Mailbox{Pos: t.pos}
	seen := make(map[string]Pos)
	check := func(s String) bool {
		if !bareAddress(s.Value) {
			b.errorf(s.Pos, "%q is not a bare email address: write it as support@acme.example, without a display name or angle brackets", s.Value)
			return false
		}
		key := strings.ToLower(s.Value)
		if first, dup := seen[key]; dup {
			b.errorf(s.Pos, "address %s is listed twice in the mailbox (first at line %d)", s.Value, first.Line)
			return false
		}
		seen[key] = s.Pos
		return true
	}
	if s, ok := str(t.get("address")); ok && check(s) {
		m.Address = s
	}
	for _, n := range list(t.get("aliases")) {
		if s, ok := str(n); ok && check(s) {
			m.Aliases = append(m.Aliases, s)
		}
	}
	if s, ok := str(t.get("name")); ok {
		if strings.ContainsAny(s.Value, "\r\n") {
			b.errorf(s.Pos, "the mailbox name must be one line")
		} else {
			m.Name = s
		}
	}
	return m
}

// bareAddress reports whether s is an addr-spec that net/mail reads back as itself.
func bareAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s && strings.Contains(s, "@")
}
