package mail

import "github.com/personagen/personagen/runtime"

// PersonaFor returns the persona of personas whose mailbox Address or one of whose Aliases is
// address, compared as Route compares recipients (angle brackets and surrounding space dropped,
// case-insensitively), or nil when there is none. A receiver asks it before it accepts a
// recipient (an SMTP listener at RCPT TO), so it never accepts mail for anyone else.
func PersonaFor(personas []*runtime.Persona, address string) *runtime.Persona {
	want := canonicalAddress(address)
	if want == "" {
		return nil
	}
	for _, p := range personas {
		if p == nil {
			continue
		}
		for _, a := range mailboxAddresses(p) {
			if a == want {
				return p
			}
		}
	}
	return nil
}
