package mail

import (
	"slices"
	"testing"

	"github.com/personagen/personagen/runtime"
)

func TestRoute(t *testing.T) {
	support := newPersona("support", "", "support@acme.example", "help@acme.example")
	sales := newPersona("sales", "", "Sales@Acme.example")
	research := &runtime.Persona{Name: "research"} // no mailbox: never routed to
	personas := []*runtime.Persona{support, sales, research, nil}

	names := func(ds []Delivery) (out []string) {
		for _, d := range ds {
			s := d.Persona.Name
			if d.NoReply.Skip() {
				s += " (" + d.NoReply.String() + ")"
			}
			out = append(out, s)
		}
		return out
	}
	tests := []struct {
		name     string
		raw      string
		envelope []string
		want     []string
	}{
		{"to one persona", msg("hi", "From: ann@cust.example", "To: support@acme.example"), nil, []string{"support"}},
		{"an alias, any case", msg("hi", "From: ann@cust.example", "To: Help Desk <HELP@acme.EXAMPLE>"), nil, []string{"support"}},
		{"to one, cc the other: both answer", msg("hi", "From: ann@cust.example", "To: sales@acme.example", "Cc: support@acme.example"), nil, []string{"support", "sales"}},
		{"bcc header", msg("hi", "From: ann@cust.example", "To: someone@else.example", "Bcc: sales@acme.example"), nil, []string{"sales"}},
		{"envelope recipient only", msg("hi", "From: ann@cust.example", "To: list@else.example"), []string{"<support@acme.example>"}, []string{"support"}},
		{"nobody", msg("hi", "From: ann@cust.example", "To: someone@else.example"), nil, nil},
		{"the persona's own sent mail", msg("hi", "From: support@acme.example", "To: ann@cust.example"), nil, []string{"support (own-address: support@acme.example)"}},
		{"from the persona itself", msg("hi", "From: Support <support@acme.example>", "To: help@acme.example, sales@acme.example"), nil,
			[]string{"support (own-address: support@acme.example)", "sales (persona: support@acme.example: persona support, which sales does not accept mail from)"}},
		{"from another persona's alias", msg("hi", "From: help@acme.example", "To: sales@acme.example"), nil,
			[]string{"support (own-address: help@acme.example)", "sales (persona: help@acme.example: persona support, which sales does not accept mail from)"}},
		{"from an alias", msg("hi", "From: help@acme.example", "To: support@acme.example"), nil, []string{"support (own-address: help@acme.example)"}},
		{"the message's own reason comes first", msg("hi", "From: support@acme.example", "To: support@acme.example", "Auto-Submitted: auto-replied"), nil,
			[]string{"support (auto-submitted: Auto-Submitted: auto-replied)"}},
	}
	for _, tt := range tests {
		m := mustParse(t, tt.raw, arrival)
		check(t, tt.name, names(Route(m, personas, tt.envelope...)), tt.want)
	}

	// A persona that accepts the other's mail answers it; the acceptance is one-way.
	open := newPersona("sales", "", "Sales@Acme.example")
	open.Mailbox.AcceptFrom = []string{"support"}
	m := mustParse(t, msg("hi", "From: Support <support@acme.example>", "To: sales@acme.example"), arrival)
	check(t, "accepted", names(Route(m, []*runtime.Persona{support, open})), []string{"support (own-address: support@acme.example)", "sales"})
	m = mustParse(t, msg("hi", "From: sales@acme.example", "To: support@acme.example"), arrival)
	check(t, "accepted one way only", names(Route(m, []*runtime.Persona{support, open})),
		[]string{"support (persona: sales@acme.example: persona sales, which support does not accept mail from)", "sales (own-address: sales@acme.example)"})
	// A message's own reason comes first.
	m = mustParse(t, msg("hi", "From: support@acme.example", "To: sales@acme.example", "Auto-Submitted: auto-replied"), arrival)
	check(t, "auto-replied", names(Route(m, []*runtime.Persona{support, sales})),
		[]string{"support (auto-submitted: Auto-Submitted: auto-replied)", "sales (auto-submitted: Auto-Submitted: auto-replied)"})
}

func check(t *testing.T, name string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s: routed to %q, want %q", name, got, want)
	}
}
