// Package webhook receives mail that a mail provider posts over HTTP: an Endpoint per provider
// — Raw (a raw MIME body, for a host's own pipeline), Postmark, SendGrid and Mailgun — whose
// Handler a host mounts on its own server, or a Server that serves endpoints at paths of one
// address and is a service.Receiver.
//
// Start from the constructor of your provider (NewPostmark, NewSendGrid, NewMailgun, or NewRaw)
// and mount its Handler, or serve endpoints with NewServer.
//
// Every endpoint authenticates each request, and none can be made without credentials: Mailgun
// by its signature (HMAC-SHA256 of the timestamp and token with the webhook signing key, within
// a replay window), the others by HTTP basic authentication (credentials in the webhook URL,
// https://user:password@host/path, which the provider sends as an Authorization header) or a
// shared secret (an "Authorization: Bearer SECRET" header, or a "secret" query parameter in the
// configured URL).
//
// The answers:
//   - 200: the message is in the store (Deliver returned nil), or it is for no persona here
//     (nothing to store, nothing to retry);
//   - 503: Deliver failed for a reason that may pass; the provider posts it again later
//     (ingestion is idempotent by Message-ID, so a repeat stores nothing twice);
//   - 401: bad or missing credentials; nothing is read or stored;
//   - 405: not a POST;
//   - a refusal for good — a body that is not the provider's format, a missing message field,
//     a message over the size limits — is answered with the code that tells the provider not
//     to retry where it has one (Postmark: 403; Mailgun: 406), else 400 (413 for size).
//
// A request body is read up to Options.MaxBodyBytes; the message inside it is held to the
// Deliverer's parser limit (mail.DefaultMaxSize).
package webhook
