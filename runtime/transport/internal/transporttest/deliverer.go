package transporttest

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// Deliverer is a service.Deliverer over a store: Deliver ingests with mail.Ingest (the
// envelope recipients as Ingestion.Envelope) and then records a bounce (mail.RecordBounce), as
// the service does. Its hooks let a test stop or kill the process at a point.
type Deliverer struct {
	Store    *store.Store
	Personas []*runtime.Persona
	Parser   *mail.Parser
	// BeforeDeliver, when set, runs before ingesting; AfterCommit after the store committed and
	// before Deliver returns (the listener's 250 comes after it).
	BeforeDeliver func(env service.Envelope)
	AfterCommit   func(in *mail.Ingested)

	mu        sync.Mutex
	envelopes []service.Envelope
}

// NewDeliverer returns a Deliverer over st for personas.
func NewDeliverer(st *store.Store, personas ...*runtime.Persona) *Deliverer {
	return &Deliverer{Store: st, Personas: personas}
}

// Deliver implements service.Deliverer.
func (d *Deliverer) Deliver(ctx context.Context, raw io.Reader, env service.Envelope) (*mail.Ingested, error) {
	if d.BeforeDeliver != nil {
		d.BeforeDeliver(env)
	}
	in, err := mail.Ingest(ctx, d.Store, raw, mail.Ingestion{Personas: d.Personas, Envelope: env.Recipients, Parser: d.Parser})
	if err != nil {
		return in, err
	}
	if _, _, err := mail.RecordBounce(ctx, d.Store, in, env.Recipients...); err != nil {
		return in, err
	}
	d.mu.Lock()
	d.envelopes = append(d.envelopes, env)
	d.mu.Unlock()
	if d.AfterCommit != nil {
		d.AfterCommit(in)
	}
	return in, nil
}

// Accepts implements service.Deliverer.
func (d *Deliverer) Accepts(address string) *runtime.Persona {
	return mail.PersonaFor(d.Personas, address)
}

// Envelopes returns the envelopes of the messages delivered so far.
func (d *Deliverer) Envelopes() []service.Envelope {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]service.Envelope(nil), d.envelopes...)
}

// Persona returns a persona named name with a mailbox at address.
func Persona(name, address string, aliases ...string) *runtime.Persona {
	p := &runtime.Persona{Name: name}
	p.Mailbox.Address, p.Mailbox.Aliases = address, aliases
	return p
}

// Dialects are the store dialects each store test runs on.
var Dialects = []store.Dialect{store.DialectSQLite, store.DialectMySQL}

// ScratchDSN returns the DSN of a fresh, migrated store of dialect d that lives as long as the
// test: a SQLite file in a temporary directory, or a MySQL database (storetest.MySQL).
func ScratchDSN(t testing.TB, d store.Dialect) string {
	t.Helper()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "transport.db")
	if d == store.DialectMySQL {
		dsn = storetest.MySQL(t)
	}
	s := Open(t, dsn)
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("migrate %s: %v", dsn, err)
	}
	return dsn
}

// Open opens the store at dsn, closed when the test ends.
func Open(t testing.TB, dsn string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Stored returns the messages of mailbox, oldest first, as "direction message-id" lines.
func Stored(t testing.TB, s *store.Store, mailbox string) []string {
	t.Helper()
	var rows []struct {
		Direction string `db:"direction"`
		MessageID string `db:"message_id"`
	}
	if err := s.DB().SelectContext(context.Background(), &rows, s.DB().Rebind(`SELECT direction, message_id FROM messages WHERE mailbox = ? ORDER BY seq`), mailbox); err != nil {
		t.Fatalf("read %s: %v", mailbox, err)
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s %s", r.Direction, r.MessageID)
	}
	return out
}

// WaitEnvelopes waits up to a minute for n messages to have been delivered (a test that polls
// the store sees a message committed a moment before its Deliver returned) and returns the
// envelopes of all delivered so far.
func (d *Deliverer) WaitEnvelopes(t testing.TB, n int) []service.Envelope {
	t.Helper()
	Eventually(t, time.Minute, fmt.Sprintf("%d deliveries", n), func() bool { return len(d.Envelopes()) >= n }, nil)
	return d.Envelopes()
}
