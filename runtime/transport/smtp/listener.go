package smtp

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
)

// The listener's defaults.
const (
	// DefaultMaxRecipients is how many RCPT TO a message may have (Postfix's
	// smtpd_recipient_limit is 1000; a persona's mail has a handful).
	DefaultMaxRecipients = 100
	// DefaultMaxLineLength is the longest line accepted, in octets, commands and message lines
	// alike: go-smtp's default, twice RFC 5321's 1000 (real mail breaks the limit).
	DefaultMaxLineLength = 2000
	// DefaultReadTimeout is how long the listener waits for a command, or for the whole message
	// after DATA (go-smtp sets the deadline at each command line).
	DefaultReadTimeout = 5 * time.Minute
	// DefaultWriteTimeout is how long writing one reply may take.
	DefaultWriteTimeout = time.Minute
	// DefaultMaxConnections is how many connections are served at once; one more is answered
	// 421 4.7.0 and closed.
	DefaultMaxConnections = 100
	// DefaultMaxSessionTime is how long one connection may last, whatever it does; then its
	// reads time out and the listener closes it with 421 4.4.2.
	DefaultMaxSessionTime = 30 * time.Minute
)

// Options configure a Listener. The zero value of each field means its default.
type Options struct {
	// Addr is where to listen: "host:port" for TCP, or "unix:/path" for a Unix socket (the
	// usual way Postfix reaches an LMTP server on the same host). An empty host means 127.0.0.1
	// — to listen on every interface say so ("0.0.0.0:25", "[::]:25"). "" means
	// "127.0.0.1:25" for SMTP and "127.0.0.1:24" for LMTP.
	Addr string
	// LMTP makes the listener speak LMTP (RFC 2033: LHLO, one reply per recipient after the
	// message) instead of SMTP.
	LMTP bool
	// Domain is the host name in the greeting and the EHLO reply; "" means "localhost".
	Domain string
	// MaxMessageBytes is the largest message accepted, in octets as received after DATA;
	// 0 means mail.DefaultMaxSize (25 MiB). It is advertised (EHLO SIZE), a MAIL FROM declaring
	// more is refused, and a message that grows past it while it is read is refused with
	// 552 5.3.4 — nothing of it is stored.
	MaxMessageBytes int64
	// MaxRecipients is how many recipients a message may have (DefaultMaxRecipients); one
	// more is answered 452 4.5.3, and the client sends it again in a later transaction.
	MaxRecipients int
	// MaxLineLength is the longest line accepted, in octets (DefaultMaxLineLength). A longer
	// command line closes the connection with 500 5.4.0; a longer message line refuses the
	// message with 554 5.6.0 and closes the connection.
	MaxLineLength int
	// ReadTimeout and WriteTimeout bound each read (a command, or the message after DATA)
	// and each reply (DefaultReadTimeout, DefaultWriteTimeout); an idle client is answered
	// 421 4.4.2 and disconnected.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// MaxConnections is how many connections are served at once (DefaultMaxConnections).
	MaxConnections int
	// MaxSessionTime is how long one connection may last (DefaultMaxSessionTime).
	MaxSessionTime time.Duration
	// TLS, when set, offers STARTTLS with its certificates (the host's, say from
	// tls.LoadX509KeyPair); nil offers none. Mail between MTAs on one host or a private network
	// needs none; across networks, set it.
	TLS *tls.Config
	// Auth, when set, offers AUTH PLAIN (RFC 4954) for submission-style use and requires it
	// before MAIL FROM (530 5.7.0 otherwise): it returns nil for a valid username and password.
	// The recipients stay restricted to the personas either way. AUTH is offered only after
	// STARTTLS unless AllowInsecureAuth.
	Auth func(username, password string) error
	// AllowInsecureAuth offers AUTH on a connection without TLS (a loopback listener).
	AllowInsecureAuth bool
	// ImplicitTLS makes every connection start with a TLS handshake with TLS's certificates
	// (SMTPS, RFC 8314: submission on port 465) instead of offering STARTTLS.
	ImplicitTLS bool
	// Logger receives the listener's errors; nil means slog.Default().
	Logger *slog.Logger
}

// Listener is an SMTP or LMTP server that delivers the mail it receives for the personas a
// Deliverer accepts: a service.Receiver. It never relays: a recipient that is not a persona's
// address, alias or subaddress (Deliverer.Accepts) is refused at RCPT TO with 550 5.1.1. It
// answers a message with 250 (LMTP: 250 for each recipient) only after Deliver returned nil — the
// message is in the store — so a crash at any point loses nothing a client was told was
// delivered, and a client that got no answer sends again, which stores nothing twice
// (ingestion is idempotent by Message-ID).
//
// The replies to DATA:
//   - 250 2.0.0: delivered;
//   - 451 4.3.0: Deliver failed for a reason that may pass (the store unreachable): send again;
//   - 552 5.3.4: larger than MaxMessageBytes, or than the Deliverer's parser accepts;
//   - 554 5.6.0: the Deliverer refused it for good (an error marked service.Permanent), or a
//     line longer than MaxLineLength;
//   - LMTP: one of these per recipient; a recipient whose persona got the message is answered
//     250 even when another's delivery failed.
//
// The listener is bound when New returns (Addr reports where), and serves from Receive on.
type Listener struct {
	opts Options
	ln   net.Listener
	log  *slog.Logger

	once sync.Once
}

// New binds a listener as o says. Errors: a bad option, or the address cannot be listened on.
func New(o Options) (*Listener, error) {
	if o.MaxMessageBytes < 0 || o.MaxRecipients < 0 || o.MaxLineLength < 0 || o.MaxConnections < 0 ||
		o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.MaxSessionTime < 0 {
		return nil, errors.New("smtp: listener: a negative limit (want 0 for the default, or a positive value)")
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = mail.DefaultMaxSize
	}
	o.MaxRecipients = orDefault(o.MaxRecipients, DefaultMaxRecipients)
	o.MaxLineLength = orDefault(o.MaxLineLength, DefaultMaxLineLength)
	o.MaxConnections = orDefault(o.MaxConnections, DefaultMaxConnections)
	o.ReadTimeout = orDefault(o.ReadTimeout, DefaultReadTimeout)
	o.WriteTimeout = orDefault(o.WriteTimeout, DefaultWriteTimeout)
	o.MaxSessionTime = orDefault(o.MaxSessionTime, DefaultMaxSessionTime)
	if o.Domain == "" {
		o.Domain = "localhost"
	}
	if o.ImplicitTLS && o.TLS == nil {
		return nil, errors.New("smtp: listener: ImplicitTLS without a TLS configuration")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	network, addr, err := listenAddress(o.Addr, o.LMTP)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil, fmt.Errorf("smtp: listen on %s: %w", addr, err)
	}
	l := &Listener{opts: o, log: o.Logger}
	l.ln = &limitListener{Listener: ln, session: o.MaxSessionTime, domain: o.Domain, slots: make(chan struct{}, o.MaxConnections)}
	if o.ImplicitTLS {
		l.ln = tls.NewListener(l.ln, o.TLS)
	}
	return l, nil
}

// listenAddress resolves Options.Addr into a network and an address.
func listenAddress(a string, lmtp bool) (network, addr string, err error) {
	if path, ok := strings.CutPrefix(a, "unix:"); ok {
		if path == "" {
			return "", "", errors.New("smtp: listener: unix: without a socket path")
		}
		return "unix", path, nil
	}
	if a == "" {
		if lmtp {
			return "tcp", "127.0.0.1:24", nil
		}
		return "tcp", "127.0.0.1:25", nil
	}
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", "", fmt.Errorf("smtp: listener address %q: %w (want host:port or unix:/path)", a, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return "tcp", net.JoinHostPort(host, port), nil
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Addr is the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Close releases the address of a listener that is not served (Receive closes it when it
// returns, so Close is for a listener never handed to Receive). Closing twice returns the
// second close's error.
func (l *Listener) Close() error { return l.ln.Close() }

// Receive serves connections, delivering every message into d, until ctx ends; then it closes
// the listener and every connection (a message not yet answered is sent again by its client)
// and returns nil. It returns the accept loop's error when the listener fails. Receive may be
// called once; a second call returns an error.
func (l *Listener) Receive(ctx context.Context, d service.Deliverer) error {
	started := false
	l.once.Do(func() { started = true })
	if !started {
		return errors.New("smtp: Receive called twice on one listener")
	}
	s := gosmtp.NewServer(&backend{l: l, d: d, ctx: ctx})
	s.LMTP = l.opts.LMTP
	s.Domain = l.opts.Domain
	s.MaxMessageBytes = l.opts.MaxMessageBytes
	s.MaxRecipients = l.opts.MaxRecipients
	s.MaxLineLength = l.opts.MaxLineLength
	s.ReadTimeout = l.opts.ReadTimeout
	s.WriteTimeout = l.opts.WriteTimeout
	if !l.opts.ImplicitTLS {
		s.TLSConfig = l.opts.TLS
	}
	s.AllowInsecureAuth = l.opts.AllowInsecureAuth
	s.ErrorLog = slog.NewLogLogger(l.log.Handler(), slog.LevelWarn)
	done := make(chan error, 1)
	go func() { done <- s.Serve(l.ln) }()
	select {
	case <-ctx.Done():
		s.Close()
		l.ln.Close() // when Serve had not registered it yet
		<-done
		return nil
	case err := <-done:
		s.Close()
		return fmt.Errorf("smtp: serve %s: %w", l.ln.Addr(), err)
	}
}

// backend makes a session per connection.
type backend struct {
	l   *Listener
	d   service.Deliverer
	ctx context.Context
}

func (b *backend) NewSession(c *gosmtp.Conn) (gosmtp.Session, error) {
	s := &session{b: b}
	if b.l.opts.Auth != nil {
		return &authSession{session: s}, nil
	}
	return s, nil
}

// session is one SMTP transaction after another on one connection.
type session struct {
	b      *backend
	authed bool
	from   string
	rcpts  []string
}

// Errors the listener answers with.
var (
	errUnknownRecipient = func(rcpt string) error {
		return &gosmtp.SMTPError{Code: 550, EnhancedCode: gosmtp.EnhancedCode{5, 1, 1}, Message: "<" + rcpt + ">: Recipient address rejected: no such persona here"}
	}
	errAuthRequired = &gosmtp.SMTPError{Code: 530, EnhancedCode: gosmtp.EnhancedCode{5, 7, 0}, Message: "Authentication required"}
	errTooLarge     = &gosmtp.SMTPError{Code: 552, EnhancedCode: gosmtp.EnhancedCode{5, 3, 4}, Message: "Message size exceeds the limit"}
	errTransient    = &gosmtp.SMTPError{Code: 451, EnhancedCode: gosmtp.EnhancedCode{4, 3, 0}, Message: "Message not stored, try again later"}
)

func errRefused(text string) error {
	return &gosmtp.SMTPError{Code: 554, EnhancedCode: gosmtp.EnhancedCode{5, 6, 0}, Message: "Message refused: " + text}
}

func (s *session) Reset() { s.from, s.rcpts = "", nil }

func (s *session) Logout() error { return nil }

func (s *session) Mail(from string, _ *gosmtp.MailOptions) error {
	if s.b.l.opts.Auth != nil && !s.authed {
		return errAuthRequired
	}
	s.from = from
	return nil
}

func (s *session) Rcpt(to string, _ *gosmtp.RcptOptions) error {
	if s.b.d.Accepts(to) == nil {
		return errUnknownRecipient(to)
	}
	s.rcpts = append(s.rcpts, to)
	return nil
}

func (s *session) Data(r io.Reader) error {
	_, err := s.deliver(r)
	return err
}

// LMTPData delivers the message once for all recipients and answers each: 250 when its persona
// got the message (even if the delivery failed for another), else the delivery's error.
func (s *session) LMTPData(r io.Reader, status gosmtp.StatusCollector) error {
	in, err := s.deliver(r)
	if err == nil {
		return nil
	}
	got := map[string]bool{}
	if in != nil {
		for _, d := range in.Deliveries {
			got[d.Persona.Name] = true
		}
	}
	for _, rcpt := range s.rcpts {
		if p := s.b.d.Accepts(rcpt); p != nil && got[p.Name] {
			status.SetStatus(rcpt, nil)
		} else {
			status.SetStatus(rcpt, err)
		}
	}
	return err
}

// deliver hands the message to the Deliverer, with a Return-Path header naming the envelope
// sender in front (this listener is the final delivery, RFC 5321 4.4: a report from the null
// sender reads as one), and turns its error into the reply.
func (s *session) deliver(r io.Reader) (*mail.Ingested, error) {
	data := &recordingReader{r: r}
	raw := io.MultiReader(strings.NewReader("Return-Path: <"+s.from+">\r\n"), data)
	source := "smtp"
	if s.b.l.opts.LMTP {
		source = "lmtp"
	}
	env := service.Envelope{Recipients: append([]string(nil), s.rcpts...), Sender: s.from, Source: source}
	in, err := s.b.d.Deliver(s.b.ctx, raw, env)
	if err == nil {
		return in, nil
	}
	switch {
	case errors.Is(data.err, gosmtp.ErrDataTooLarge), errors.Is(err, gosmtp.ErrDataTooLarge), errors.Is(err, mail.ErrTooLarge):
		return in, errTooLarge
	case errors.Is(data.err, gosmtp.ErrTooLongLine):
		return in, errRefused(fmt.Sprintf("a line is longer than %d octets", s.b.l.opts.MaxLineLength))
	case data.err != nil && !errors.Is(data.err, io.EOF):
		s.b.l.log.Warn("smtp: message not read to its end", "source", source, "err", data.err)
		return in, errTransient
	case service.IsPermanent(err):
		s.b.l.log.Warn("smtp: message refused", "source", source, "err", err)
		return in, errRefused(err.Error())
	}
	s.b.l.log.Warn("smtp: message not delivered", "source", source, "err", err)
	return in, errTransient
}

// recordingReader remembers the first error its reader returned.
type recordingReader struct {
	r   io.Reader
	err error
}

func (r *recordingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// authSession is a session that offers AUTH PLAIN.
type authSession struct{ *session }

func (s *authSession) AuthMechanisms() []string { return []string{sasl.Plain} }

func (s *authSession) Auth(mech string) (sasl.Server, error) {
	if mech != sasl.Plain {
		return nil, gosmtp.ErrAuthUnknownMechanism
	}
	return sasl.NewPlainServer(func(identity, username, password string) error {
		if identity != "" && identity != username {
			return gosmtp.ErrAuthFailed
		}
		if err := s.b.l.opts.Auth(username, password); err != nil {
			return gosmtp.ErrAuthFailed
		}
		s.authed = true
		return nil
	}), nil
}
