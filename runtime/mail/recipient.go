package mail

import "github.com/personagen/personagen/runtime"

// PersonaFor returns the persona of personas whose mailbox Address or one of whose Aliases is
// address, compared as Route compares recipients (angle brackets and surrounding space dropped,
// case-insensitively, a subaddress local+detail@domain reaching local@domain unless a persona
// has the exact address), or nil when there is none. A receiver asks it before it accepts a
// recipient (an SMTP listener at RCPT TO), so it never accepts mail for anyone else; the bounce
// addresses of BounceAddress are accepted this way.
func PersonaFor(personas []*runtime.Persona, address string) *runtime.Persona {
	want := canonicalAddress(address)
	if want == "" {
		return nil
	}
	if p := personaAt(personas, want); p != nil {
		return p
	}
	if base, _, ok := Subaddress(want); ok {
		return personaAt(personas, base)
	}
	return nil
}

// personaAt returns the first persona whose canonical mailbox address or alias is address.
func personaAt(personas []*runtime.Persona, address string) *runtime.Persona {
	for _, p := range personas {
		if p == nil {
			continue
		}
		for _, a := range mailboxAddresses(p) {
			if a == address {
				return p
			}
		}
	}
	return nil
}
