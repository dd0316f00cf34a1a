package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
	gomailsmtp "github.com/wneessen/go-mail/smtp"

	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
)

// TLSMode says how a Relay secures its connection.
type TLSMode int

// The TLS modes of a Relay.
const (
	// StartTLS requires STARTTLS (RFC 3207): a relay that does not offer it is an error (and
	// the reply is tried again later). The default.
	StartTLS TLSMode = iota
	// ImplicitTLS starts every connection with a TLS handshake (RFC 8314; port 465).
	ImplicitTLS
	// OpportunisticTLS uses STARTTLS when the relay offers it and plain text otherwise.
	OpportunisticTLS
	// NoTLS never encrypts: only for a relay on the same host or a trusted network.
	NoTLS
)

// DefaultRelayTimeout bounds connecting and each step of a send (the greeting, EHLO, STARTTLS,
// AUTH, MAIL, each RCPT, the message and its answer).
const DefaultRelayTimeout = 30 * time.Second

// RelayOptions configure a Relay.
type RelayOptions struct {
	// Addr is the relay's host:port (the host's Postfix, a provider's submission server).
	Addr string
	// TLS is how the connection is secured (StartTLS, the default, requires STARTTLS).
	TLS TLSMode
	// TLSConfig configures TLS; nil means the system's roots and the relay's host name.
	TLSConfig *tls.Config
	// Username and Password, when Username is set, authenticate with SMTP AUTH (the strongest
	// mechanism both sides offer; PLAIN and LOGIN only over TLS).
	Username, Password string
	// Timeout bounds connecting and each step (DefaultRelayTimeout).
	Timeout time.Duration
	// HELO is the name the relay is greeted with; "" means the host name of the machine.
	HELO string
	// EnvelopeSender returns the envelope sender (MAIL FROM) of a reply; nil means
	// mail.BounceAddress(m.From, m.MessageID): the persona's address with a subaddress naming
	// the reply, which the persona's listener accepts, so bounces come back and are matched
	// (mail.RecordBounce). Whatever it returns must reach the persona's mailbox.
	EnvelopeSender func(m service.Outgoing) string
	// Logger receives warnings (a recipient refused while others were accepted); nil means
	// slog.Default().
	Logger *slog.Logger
}

// Relay sends replies through an SMTP server: a service.Sender, safe for concurrent use. Each
// Send opens a connection, sends one reply and closes it.
//
// The bytes sent are m.Raw unchanged — go-mail's SMTP client (DialToSMTPClientWithContext, then
// MAIL, RCPT, DATA) with none of its message building, which would add a Message-ID of its own:
// the reply keeps its Message-ID on every attempt, so a reply sent twice (a crash between the
// relay's 250 and the store's mark) is one message to every receiver that deduplicates.
//
// Errors, as service.Sender wants them:
//   - a 5xx answer to MAIL FROM, to every RCPT TO, or to the message is permanent
//     (service.Permanent), with the server's code and text;
//   - a 4xx answer, any network or TLS error, and any failure before MAIL FROM (connecting,
//     the greeting, EHLO, STARTTLS, AUTH — the relay's state, not the reply's) are transient;
//   - a 4xx to one RCPT TO abandons the transaction (the reply is sent to nobody now, to all
//     later); a 5xx to some recipients while others were accepted sends to those, logs the
//     refused ones and returns nil: the relay's refusal is the answer a bounce would have given.
type Relay struct {
	opts   RelayOptions
	client *gomail.Client
	log    *slog.Logger
}

// NewRelay returns a Relay as o says. Errors: no or a malformed Addr, a negative timeout, or
// go-mail's refusal of an option.
func NewRelay(o RelayOptions) (*Relay, error) {
	host, portText, err := net.SplitHostPort(o.Addr)
	if err != nil || host == "" {
		return nil, fmt.Errorf("smtp: relay address %q: want host:port", o.Addr)
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("smtp: relay address %q: bad port", o.Addr)
	}
	if o.Timeout < 0 {
		return nil, errors.New("smtp: relay: negative timeout")
	}
	o.Timeout = orDefault(o.Timeout, DefaultRelayTimeout)
	if o.EnvelopeSender == nil {
		o.EnvelopeSender = func(m service.Outgoing) string { return mail.BounceAddress(m.From, m.MessageID) }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	tlsConfig := o.TLSConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	} else {
		tlsConfig = tlsConfig.Clone()
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = host
	}
	if tlsConfig.MinVersion == 0 {
		tlsConfig.MinVersion = tls.VersionTLS12
	}
	opts := []gomail.Option{gomail.WithPort(port), gomail.WithTimeout(o.Timeout), gomail.WithTLSConfig(tlsConfig)}
	switch o.TLS {
	case StartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case ImplicitTLS:
		opts = append(opts, gomail.WithSSL())
	case OpportunisticTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	case NoTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	default:
		return nil, fmt.Errorf("smtp: relay: unknown TLS mode %d", o.TLS)
	}
	if o.HELO != "" {
		opts = append(opts, gomail.WithHELO(o.HELO))
	}
	if o.Username != "" {
		opts = append(opts, gomail.WithSMTPAuth(gomail.SMTPAuthAutoDiscover), gomail.WithUsername(o.Username), gomail.WithPassword(o.Password))
	}
	c, err := gomail.NewClient(host, opts...)
	if err != nil {
		return nil, fmt.Errorf("smtp: relay %s: %w", o.Addr, err)
	}
	return &Relay{opts: o, client: c, log: o.Logger}, nil
}

// Send sends m.Raw to m.To through the relay (see Relay for the errors).
func (r *Relay) Send(ctx context.Context, m service.Outgoing) error {
	if len(m.To) == 0 {
		return service.Permanent(fmt.Errorf("smtp: reply %s has no recipients", m.MessageID))
	}
	for _, a := range append([]string{r.opts.EnvelopeSender(m)}, m.To...) {
		if err := checkAddress(a); err != nil {
			return service.Permanent(fmt.Errorf("smtp: reply %s: %w", m.MessageID, err))
		}
	}
	c, err := r.client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return fmt.Errorf("smtp: relay %s: connect: %w", r.opts.Addr, err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer func() {
		stop()
		c.Close()
	}()
	if err := r.send(c, m); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("smtp: relay %s: reply %s: %w (%w)", r.opts.Addr, m.MessageID, ctx.Err(), err)
		}
		return err
	}
	c.Quit()
	return nil
}

// send runs one transaction on a connected client.
func (r *Relay) send(c *gomailsmtp.Client, m service.Outgoing) error {
	where := func(step string) string {
		return fmt.Sprintf("smtp: relay %s: reply %s: %s", r.opts.Addr, m.MessageID, step)
	}
	from := r.opts.EnvelopeSender(m)
	c.UpdateDeadline(r.opts.Timeout)
	if err := c.Mail("<" + from + ">"); err != nil {
		return classify(where("MAIL FROM:<"+from+">"), err)
	}
	var accepted int
	var refused []string
	for _, to := range m.To {
		c.UpdateDeadline(r.opts.Timeout)
		err := c.Rcpt("<" + to + ">")
		if err == nil {
			accepted++
			continue
		}
		if err := classify(where("RCPT TO:<"+to+">"), err); !service.IsPermanent(err) {
			c.Reset()
			return err
		}
		refused = append(refused, classify("RCPT TO:<"+to+">", err).Error())
	}
	if accepted == 0 {
		return service.Permanent(errors.New(where("every recipient refused: " + strings.Join(refused, "; "))))
	}
	c.UpdateDeadline(r.opts.Timeout)
	w, err := c.Data()
	if err != nil {
		return classify(where("DATA"), err)
	}
	if _, err := w.Write(m.Raw); err != nil {
		w.Close()
		return classify(where("the message"), err)
	}
	c.UpdateDeadline(r.opts.Timeout)
	if err := w.Close(); err != nil {
		return classify(where("the end of the message"), err)
	}
	if len(refused) > 0 {
		r.log.Warn("smtp: reply sent to some recipients only", "message_id", m.MessageID, "refused", strings.Join(refused, "; "))
	}
	return nil
}

// checkAddress refuses an envelope address that cannot be written in MAIL FROM or RCPT TO.
func checkAddress(a string) error {
	if strings.ContainsAny(a, "\r\n<> \t") || !strings.Contains(a, "@") {
		return fmt.Errorf("envelope address %q is not an address (local@domain, without spaces, brackets or line breaks)", a)
	}
	return nil
}

// classify wraps err with what was being done and marks an SMTP answer of class 5 permanent;
// anything else (a 4xx answer, a network, TLS or protocol error) stays transient.
func classify(step string, err error) error {
	var te *textproto.Error
	if errors.As(err, &te) {
		wrapped := fmt.Errorf("%s: %d %s", step, te.Code, te.Msg)
		if te.Code >= 500 && te.Code < 600 {
			return service.Permanent(wrapped)
		}
		return wrapped
	}
	return fmt.Errorf("%s: %w", step, err)
}
