package mail

import (
	"fmt"
	netmail "net/mail"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime"
)

// newPersona returns a persona named name with the given mailbox display name, address and
// aliases.
func newPersona(name, display, address string, aliases ...string) *runtime.Persona {
	p := &runtime.Persona{Name: name}
	p.Mailbox.Address, p.Mailbox.Aliases, p.Mailbox.Name = address, aliases, display
	return p
}

// checkUTF8 returns an error naming the first string field of m that is not valid UTF-8.
func checkUTF8(m *Message) error {
	type field struct{ name, v string }
	fields := []field{{"message id", m.MessageID}, {"in-reply-to", m.InReplyTo}, {"subject", m.Subject},
		{"text", m.Text}, {"html", m.HTML}, {"no-reply detail", m.NoReply.Detail}}
	for i, r := range m.References {
		fields = append(fields, field{fmt.Sprintf("references[%d]", i), r})
	}
	fields = append(fields, field{"from", m.From})
	for name, list := range map[string][]string{"to": m.To, "cc": m.Cc, "reply-to": m.ReplyTo} {
		for i, a := range list {
			fields = append(fields, field{fmt.Sprintf("%s[%d]", name, i), a})
		}
	}
	a := m.Addresses
	for name, list := range map[string][]netmail.Address{"from": a.From, "to": a.To, "cc": a.Cc, "bcc": a.Bcc, "reply-to": a.ReplyTo} {
		for i, a := range list {
			fields = append(fields, field{fmt.Sprintf("%s[%d] name", name, i), a.Name}, field{fmt.Sprintf("%s[%d] address", name, i), a.Address})
		}
	}
	for i, a := range m.Attachments {
		fields = append(fields, field{fmt.Sprintf("attachment[%d] filename", i), a.Filename},
			field{fmt.Sprintf("attachment[%d] content type", i), a.ContentType})
	}
	for cid := range m.ContentIDs {
		fields = append(fields, field{"content id", cid})
	}
	for i, p := range m.Problems {
		fields = append(fields, field{fmt.Sprintf("problem[%d]", i), p.Detail})
	}
	for _, f := range fields {
		if !utf8.ValidString(f.v) {
			return fmt.Errorf("%s is not valid UTF-8: %q", f.name, f.v)
		}
	}
	return nil
}
