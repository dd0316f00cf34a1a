package mail_test

import (
	"fmt"

	"github.com/personagen/personagen/runtime/mail"
)

// A reply's envelope sender names the reply, so a bounce sent to it is matched even when it
// quotes nothing of the reply.
func ExampleBounceAddress() {
	id := mail.ReplyMessageID("reply:support/42", "support@acme.example")
	from := mail.BounceAddress("support@acme.example", id)
	fmt.Println(from)
	back, ok := mail.BounceMessageID(from)
	fmt.Println(back == id, ok)
	// Output:
	// support+bounce-5e157760c94c30848584727bd04ab778@acme.example
	// true true
}
