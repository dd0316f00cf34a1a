package service

import (
	"context"
	"fmt"
	netmail "net/mail"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// sendTimeout bounds one Send; sendLease is how long a claim of a reply to send lasts (a worker
// that died holding one gives the reply back when it ends).
const (
	sendTimeout = 2 * time.Minute
	sendLease   = sendTimeout + time.Minute
)

// sendLoop claims unsent replies while ctx lives and sends each on work, at most Senders at
// once.
func (s *Service) sendLoop(ctx, work context.Context, flights *sync.WaitGroup) {
	claimLoop(s, ctx, work, flights, "send", s.senders, s.wakeSend,
		func(ctx context.Context) (int64, bool, error) {
			return s.st.ClaimSend(ctx, store.SendClaim{Mailboxes: s.names, Holder: s.holder, LeaseFor: sendLease})
		},
		s.send,
		func(ctx context.Context, seq int64) {
			if _, err := s.st.SendFailed(ctx, seq, s.holder, time.Now(), ""); err != nil {
				s.log.Warn("giving back the reply claimed as the service stopped failed; its claim runs out instead", "seq", seq, "error", err)
			}
		})
}

// send sends the claimed reply seq and records the outcome.
func (s *Service) send(ctx context.Context, seq int64) {
	bg := context.WithoutCancel(ctx)
	log := s.log.With("seq", seq)
	m, err := s.st.MessageBySeq(ctx, seq)
	if err != nil {
		log.Warn("reading the reply to send failed; its claim runs out", "error", err)
		return
	}
	log = log.With("persona", m.Mailbox, "thread", m.ThreadID, "run", m.RunKey, "correlation_id", m.RunKey, "message_id", m.MessageID)
	p := s.personas[m.Mailbox]
	out, err := outgoing(p, m)
	if err == nil {
		st, serr := s.st.ReplyState(ctx, seq)
		if serr == nil {
			out.Attempt = st.Attempts
		}
		sctx, cancel := context.WithTimeout(ctx, sendTimeout)
		err = s.sender.Send(sctx, out)
		cancel()
	} else {
		err = Permanent(err)
	}
	if err == nil {
		if _, merr := s.st.MarkSent(bg, seq); merr != nil {
			// Sent but not recorded: the next claim sends it again, with the same Message-ID.
			log.Warn("reply sent but not marked sent; it will be sent again", "error", merr)
			return
		}
		s.metrics.sent(ctx, m.Mailbox, "")
		log.Info("reply sent", "attempt", out.Attempt)
		return
	}
	if ctx.Err() != nil && !IsPermanent(err) {
		if _, ferr := s.st.SendFailed(bg, seq, s.holder, time.Now(), ""); ferr != nil {
			log.Warn("giving the send back failed; its claim runs out", "error", ferr)
		}
		log.Info("send stopped by the shutdown; given back")
		return
	}
	attempts := out.Attempt
	if IsPermanent(err) || s.retry.exhausted(attempts) {
		reason := err.Error()
		if !IsPermanent(err) {
			reason = fmt.Sprintf("retries exhausted after %d attempts: %s", attempts, reason)
		}
		if _, ferr := s.st.SendFailed(bg, seq, s.holder, time.Time{}, reason); ferr != nil {
			log.Warn("recording the failed send failed; its claim runs out and it is tried again", "error", ferr)
			return
		}
		s.metrics.sent(ctx, m.Mailbox, "permanent")
		log.Error("reply could not be sent; recorded failed", "error", reason, "attempts", attempts)
		return
	}
	at := time.Now().Add(s.retry.delay(max(attempts, 1), time.Now(), time.Time{}))
	if _, ferr := s.st.SendFailed(bg, seq, s.holder, at, err.Error()); ferr != nil {
		log.Warn("recording the failed send failed; its claim runs out", "error", ferr)
		return
	}
	s.metrics.sent(ctx, m.Mailbox, "transient")
	log.Warn("sending the reply failed; will retry", "error", err, "attempt", attempts, "retry_at", at)
}

// outgoing renders the stored reply m of persona p.
func outgoing(p *runtime.Persona, m store.Message) (Outgoing, error) {
	if p == nil {
		return Outgoing{}, fmt.Errorf("service: reply %d is of mailbox %q, which no persona of this service has", m.Seq, m.Mailbox)
	}
	raw, err := mail.Render(&m.Message)
	if err != nil {
		return Outgoing{}, err
	}
	out := Outgoing{Persona: p, Seq: m.Seq, MessageID: m.MessageID, From: p.Mailbox.Address, Raw: raw}
	for _, list := range [][]string{m.To, m.Cc} {
		for _, a := range list {
			addr, err := netmail.ParseAddress(a)
			if err != nil {
				return Outgoing{}, fmt.Errorf("service: reply %d: recipient %q: %w", m.Seq, a, err)
			}
			out.To = append(out.To, addr.Address)
		}
	}
	if len(out.To) == 0 {
		return Outgoing{}, fmt.Errorf("service: reply %d has no recipient", m.Seq)
	}
	return out, nil
}
