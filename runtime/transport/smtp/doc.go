// Package smtp moves a persona's mail over SMTP: in through a Listener (an SMTP or LMTP server
// on github.com/emersion/go-smtp that a mail server such as Postfix delivers to), out through a
// Relay (a client on github.com/wneessen/go-mail that hands each rendered reply to the host's
// mail server unchanged).
//
// Start from New (a Listener: Options.LMTP for LMTP) and NewRelay (a Relay).
//
// A Listener is a service.Receiver. It accepts a recipient at RCPT TO only when the Deliverer
// accepts it (a persona's address, alias or subaddress: mail.PersonaFor), so it is never an open
// relay, and it says 250 to a message only after Deliver returned, so what a client was told was
// delivered is in the store. Its limits — message size, recipients, line length, timeouts,
// connections at once, time per connection — each answer with the standard enhanced status
// code (see Listener).
//
// A Relay is a service.Sender. It sends the reply's bytes as mail.Render rendered them (and a
// signer such as runtime/transport/dkim signed them), with the envelope sender
// mail.BounceAddress gives, so that a delivery report comes back to the persona's mailbox and
// names the reply; it tells a refusal for good (5xx: service.Permanent, with the server's text)
// from one that may pass (4xx, network and TLS errors).
package smtp
