package service

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
)

// Deliver is the service's Deliverer: mail.Ingest over the service's personas and store. A
// delivered message that is to be answered becomes pending work in the statement that stores
// it (see runtime/store, pending work), and this process is woken to answer it; a delivery
// report for one of the service's replies marks that reply bounced (mail.RecordBounce). A
// message for none of the personas is not stored; it is logged at warning level with its
// addresses, and Deliver returns no error (the sender is not told to try again).
func (s *Service) Deliver(ctx context.Context, raw io.Reader, env Envelope) (*mail.Ingested, error) {
	in, err := mail.Ingest(ctx, s.st, raw, mail.Ingestion{Personas: s.personaList(), Envelope: env.Recipients, Arrived: time.Now()})
	if in != nil {
		for _, d := range in.Deliveries {
			log := s.log.With("persona", d.Persona.Name, "thread", d.Message.ThreadID, "message_id", d.Message.MessageID,
				"seq", d.Message.Seq, "source", env.Source)
			switch {
			case d.Duplicate:
				log.Info("message received again; already stored")
			case d.NoReply.Skip():
				log.Info("message stored; not to be answered", "reason", d.NoReply.String())
			default:
				log.Info("message stored; pending answer")
			}
			s.metrics.delivered(ctx, d.Persona.Name, d)
		}
	}
	if err != nil {
		return in, fmt.Errorf("service: deliver: %w", err)
	}
	if len(in.Deliveries) == 0 {
		s.log.Warn("message for no persona; not stored", "message_id", in.Message.MessageID,
			"to", in.Message.To, "cc", in.Message.Cc, "recipients", env.Recipients, "source", env.Source)
	}
	// A delivery report for one of the replies marks it bounced — for a second copy too, in
	// case the process that stored the first died before marking it. Failing here fails the
	// delivery, so the receiver retries and the mark is made then.
	if b, n, err := mail.RecordBounce(ctx, s.st, in, env.Recipients...); err != nil {
		return in, fmt.Errorf("service: deliver: record the bounce: %w", err)
	} else if n > 0 {
		s.log.Warn("reply bounced", "message_id", b.MessageID, "status", b.Status, "diagnostic", b.Diagnostic, "source", env.Source)
	}
	if len(in.Deliveries) > 0 {
		wake(s.wakeRun)
	}
	return in, nil
}

// Accepts returns the persona whose mailbox address or alias is address, or nil.
func (s *Service) Accepts(address string) *runtime.Persona {
	return mail.PersonaFor(s.personaList(), address)
}
