package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transport/dkim"
	"github.com/personagen/personagen/runtime/transport/imap"
	"github.com/personagen/personagen/runtime/transport/smtp"
	"github.com/personagen/personagen/runtime/transport/webhook"
)

// transports is the mail side of the command line.
type transports struct {
	maildir, sent                         string
	smtp, lmtp, imap, webhook             string
	relay, relayTLS                       string
	dkimDomain, dkimSelector, dkimKeyFile string
}

// mail returns the receivers and the sender the flags name.
func (t transports) mail(st *store.Store) ([]service.Receiver, service.Sender, error) {
	r, err := t.receivers(st)
	if err != nil {
		return nil, nil, err
	}
	s, err := t.sender()
	return r, s, err
}

// receivers are the mail sources the flags name. Secrets come from the environment, never from
// flags: PERSONAGEN_WEBHOOK_SECRET (the shared secret of the raw, Postmark and SendGrid webhooks)
// and MAILGUN_WEBHOOK_SIGNING_KEY (the Mailgun route's signing key).
func (t transports) receivers(st *store.Store) ([]service.Receiver, error) {
	var out []service.Receiver
	if t.maildir != "" {
		out = append(out, service.Dir{Path: t.maildir})
	}
	for _, l := range []struct {
		addr string
		lmtp bool
	}{{t.smtp, false}, {t.lmtp, true}} {
		if l.addr == "" {
			continue
		}
		ln, err := smtp.New(smtp.Options{Addr: l.addr, LMTP: l.lmtp})
		if err != nil {
			return nil, err
		}
		out = append(out, ln)
	}
	if t.imap != "" {
		o, err := imap.ParseURL(t.imap)
		if err != nil {
			return nil, fmt.Errorf("-imap: %w", err)
		}
		o.Checkpoints = st
		r, err := imap.New(o)
		if err != nil {
			return nil, fmt.Errorf("-imap: %w", err)
		}
		out = append(out, r)
	}
	if t.webhook != "" {
		paths, err := webhooks()
		if err != nil {
			return nil, err
		}
		srv, err := webhook.NewServer(t.webhook, paths)
		if err != nil {
			return nil, fmt.Errorf("-webhook: %w", err)
		}
		out = append(out, srv)
	}
	return out, nil
}

// webhooks are the endpoints of -webhook: /raw, /postmark and /sendgrid behind
// PERSONAGEN_WEBHOOK_SECRET, /mailgun behind MAILGUN_WEBHOOK_SIGNING_KEY.
func webhooks() (map[string]*webhook.Endpoint, error) {
	paths := map[string]*webhook.Endpoint{}
	if secret := os.Getenv("PERSONAGEN_WEBHOOK_SECRET"); secret != "" {
		o := webhook.Options{Secret: secret}
		for path, newEndpoint := range map[string]func(webhook.Options) (*webhook.Endpoint, error){
			"/raw": webhook.NewRaw, "/postmark": webhook.NewPostmark, "/sendgrid": webhook.NewSendGrid,
		} {
			e, err := newEndpoint(o)
			if err != nil {
				return nil, err
			}
			paths[path] = e
		}
	}
	if key := os.Getenv("MAILGUN_WEBHOOK_SIGNING_KEY"); key != "" {
		e, err := webhook.NewMailgun(webhook.MailgunOptions{SigningKey: key})
		if err != nil {
			return nil, err
		}
		paths["/mailgun"] = e
	}
	if len(paths) == 0 {
		return nil, errors.New("-webhook: set PERSONAGEN_WEBHOOK_SECRET and/or MAILGUN_WEBHOOK_SIGNING_KEY (webhooks are never unauthenticated)")
	}
	return paths, nil
}

// sender is the reply sender the flags name (nil: replies stay in the outbox): -relay (with
// PERSONAGEN_RELAY_USER and PERSONAGEN_RELAY_PASSWORD when set), DKIM-signed with -dkim-*, or
// else -sent.
func (t transports) sender() (service.Sender, error) {
	var s service.Sender
	switch {
	case t.relay != "":
		modes := map[string]smtp.TLSMode{"starttls": smtp.StartTLS, "tls": smtp.ImplicitTLS, "opportunistic": smtp.OpportunisticTLS, "none": smtp.NoTLS}
		mode, ok := modes[t.relayTLS]
		if !ok {
			return nil, fmt.Errorf("-relay-tls %q: want starttls, tls, opportunistic or none", t.relayTLS)
		}
		r, err := smtp.NewRelay(smtp.RelayOptions{Addr: t.relay, TLS: mode,
			Username: os.Getenv("PERSONAGEN_RELAY_USER"), Password: os.Getenv("PERSONAGEN_RELAY_PASSWORD")})
		if err != nil {
			return nil, fmt.Errorf("-relay: %w", err)
		}
		s = r
	case t.sent != "":
		s = service.DirSender{Path: t.sent}
	}
	if t.dkimKeyFile == "" && t.dkimDomain == "" && t.dkimSelector == "" {
		return s, nil
	}
	if s == nil {
		return nil, errors.New("-dkim-*: DKIM signs what -relay or -sent sends; name one")
	}
	key, err := dkim.LoadKeyFile(t.dkimKeyFile)
	if err != nil {
		return nil, fmt.Errorf("-dkim-key: %w", err)
	}
	signer, err := dkim.New(dkim.Options{Domain: t.dkimDomain, Selector: t.dkimSelector, Key: key})
	if err != nil {
		return nil, fmt.Errorf("-dkim-*: %w", err)
	}
	return signer.Sender(s), nil
}
