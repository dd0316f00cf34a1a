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
//
// A recipient may carry a subaddress (see Subaddress): local+detail@domain reaches the persona
// whose address or alias is local@domain, unless some persona has local+detail@domain itself
// (the exact address wins). The sender is compared exactly: the persona's own mail is sent from
// its address.
func Route(m *Message, personas []*runtime.Persona, envelope ...string) []Delivery {
	rcpts := recipients(m, envelope, personaAddresses(personas))
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

// recipients returns the canonical persona addresses m is for: each of its To, Cc and Bcc and
// envelope addresses as reached (see reached) among the addresses of every persona, exact.
func recipients(m *Message, envelope []string, exact map[string]bool) map[string]bool {
	rcpts := map[string]bool{}
	for _, list := range [][]string{addrs(m.Addresses.To), addrs(m.Addresses.Cc), addrs(m.Addresses.Bcc), envelope} {
		for _, a := range list {
			if a = reached(canonicalAddress(a), exact); a != "" {
				rcpts[a] = true
			}
		}
	}
	return rcpts
}

// addressedTo reports whether m is for p's mailbox address or an alias (not only from it), with
// exact the addresses of every persona (see reached).
func addressedTo(m *Message, p *runtime.Persona, envelope []string, exact map[string]bool) bool {
	return hasAny(recipients(m, envelope, exact), mailboxAddresses(p))
}

// SubaddressDelimiter separates a local part from its detail in a subaddress
// (local+detail@domain, RFC 5233; Postfix's recipient_delimiter, Dovecot's and Gmail's plus
// addressing). It is fixed: "+".
const SubaddressDelimiter = "+"

// Subaddress splits a subaddress local+detail@domain into the address local@domain and the
// detail, at the first SubaddressDelimiter of the local part; ok is false for an address without
// one, or with nothing before it. The address is returned as given otherwise (case kept, angle
// brackets and surrounding space dropped).
func Subaddress(address string) (base, detail string, ok bool) {
	a := strings.TrimSpace(address)
	a = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(a, "<"), ">"))
	at := strings.LastIndexByte(a, '@')
	if at < 0 {
		return a, "", false
	}
	local, domain := a[:at], a[at:]
	i := strings.Index(local, SubaddressDelimiter)
	if i <= 0 {
		return a, "", false
	}
	return local[:i] + domain, local[i+len(SubaddressDelimiter):], true
}

// reached returns the persona address a canonical recipient reaches, given exact, the canonical
// addresses of every persona: the recipient itself when it is among them or has no subaddress,
// else its address without the detail.
func reached(rcpt string, exact map[string]bool) string {
	if rcpt == "" || exact[rcpt] {
		return rcpt
	}
	if base, _, ok := Subaddress(rcpt); ok {
		return base
	}
	return rcpt
}

// personaAddresses returns the canonical mailbox addresses and aliases of every persona.
func personaAddresses(personas []*runtime.Persona) map[string]bool {
	out := map[string]bool{}
	for _, p := range personas {
		if p != nil {
			for _, a := range mailboxAddresses(p) {
				out[a] = true
			}
		}
	}
	return out
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
