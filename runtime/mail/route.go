package mail

import (
	netmail "net/mail"
	"slices"
	"strings"

	"github.com/personagen/personagen/runtime"
)

// personaOf returns the persona among personas whose mailbox address or alias is the canonical
// address addr; nil for none (or when addr is "").
func personaOf(personas []*runtime.Persona, addr string) *runtime.Persona {
	if addr == "" {
		return nil
	}
	for _, p := range personas {
		if p != nil && p.Mailbox.Address != "" && slices.Contains(mailboxAddresses(p), addr) {
			return p
		}
	}
	return nil
}

// Delivery is one persona a message is for, and whether that persona must leave it unanswered.
type Delivery struct {
	Persona *runtime.Persona
	// Own is true when the message's From is this persona's own address or one of its
	// aliases: its own sent mail (a Bcc to itself, an import of its sent folder) — or a forged
	// From, which Route cannot tell apart; Ingest believes it only with Ingestion.Sent.
	Own bool
	// NoReply is the message's own NoReply; when it has none, ReasonOwnAddress if Own is true,
	// and ReasonPersona if the From is another persona's address or alias (one of the personas
	// Route chooses from) that this persona's Mailbox.AcceptFrom does not list.
	NoReply NoReply
}

// Route returns the personas m is for, in the order of personas: every persona with a mailbox
// whose Address or one of whose Aliases is among m's recipients — its To, Cc and Bcc addresses
// and the envelope recipients the host received it for (SMTP RCPT TO; pass none when unknown,
// e.g. for a .eml file) — or is m's sender (the persona's own mail, so that its own replies,
// delivered back, land in its thread). Addresses compare case-insensitively; a persona without
// a mailbox address is never routed to. Each persona listed gets its own copy of the message and
// of the thread. Mail from another of personas is for a persona like any other mail, but not
// to be answered unless the persona accepts mail from it (see Delivery.NoReply).
func Route(m *Message, personas []*runtime.Persona, envelope ...string) []Delivery {
	rcpts := recipients(m, envelope)
	sender := canonicalAddress(m.Sender().Address)
	var out []Delivery
	for _, p := range personas {
		if p == nil || p.Mailbox.Address == "" {
			continue
		}
		box := mailboxAddresses(p)
		own := sender != "" && slices.Contains(box, sender)
		if !own && !hasAny(rcpts, box) {
			continue
		}
		d := Delivery{Persona: p, Own: own, NoReply: m.NoReply}
		switch from := personaOf(personas, sender); {
		case d.NoReply.Skip():
		case own:
			d.NoReply = NoReply{ReasonOwnAddress, m.Sender().Address}
		case from != nil && !slices.Contains(p.Mailbox.AcceptFrom, from.Name):
			d.NoReply = NoReply{ReasonPersona, m.Sender().Address + ": persona " + from.Name + ", which " + p.Name + " does not accept mail from"}
		}
		out = append(out, d)
	}
	return out
}

// recipients returns the canonical addresses m is for: its To, Cc and Bcc and the envelope.
func recipients(m *Message, envelope []string) map[string]bool {
	rcpts := map[string]bool{}
	for _, list := range [][]string{addrs(m.Addresses.To), addrs(m.Addresses.Cc), addrs(m.Addresses.Bcc), envelope} {
		for _, a := range list {
			if a = canonicalAddress(a); a != "" {
				rcpts[a] = true
			}
		}
	}
	return rcpts
}

// addressedTo reports whether m is for p's mailbox address or an alias (not only from it).
func addressedTo(m *Message, p *runtime.Persona, envelope []string) bool {
	return hasAny(recipients(m, envelope), mailboxAddresses(p))
}

// mailboxAddresses returns a persona's mailbox address and aliases in canonical form.
func mailboxAddresses(p *runtime.Persona) []string {
	out := make([]string, 0, 1+len(p.Mailbox.Aliases))
	for _, a := range append([]string{p.Mailbox.Address}, p.Mailbox.Aliases...) {
		if a = canonicalAddress(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// canonicalAddress returns the comparable form of an address: the addr-spec without angle
// brackets or surrounding space, lower-cased (domains are case-insensitive, and mail systems
// treat local parts so in practice).
func canonicalAddress(a string) string {
	a = strings.TrimSpace(a)
	a = strings.TrimSuffix(strings.TrimPrefix(a, "<"), ">")
	return strings.ToLower(strings.TrimSpace(a))
}

func addrs(list []netmail.Address) []string {
	out := make([]string, len(list))
	for i, a := range list {
		out[i] = a.Address
	}
	return out
}

func hasAny(set map[string]bool, list []string) bool {
	for _, a := range list {
		if set[a] {
			return true
		}
	}
	return false
}
