package imap

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	goimap "github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
)

// TLSMode says how a Receiver secures its connection.
type TLSMode int

// The TLS modes.
const (
	// ImplicitTLS starts the connection with a TLS handshake (imaps, port 993). The default.
	ImplicitTLS TLSMode = iota
	// StartTLS upgrades a plain connection with STARTTLS (port 143) and fails when the server
	// does not offer it.
	StartTLS
	// NoTLS never encrypts: only for a server on the same host.
	NoTLS
)

// Defaults of a Receiver.
const (
	DefaultPollInterval = time.Minute
	DefaultIdleInterval = 10 * time.Minute
	DefaultMinBackoff   = time.Second
	DefaultMaxBackoff   = 5 * time.Minute
	DefaultDialTimeout  = 30 * time.Second
)

// Checkpoints keep how far each mailbox was read; *store.Store is one.
type Checkpoints interface {
	ReceiverCheckpoint(ctx context.Context, receiver string) (store.Checkpoint, bool, error)
	SaveReceiverCheckpoint(ctx context.Context, receiver string, c store.Checkpoint) error
}

// Options configure a Receiver.
type Options struct {
	// Addr is the server's host:port.
	Addr string
	// TLS is how the connection is secured (ImplicitTLS by default); TLSConfig configures it
	// (nil: the system's roots and the server's host name).
	TLS       TLSMode
	TLSConfig *tls.Config
	// Username and Password log in (LOGIN).
	Username, Password string
	// Mailboxes are the mailboxes to read; nil means INBOX.
	Mailboxes []string
	// MoveTo, when set, is the mailbox a delivered message is moved to (MOVE, or COPY, \Deleted
	// and EXPUNGE where the server has no MOVE) instead of being flagged \Seen.
	MoveTo string
	// Recipients, when set, are given as every message's envelope recipients (the address whose
	// mail the account holds), so a message that names it in no header — a Bcc, a list — still
	// reaches its persona. nil routes by the headers alone.
	Recipients []string
	// Checkpoints keep the mailboxes' checkpoints (required; a *store.Store).
	Checkpoints Checkpoints
	// Name is the receiver's name in the checkpoints, followed by "/" and the mailbox; "" means
	// "imap://USERNAME@ADDR".
	Name string
	// MaxMessageBytes is the largest message fetched (by its RFC822.SIZE); 0 means
	// mail.DefaultMaxSize.
	MaxMessageBytes int64
	// PollInterval is how often a mailbox is checked on a server without IDLE (or with
	// DisableIdle); IdleInterval how long one IDLE lasts before the mailbox is checked and IDLE
	// starts anew.
	PollInterval, IdleInterval time.Duration
	// DisableIdle polls even when the server offers IDLE.
	DisableIdle bool
	// MinBackoff and MaxBackoff bound the wait before a failed connection is made again.
	MinBackoff, MaxBackoff time.Duration
	// DialTimeout bounds connecting (DefaultDialTimeout).
	DialTimeout time.Duration
	// Logger receives what could not be delivered and connection failures; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Receiver reads IMAP mailboxes: a service.Receiver.
type Receiver struct {
	o    Options
	log  *slog.Logger
	once sync.Once
}

// New returns a Receiver as o says. Errors: no Addr, no Username, no Checkpoints, a bad mode or
// a negative duration or size.
func New(o Options) (*Receiver, error) {
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return nil, fmt.Errorf("imap: address %q: want host:port", o.Addr)
	}
	if o.Username == "" {
		return nil, errors.New("imap: no username")
	}
	if o.Checkpoints == nil {
		return nil, errors.New("imap: no checkpoints (a *store.Store)")
	}
	if o.TLS < ImplicitTLS || o.TLS > NoTLS {
		return nil, fmt.Errorf("imap: unknown TLS mode %d", o.TLS)
	}
	if o.MaxMessageBytes < 0 || o.PollInterval < 0 || o.IdleInterval < 0 || o.MinBackoff < 0 || o.MaxBackoff < 0 || o.DialTimeout < 0 {
		return nil, errors.New("imap: a negative size or duration")
	}
	if len(o.Mailboxes) == 0 {
		o.Mailboxes = []string{"INBOX"}
	}
	if o.Name == "" {
		o.Name = "imap://" + o.Username + "@" + o.Addr
	}
	for _, m := range o.Mailboxes {
		if m == "" || m == o.MoveTo {
			return nil, fmt.Errorf("imap: mailbox %q: empty, or the one messages are moved to", m)
		}
		if n := len(o.Name) + 1 + len(m); n > store.MaxNameChars {
			return nil, fmt.Errorf("imap: checkpoint name %q of %d characters (at most %d): set a shorter Name", o.Name+"/"+m, n, store.MaxNameChars)
		}
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = mail.DefaultMaxSize
	}
	o.PollInterval = orDefault(o.PollInterval, DefaultPollInterval)
	o.IdleInterval = orDefault(o.IdleInterval, DefaultIdleInterval)
	o.MinBackoff = orDefault(o.MinBackoff, DefaultMinBackoff)
	o.MaxBackoff = orDefault(o.MaxBackoff, DefaultMaxBackoff)
	o.DialTimeout = orDefault(o.DialTimeout, DefaultDialTimeout)
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Receiver{o: o, log: o.Logger}, nil
}

func orDefault(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// ParseURL reads a receiver's connection from a URL, the example service's -imap flag:
// imaps://USER:PASSWORD@HOST[:993]/MAILBOX (implicit TLS), imap://USER:PASSWORD@HOST[:143]/MAILBOX
// (STARTTLS), with the query parameters mailbox=NAME (more mailboxes; repeatable), move=NAME
// (MoveTo) and tls=none (imap:// without TLS: only for a server on the same host). The path
// and mailbox names are URL-decoded; no mailbox means INBOX. The other fields are left zero.
func ParseURL(raw string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return Options{}, fmt.Errorf("imap: URL: %w", err)
	}
	var o Options
	switch u.Scheme {
	case "imaps":
		o.TLS = ImplicitTLS
	case "imap":
		o.TLS = StartTLS
	default:
		return Options{}, fmt.Errorf("imap: URL %q: scheme %q (want imaps or imap)", u.Redacted(), u.Scheme)
	}
	if u.Hostname() == "" || u.User == nil || u.User.Username() == "" {
		return Options{}, fmt.Errorf("imap: URL %q: want a user and a host (imaps://user:password@host/INBOX)", u.Redacted())
	}
	port := u.Port()
	if port == "" {
		port = map[TLSMode]string{ImplicitTLS: "993", StartTLS: "143"}[o.TLS]
	}
	o.Addr = net.JoinHostPort(u.Hostname(), port)
	if _, _, err := net.SplitHostPort(o.Addr); err != nil || strings.ContainsAny(u.Hostname(), "[]/ ") {
		return Options{}, fmt.Errorf("imap: URL %q: host %q is not a host name or address", u.Redacted(), u.Hostname())
	}
	o.Username = u.User.Username()
	o.Password, _ = u.User.Password()
	q := u.Query()
	for k := range q {
		switch k {
		case "mailbox", "move", "tls":
		default:
			return Options{}, fmt.Errorf("imap: URL %q: unknown parameter %q (want mailbox, move or tls)", u.Redacted(), k)
		}
	}
	switch q.Get("tls") {
	case "":
	case "none":
		if o.TLS != StartTLS {
			return Options{}, fmt.Errorf("imap: URL %q: tls=none with imaps", u.Redacted())
		}
		o.TLS = NoTLS
	default:
		return Options{}, fmt.Errorf("imap: URL %q: tls=%q (want none)", u.Redacted(), q.Get("tls"))
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		o.Mailboxes = append(o.Mailboxes, p)
	}
	o.Mailboxes = append(o.Mailboxes, q["mailbox"]...)
	o.MoveTo = q.Get("move")
	return o, nil
}

// Receive reads every mailbox, each on a connection of its own, delivering into d, until ctx
// ends (then it returns nil). A failure of one session is logged and the connection made again
// after a backoff; Receive returns an error only for a failure that cannot pass (the login
// refused). Receive may be called once.
func (r *Receiver) Receive(ctx context.Context, d service.Deliverer) error {
	started := false
	r.once.Do(func() { started = true })
	if !started {
		return errors.New("imap: Receive called twice on one receiver")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(r.o.Mailboxes))
	for _, m := range r.o.Mailboxes {
		go func() { errs <- r.watch(ctx, m, d) }()
	}
	var first error
	for range r.o.Mailboxes {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// errLoginRefused marks a login the server refused: retrying with the same credentials cannot
// help.
var errLoginRefused = errors.New("imap: login refused")

// watch reads one mailbox until ctx ends, reconnecting with backoff.
func (r *Receiver) watch(ctx context.Context, mailbox string, d service.Deliverer) error {
	backoff := r.o.MinBackoff
	for {
		worked, err := r.session(ctx, mailbox, d)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, errLoginRefused) {
			return err
		}
		if worked {
			backoff = r.o.MinBackoff
		}
		r.log.Warn("imap: session ended; connecting again", "mailbox", mailbox, "err", err, "after", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, r.o.MaxBackoff)
	}
}

// session connects, selects the mailbox and alternates reading what is new with waiting for
// more, until an error or the end of ctx. worked reports whether the mailbox was read once.
func (r *Receiver) session(ctx context.Context, mailbox string, d service.Deliverer) (worked bool, err error) {
	arrived := make(chan struct{}, 1)
	c, err := r.dial(arrived)
	if err != nil {
		return false, err
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer func() {
		stop()
		c.Close()
	}()
	if err := c.Login(r.o.Username, r.o.Password).Wait(); err != nil {
		var ie *goimap.Error
		if errors.As(err, &ie) && ie.Type == goimap.StatusResponseTypeNo {
			return false, fmt.Errorf("%w: %s at %s: %v", errLoginRefused, r.o.Username, r.o.Addr, err)
		}
		return false, fmt.Errorf("imap: login: %w", err)
	}
	for {
		if err := r.sync(ctx, c, mailbox, d); err != nil {
			return worked, err
		}
		worked = true
		if err := r.wait(ctx, c, arrived); err != nil {
			return worked, err
		}
		if ctx.Err() != nil {
			return worked, nil
		}
	}
}

// dial connects as Options.TLS says; arrived is signalled when the server reports new mail.
func (r *Receiver) dial(arrived chan struct{}) (*imapclient.Client, error) {
	tlsConfig := r.o.TLSConfig
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	tlsConfig = tlsConfig.Clone()
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName, _, _ = net.SplitHostPort(r.o.Addr)
	}
	opts := &imapclient.Options{
		TLSConfig: tlsConfig,
		Dialer:    &net.Dialer{Timeout: r.o.DialTimeout},
		UnilateralDataHandler: &imapclient.UnilateralDataHandler{Mailbox: func(m *imapclient.UnilateralDataMailbox) {
			if m.NumMessages != nil {
				select {
				case arrived <- struct{}{}:
				default:
				}
			}
		}},
	}
	var c *imapclient.Client
	var err error
	switch r.o.TLS {
	case ImplicitTLS:
		c, err = imapclient.DialTLS(r.o.Addr, opts)
	case StartTLS:
		c, err = imapclient.DialStartTLS(r.o.Addr, opts)
	default:
		c, err = imapclient.DialInsecure(r.o.Addr, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("imap: connect to %s: %w", r.o.Addr, err)
	}
	if err := c.WaitGreeting(); err != nil {
		c.Close()
		return nil, fmt.Errorf("imap: greeting of %s: %w", r.o.Addr, err)
	}
	return c, nil
}

// wait returns when new mail may have arrived: IDLE until the server reports it or
// IdleInterval passed, or a sleep of PollInterval.
func (r *Receiver) wait(ctx context.Context, c *imapclient.Client, arrived chan struct{}) error {
	if r.o.DisableIdle || !c.Caps().Has(goimap.CapIdle) && !c.Caps().Has(goimap.CapIMAP4rev2) {
		select {
		case <-ctx.Done():
		case <-arrived:
		case <-time.After(r.o.PollInterval):
		}
		return nil
	}
	idle, err := c.Idle()
	if err != nil {
		return fmt.Errorf("imap: IDLE: %w", err)
	}
	select {
	case <-ctx.Done():
	case <-arrived:
	case <-time.After(r.o.IdleInterval):
	case <-c.Closed():
	}
	if err := idle.Close(); err != nil {
		return fmt.Errorf("imap: end IDLE: %w", err)
	}
	if err := idle.Wait(); err != nil {
		return fmt.Errorf("imap: IDLE: %w", err)
	}
	return nil
}

// sync delivers the mailbox's new messages in UID order, acknowledging and checkpointing each.
func (r *Receiver) sync(ctx context.Context, c *imapclient.Client, mailbox string, d service.Deliverer) error {
	sel, err := c.Select(mailbox, nil).Wait()
	if err != nil {
		return fmt.Errorf("imap: select %s: %w", mailbox, err)
	}
	key := r.o.Name + "/" + mailbox
	cp, ok, err := r.o.Checkpoints.ReceiverCheckpoint(ctx, key)
	if err != nil {
		return err
	}
	var criteria goimap.SearchCriteria
	if !ok || cp.UIDValidity != sel.UIDValidity {
		if ok {
			r.log.Warn("imap: UIDVALIDITY changed; reading the mailbox again", "mailbox", mailbox, "was", cp.UIDValidity, "now", sel.UIDValidity)
		}
		cp = store.Checkpoint{UIDValidity: sel.UIDValidity}
		if r.o.MoveTo == "" {
			criteria.NotFlag = []goimap.Flag{goimap.FlagSeen}
		}
	} else {
		criteria.UID = []goimap.UIDSet{{goimap.UIDRange{Start: goimap.UID(cp.LastUID) + 1, Stop: 0}}}
	}
	if sel.NumMessages == 0 {
		return r.save(ctx, key, cp)
	}
	found, err := c.UIDSearch(&criteria, nil).Wait()
	if err != nil {
		return fmt.Errorf("imap: search %s: %w", mailbox, err)
	}
	uids := found.AllUIDs()
	slices.Sort(uids)
	for _, uid := range uids {
		if uint32(uid) <= cp.LastUID { // "n:*" includes the last message even when its UID is below n
			continue
		}
		if err := r.one(ctx, c, mailbox, uid, d); err != nil {
			return err
		}
		cp.LastUID = uint32(uid)
		if err := r.save(ctx, key, cp); err != nil {
			return err
		}
	}
	return r.save(ctx, key, cp)
}

func (r *Receiver) save(ctx context.Context, key string, cp store.Checkpoint) error {
	if err := r.o.Checkpoints.SaveReceiverCheckpoint(ctx, key, cp); err != nil {
		return fmt.Errorf("imap: checkpoint %s: %w", key, err)
	}
	return nil
}

// one fetches, delivers and acknowledges the message uid. A message refused for good (too
// large, or by the Deliverer) is passed by, unacknowledged; any other failure is returned.
func (r *Receiver) one(ctx context.Context, c *imapclient.Client, mailbox string, uid goimap.UID, d service.Deliverer) error {
	set := goimap.UIDSetNum(uid)
	sizes, err := c.Fetch(set, &goimap.FetchOptions{UID: true, RFC822Size: true}).Collect()
	if err != nil {
		return fmt.Errorf("imap: fetch the size of %s/%d: %w", mailbox, uid, err)
	}
	if len(sizes) == 0 {
		return nil // expunged meanwhile
	}
	if sizes[0].RFC822Size > r.o.MaxMessageBytes {
		r.log.Warn("imap: message too large; left unseen", "mailbox", mailbox, "uid", uid, "size", sizes[0].RFC822Size, "limit", r.o.MaxMessageBytes)
		return nil
	}
	section := &goimap.FetchItemBodySection{Peek: true}
	msgs, err := c.Fetch(set, &goimap.FetchOptions{UID: true, BodySection: []*goimap.FetchItemBodySection{section}}).Collect()
	if err != nil {
		return fmt.Errorf("imap: fetch %s/%d: %w", mailbox, uid, err)
	}
	if len(msgs) == 0 {
		return nil
	}
	raw := msgs[0].FindBodySection(section)
	env := service.Envelope{Recipients: r.o.Recipients, Source: "imap:" + mailbox}
	if _, err := d.Deliver(ctx, strings.NewReader(string(raw)), env); err != nil {
		if errors.Is(err, mail.ErrTooLarge) || service.IsPermanent(err) {
			r.log.Warn("imap: message refused; left unseen", "mailbox", mailbox, "uid", uid, "err", err)
			return nil
		}
		return fmt.Errorf("imap: deliver %s/%d: %w", mailbox, uid, err)
	}
	if r.o.MoveTo != "" {
		if _, err := c.Move(set, r.o.MoveTo).Wait(); err != nil {
			return fmt.Errorf("imap: move %s/%d to %s: %w", mailbox, uid, r.o.MoveTo, err)
		}
		return nil
	}
	if err := c.Store(set, &goimap.StoreFlags{Op: goimap.StoreFlagsAdd, Silent: true, Flags: []goimap.Flag{goimap.FlagSeen}}, nil).Close(); err != nil {
		return fmt.Errorf("imap: flag %s/%d seen: %w", mailbox, uid, err)
	}
	return nil
}
