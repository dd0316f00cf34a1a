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
	// AcceptFrom names the other personas (by their spec name) whose mail this persona answers,
	// in spec order: mail whose From is another persona's address is stored but not answered
	// unless that persona is listed here (runtime.Persona's Mailbox.AcceptFrom).
	AcceptFrom []String
	// SubjectThreading is runtime/mail's subject rule for this mailbox: a reply without
	// reference headers joins the sender's latest thread of the same subject. Default true;
	// false sets runtime.Persona's Mailbox.DisableSubjectThreading.
	SubjectThreading Bool
}

// mailbox reads a mailbox block. Each address must parse as an RFC 5322 addr-spec written bare
// (no display name, no angle brackets), and no address may repeat, compared case-insensitively
// as routing compares them. accept_from names other personas: none twice, not the persona
// itself (whether a name is a persona generated with it is not checked here: a host may run a
// persona from elsewhere).
func (b *personaBuilder) mailbox(t *tnode, self String) *Mailbox {
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
	accepted := make(map[string]Pos)
	for _, n := range list(t.get("accept_from")) {
		s, ok := str(n)
		if !ok {
			continue
		}
		if first, dup := accepted[s.Value]; dup {
			b.errorf(s.Pos, "persona %s is listed twice in accept_from (first at line %d)", s.Value, first.Line)
			continue
		}
		if s.Value == self.Value {
			b.errorf(s.Pos, "accept_from lists %s itself: a persona's own address is never answered; name other personas", s.Value)
			continue
		}
		accepted[s.Value] = s.Pos
		m.AcceptFrom = append(m.AcceptFrom, s)
	}
	m.SubjectThreading = boolean(t.get("subject_threading"), true)
	return m
}

// bareAddress reports whether s is an addr-spec that net/mail reads back as itself.
func bareAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Name == "" && a.Address == s && strings.Contains(s, "@")
}
