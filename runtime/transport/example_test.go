package transport_test

import (
	"fmt"

	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/transport/smtp"
)

// The pieces a host hands the service: a listener Postfix delivers to, and a relay for the
// replies, whose envelope sender brings bounces back to the persona.
func Example() {
	l, err := smtp.New(smtp.Options{Addr: "127.0.0.1:0", LMTP: true})
	if err != nil {
		panic(err)
	}
	defer l.Close() // a host hands l to the service (service.Config.Receivers), which serves it
	relay, err := smtp.NewRelay(smtp.RelayOptions{Addr: "127.0.0.1:25", TLS: smtp.NoTLS})
	if err != nil {
		panic(err)
	}
	_ = relay // service.Config.Sender, wrapped by a dkim.Signer
	id := mail.ReplyMessageID("reply:support/1", "support@acme.example")
	fmt.Println(mail.BounceAddress("support@acme.example", id))
	// Output:
	// support+bounce-1e3901dcee39667ebab4f97e461bc917@acme.example
}
