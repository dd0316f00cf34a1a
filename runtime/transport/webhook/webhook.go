package webhook

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
)

// DefaultMaxBodyBytes bounds a request body when Options.MaxBodyBytes is 0: room for a message
// of mail.DefaultMaxSize and the provider's encoding of it (JSON escapes, form fields).
const DefaultMaxBodyBytes = 40 << 20

// Options configure an endpoint. At least one of the credentials is required (Mailgun's
// signing key stands in for them on a Mailgun endpoint).
type Options struct {
	// Username and Password, when Username is set, are the HTTP basic credentials requests must
	// carry.
	Username, Password string
	// Secret, when set, is a shared secret requests must carry, as "Authorization: Bearer
	// SECRET" or as the query parameter secret=SECRET.
	Secret string
	// MaxBodyBytes bounds the request body (DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// Logger receives refusals and failures; nil means slog.Default().
	Logger *slog.Logger
}

// Endpoint receives one provider's posts. Its Handler delivers them.
type Endpoint struct {
	kind    string // "raw", "postmark", "sendgrid", "mailgun"
	opts    Options
	mailgun MailgunOptions
	now     func() time.Time
	// refuse is the status that tells this provider not to post the request again.
	refuse int
}

// ErrNoCredentials is returned by the constructors given no way to authenticate requests.
var ErrNoCredentials = errors.New("webhook: no credentials (set Username and Password, or Secret; Mailgun: SigningKey)")

func newEndpoint(kind string, o Options, refuse int, needCredentials bool) (*Endpoint, error) {
	if needCredentials && o.Username == "" && o.Secret == "" {
		return nil, fmt.Errorf("%s endpoint: %w", kind, ErrNoCredentials)
	}
	if o.Username != "" && o.Password == "" {
		return nil, fmt.Errorf("webhook: %s endpoint: a username without a password", kind)
	}
	if o.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("webhook: %s endpoint: negative MaxBodyBytes", kind)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Endpoint{kind: kind, opts: o, now: time.Now, refuse: refuse}, nil
}

// NewRaw returns an endpoint whose requests carry one raw RFC 5322 message as the body (any
// Content-Type; message/rfc822 is the proper one). Optional headers give the envelope:
// X-Envelope-To (the recipients, comma-separated, repeatable) and X-Envelope-From. Errors:
// ErrNoCredentials, or a bad option.
func NewRaw(o Options) (*Endpoint, error) { return newEndpoint("raw", o, http.StatusBadRequest, true) }

// Handler returns the http.Handler that delivers this endpoint's requests into d.
func (e *Endpoint) Handler(d service.Deliverer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { e.serve(w, r, d) })
}

// inbound is what a provider's request holds: the raw message and the envelope.
type inbound struct {
	raw []byte
	env service.Envelope
}

// refusal is a request refused for good, with the text the provider is answered.
type refusal struct {
	status int
	text   string
}

func (r *refusal) Error() string { return r.text }

func (e *Endpoint) refused(format string, args ...any) error {
	return &refusal{status: e.refuse, text: fmt.Sprintf(format, args...)}
}

func (e *Endpoint) serve(w http.ResponseWriter, r *http.Request, d service.Deliverer) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if e.kind != "mailgun" || e.opts.Username != "" || e.opts.Secret != "" {
		if !e.authorized(r) {
			if e.opts.Username != "" {
				w.Header().Set("WWW-Authenticate", `Basic realm="personagen webhook"`)
			}
			e.opts.Logger.Warn("webhook: unauthenticated request refused", "endpoint", e.kind, "remote", r.RemoteAddr)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, e.opts.MaxBodyBytes)
	in, err := e.read(r)
	if err == nil {
		in.env.Source = "webhook:" + e.kind
		_, err = d.Deliver(r.Context(), bytes.NewReader(in.raw), in.env)
	}
	if err == nil {
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "ok\n")
		return
	}
	if errors.Is(err, errBadSignature) {
		e.opts.Logger.Warn("webhook: unauthenticated request refused", "endpoint", e.kind, "remote", r.RemoteAddr)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	var ref *refusal
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &ref):
	case errors.As(err, &tooBig):
		ref = &refusal{status: e.refuse, text: fmt.Sprintf("request body over %d bytes", tooBig.Limit)}
	case errors.Is(err, mail.ErrTooLarge):
		ref = &refusal{status: e.refuse, text: err.Error()}
	case service.IsPermanent(err):
		ref = &refusal{status: e.refuse, text: err.Error()}
	}
	if ref != nil {
		status := ref.status
		if status == http.StatusBadRequest && (tooBig != nil || errors.Is(err, mail.ErrTooLarge)) {
			status = http.StatusRequestEntityTooLarge
		}
		e.opts.Logger.Warn("webhook: request refused", "endpoint", e.kind, "status", status, "err", ref.text)
		http.Error(w, ref.text, status)
		return
	}
	e.opts.Logger.Warn("webhook: message not delivered", "endpoint", e.kind, "err", err)
	http.Error(w, "message not stored, try again later", http.StatusServiceUnavailable)
}

// authorized checks the request's basic credentials or shared secret in constant time.
func (e *Endpoint) authorized(r *http.Request) bool {
	if e.opts.Username != "" {
		if u, p, ok := r.BasicAuth(); ok && equal(u, e.opts.Username) && equal(p, e.opts.Password) {
			return true
		}
	}
	if e.opts.Secret != "" {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && equal(tok, e.opts.Secret) {
			return true
		}
		if q := r.URL.Query().Get("secret"); q != "" && equal(q, e.opts.Secret) {
			return true
		}
	}
	return false
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// read extracts the message and envelope from the request in the endpoint's format.
func (e *Endpoint) read(r *http.Request) (inbound, error) {
	switch e.kind {
	case "postmark":
		return e.readPostmark(r)
	case "sendgrid":
		return e.readSendGrid(r)
	case "mailgun":
		return e.readMailgun(r)
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return inbound{}, err
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return inbound{}, e.refused("empty body: want a raw RFC 5322 message")
	}
	var env service.Envelope
	for _, v := range r.Header.Values("X-Envelope-To") {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a != "" {
				env.Recipients = append(env.Recipients, a)
			}
		}
	}
	env.Sender = strings.Trim(strings.TrimSpace(r.Header.Get("X-Envelope-From")), "<>")
	return inbound{raw: raw, env: env}, nil
}

// withReturnPath puts a Return-Path naming the envelope sender in front of raw when the
// provider told the sender and raw has none at its top (the provider, not the sender, wrote the
// envelope: a bounce's null sender must show).
func withReturnPath(raw []byte, sender string, known bool) []byte {
	if !known || bytes.HasPrefix(bytes.ToLower(raw), []byte("return-path:")) {
		return raw
	}
	return append([]byte("Return-Path: <"+sender+">\r\n"), raw...)
}

// Server serves endpoints at paths of one address: a service.Receiver for a host that gives
// the webhooks a listener of their own (the example service's -webhook ADDR).
type Server struct {
	ln    net.Listener
	paths map[string]*Endpoint
	once  sync.Once
}

// NewServer binds addr (an empty host means 127.0.0.1; put a TLS-terminating proxy in front
// for the providers) and will serve each endpoint at its path ("/postmark", …). Errors: no
// endpoints, a path that does not start with "/", or the address cannot be listened on.
func NewServer(addr string, paths map[string]*Endpoint) (*Server, error) {
	if len(paths) == 0 {
		return nil, errors.New("webhook: a server without endpoints")
	}
	for p, e := range paths {
		if !strings.HasPrefix(p, "/") || e == nil {
			return nil, fmt.Errorf("webhook: path %q: want a path starting with / and an endpoint", p)
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("webhook: address %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("webhook: listen on %s: %w", addr, err)
	}
	return &Server{ln: ln, paths: paths}, nil
}

// Addr is the address the server is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close releases the address of a server that is not served (Receive closes it when it
// returns).
func (s *Server) Close() error { return s.ln.Close() }

// Receive serves the endpoints, delivering into d, until ctx ends (then it stops accepting,
// gives requests in progress 10 seconds, and returns nil). Receive may be called once.
func (s *Server) Receive(ctx context.Context, d service.Deliverer) error {
	started := false
	s.once.Do(func() { started = true })
	if !started {
		return errors.New("webhook: Receive called twice on one server")
	}
	mux := http.NewServeMux()
	for p, e := range s.paths {
		mux.Handle(p, e.Handler(d))
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second, ReadTimeout: 5 * time.Minute, WriteTimeout: 5 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) }}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(s.ln) }()
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
		<-done
		return nil
	case err := <-done:
		return fmt.Errorf("webhook: serve %s: %w", s.ln.Addr(), err)
	}
}
