package service

import (
	"context"
	"errors"
	"io"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
)

// Receiver brings mail in: an SMTP or LMTP listener, an IMAP poller, a webhook, a directory.
// Receive hands every message to d and returns when ctx ends (nil) or when it cannot go on (an
// error the service logs). A receiver acknowledges a message to its source — an SMTP 250, a
// webhook 2xx, an IMAP \Seen flag — only after d.Deliver returned nil: the message is then
// committed to the store, so a crash loses nothing a sender was told was delivered. Delivering
// the same message again stores nothing (ingestion is idempotent by Message-ID), so a receiver
// retries whenever it is unsure.
type Receiver interface {
	Receive(ctx context.Context, d Deliverer) error
}

// Deliverer is what a Receiver delivers into; *Service is one.
type Deliverer interface {
	// Deliver parses, routes, threads and stores one raw message (mail.Ingest) and returns
	// when it is committed. Errors: mail.ErrTooLarge (and other parse errors: permanent, do not
	// retry), a store error (transient: retry later, and do not acknowledge).
	Deliver(ctx context.Context, raw io.Reader, env Envelope) (*mail.Ingested, error)
	// Accepts returns the persona that receives mail at address (its mailbox address or an
	// alias), or nil: a listener refuses every other recipient, so it is never an open relay.
	Accepts(address string) *runtime.Persona
}

// Envelope is what a receiver knows of a message besides its bytes.
type Envelope struct {
	// Recipients are the SMTP envelope recipients (RCPT TO), nil when unknown (a file).
	Recipients []string
	// Sender is the envelope sender (MAIL FROM; "" for the null sender of a bounce).
	Sender string
	// Source names the receiver for logs ("smtp", "imap:INBOX", "webhook:mailgun", "dir").
	Source string
}

// Sender sends a rendered reply: an SMTP relay, a provider's API, a directory. Send returns nil
// when the reply was handed over (the relay said 250). An error wrapped with Permanent means
// it can never be delivered (a 5xx, an address the relay refuses): the reply is recorded failed
// with the error's text and not tried again. Any other error is transient (a network error, a
// 4xx): the reply is tried again with backoff, keeping its Message-ID on every attempt (it is the
// same message). A Sender must be safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, m Outgoing) error
}

// Outgoing is one reply to send.
type Outgoing struct {
	// Persona is the persona whose reply it is.
	Persona *runtime.Persona
	// Seq is the reply's seq in the store; MessageID its Message-ID (without angle brackets).
	Seq       int64
	MessageID string
	// From is the persona's mailbox address (the header From's address); To the envelope
	// recipients — every To and Cc address of the reply.
	From string
	To   []string
	// Raw is the reply as mail.Render renders it: CRLF line endings, every line at most 998
	// octets. A signing sender (DKIM) signs these bytes and sends them unchanged otherwise.
	Raw []byte
	// Attempt counts the tries to send this reply, this one included (1 for the first).
	Attempt int
}

// permanentError marks a send error as permanent.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// Permanent wraps err (when not nil) to say that the send can never succeed.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}
