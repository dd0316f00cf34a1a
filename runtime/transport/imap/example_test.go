package imap_test

import (
	"fmt"

	"github.com/personagen/personagen/runtime/transport/imap"
)

// The -imap flag's URL gives the connection; the host adds the store for the checkpoints
// (Options.Checkpoints) and calls New.
func ExampleParseURL() {
	o, err := imap.ParseURL("imaps://support%40acme.example:secret@mail.acme.example/INBOX?mailbox=Escalations&move=Done")
	if err != nil {
		panic(err)
	}
	fmt.Println(o.Addr, o.TLS == imap.ImplicitTLS, o.Username, o.Mailboxes, o.MoveTo)
	// Output:
	// mail.acme.example:993 true support@acme.example [INBOX Escalations] Done
}
