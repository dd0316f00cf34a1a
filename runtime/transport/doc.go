// Package transport is the home of the mail transports that move a persona's mail between the
// world and the store, each an implementation of runtime/service's small interfaces:
//
//   - runtime/transport/smtp: a Listener (SMTP or LMTP server; a service.Receiver that a mail
//     server such as Postfix delivers to) and a Relay (an SMTP client; a service.Sender);
//   - runtime/transport/imap: a Receiver that reads IMAP mailboxes (service.Receiver);
//   - runtime/transport/webhook: endpoints for the raw-MIME posts of mail providers (Postmark,
//     SendGrid, Mailgun, a host's own), as http.Handlers or a Server (service.Receiver);
//   - runtime/transport/dkim: a Signer that DKIM-signs every reply a Sender sends.
//
// Every receiver acknowledges a message to its source — SMTP 250, webhook 2xx, IMAP \Seen —
// only after Deliverer.Deliver returned, that is after the message was committed to the store;
// every sender sends the rendered reply's bytes unchanged (its Message-ID with them) and tells a
// permanent failure (service.Permanent) from a transient one. Bounces come back through the
// receivers to the envelope sender mail.BounceAddress gives each reply, and mail.RecordBounce
// marks the reply. docs/mail-transports.md says how to deploy each.
//
// Start from the package of the transport you deploy: smtp.New for a listener behind Postfix,
// imap.New for a mailbox, a webhook constructor for a provider, smtp.NewRelay and dkim.New for
// the replies.
//
// This package itself holds no code; its tests run the transports end to end against real
// Postfix and Dovecot.
package transport
