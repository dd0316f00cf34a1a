package schedule

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// fakeClock is a Clock the test moves by hand; After channels fire when Set passes them.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waiters = append(c.waiters, fakeWaiter{at: c.now.Add(d), ch: ch})
	return ch
}

// Set moves the clock to t and fires every After that is due by then.
func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.at.After(t) {
			kept = append(kept, w)
			continue
		}
		w.ch <- t
	}
	c.waiters = kept
}

func (c *fakeClock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// earliestWaiter returns the earliest time an After waits for that is before horizon.
func (c *fakeClock) earliestWaiter(horizon time.Time) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at time.Time
	for _, w := range c.waiters {
		if w.at.Before(horizon) && (at.IsZero() || w.at.Before(at)) {
			at = w.at
		}
	}
	return at, !at.IsZero()
}

// drive runs f (a Tick, a RunAgain) and, until it returns, moves the clock to each time the
// scheduler waits for that is before horizon (its retries; the lease renewals of a long lease
// lie beyond), so that every wait ends exactly when it is due. It fails the test when f has
// not returned within a minute.
func (c *fakeClock) drive(t testing.TB, horizon time.Time, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	deadline := time.After(time.Minute)
	for {
		select {
		case <-done:
			return
		case <-deadline:
			t.Fatal("the scheduler did not return within a minute")
		case <-time.After(time.Millisecond):
		}
		if at, ok := c.earliestWaiter(horizon); ok {
			c.Set(at)
		}
	}
}

// withoutJitter makes the retry backoff exact.
func withoutJitter() Option {
	return func(s *Scheduler) { s.jitter = func(d time.Duration) time.Duration { return d } }
}

// logRecord is one log record a logCapture kept: its level, message and attributes as text.
type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

// logCapture is a slog.Handler that keeps the records at or above its level.
type logCapture struct {
	mu      *sync.Mutex
	records *[]logRecord
	level   slog.Level
	attrs   []slog.Attr
}

func newLogCapture(level slog.Level) *logCapture {
	return &logCapture{mu: &sync.Mutex{}, records: &[]logRecord{}, level: level}
}

func (h *logCapture) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		v := a.Value.Resolve()
		if t, ok := v.Any().(time.Time); ok && v.Kind() == slog.KindTime {
			rec.attrs[a.Key] = t.UTC().Format(time.RFC3339Nano)
		} else {
			rec.attrs[a.Key] = v.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, rec)
	return nil
}

func (h *logCapture) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(slices.Clone(h.attrs), as...)
	return &c
}

func (h *logCapture) WithGroup(string) slog.Handler { return h }

// lines returns the records as "LEVEL msg key=value ..." lines with the named attributes only,
// in the order given.
func (h *logCapture) lines(keys ...string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range *h.records {
		line := r.level.String() + " " + r.msg
		for _, k := range keys {
			if v, ok := r.attrs[k]; ok {
				line += " " + k + "=" + v
			}
		}
		out = append(out, line)
	}
	return out
}

// dialects are the databases every replica test runs on.
var dialects = []store.Dialect{store.DialectSQLite, store.DialectMySQL}

// eachDialect runs f as a subtest per dialect, with the DSN of a fresh migrated database.
func eachDialect(t *testing.T, f func(t *testing.T, dsn string)) {
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) { f(t, scratchDSN(t, d)) })
	}
}

// scratchDSN returns the DSN of a fresh, migrated database of dialect d that lives as long as
// the test: a SQLite file in a temporary directory, or a MySQL database from storetest.MySQL
// (an unreachable MySQL server skips the test, or fails it when CI=true).
func scratchDSN(t testing.TB, d store.Dialect) string {
	t.Helper()
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "schedule.db")
	if d == store.DialectMySQL {
		dsn = storetest.MySQL(t)
	}
	s, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return dsn
}

// openStore opens a store of its own (its own connection pool) on dsn, on clock, closed when
// the test ends.
func openStore(t testing.TB, dsn string, clock Clock) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), dsn, store.WithClock(clock.Now))
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// quietLogger drops the scheduler's logs (tests assert on the store, not on log lines).
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// persona returns a persona named name with the given enabled responsibilities, each
// "name=schedule@zone".
func persona(name string, resps ...string) *runtime.Persona {
	p := &runtime.Persona{Name: name}
	for _, r := range resps {
		n, rest, _ := strings.Cut(r, "=")
		i := strings.LastIndex(rest, "@")
		sched, tz := rest[:i], rest[i+1:]
		p.Responsibilities = append(p.Responsibilities, runtime.Responsibility{Name: n, Schedule: sched, Timezone: tz, Enabled: true})
	}
	return p
}

// recorder is a Runner that counts the fires it ran, by run key, and can hold the first run of
// a fire until released.
type recorder struct {
	mu      sync.Mutex
	ran     map[string]int
	holders map[string][]string // run key -> holders that ran it, in order
	hold    map[string]chan struct{}
	started map[string]chan struct{}
	result  func(f Fire) (FireResult, error)
}

func newRecorder() *recorder {
	return &recorder{ran: map[string]int{}, holders: map[string][]string{}, hold: map[string]chan struct{}{},
		started: map[string]chan struct{}{}}
}

// holdFire makes the next run of key block until the returned release is called (or its
// context ends); started closes when that run begins.
func (r *recorder) holdFire(key string) (started <-chan struct{}, release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, s := make(chan struct{}), make(chan struct{})
	r.hold[key], r.started[key] = h, s
	var once sync.Once
	return s, func() { once.Do(func() { close(h) }) }
}

func (r *recorder) RunFire(ctx context.Context, f Fire) (FireResult, error) {
	r.mu.Lock()
	r.ran[f.Run.Key]++
	r.holders[f.Run.Key] = append(r.holders[f.Run.Key], f.Run.Lease.Holder)
	h, s := r.hold[f.Run.Key], r.started[f.Run.Key]
	delete(r.hold, f.Run.Key)
	delete(r.started, f.Run.Key)
	result := r.result
	r.mu.Unlock()
	if s != nil {
		close(s)
	}
	if h != nil {
		select {
		case <-h:
		case <-ctx.Done():
			return FireResult{}, context.Cause(ctx)
		}
	}
	if result != nil {
		return result(f)
	}
	return FireResult{Finish: store.Finish{StopReason: "end_turn", Usage: chat.Usage{InputTokens: 10, OutputTokens: 2}},
		Text: "digest of " + f.Run.Key}, nil
}

func (r *recorder) count(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ran[key]
}

// trailOf returns the status trail of persona's responsibility as "fire-in-UTC status reason"
// lines, ordered by fire.
func trailOf(t testing.TB, s *store.Store, persona, responsibility string) []string {
	t.Helper()
	runs, err := s.Runs(context.Background(), store.RunQuery{Persona: persona, Kind: store.RunScheduled, Responsibility: responsibility})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(runs, func(a, b store.Run) int { return a.FireAt.Compare(b.FireAt) })
	var out []string
	for _, r := range runs {
		line := r.FireAt.UTC().Format("01-02T15:04Z") + " " + string(r.Status)
		if r.Reason != "" {
			line += " (" + r.Reason + ")"
		}
		out = append(out, line)
	}
	return out
}

// utc parses "2006-01-02T15:04:05Z".
func utc(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func newScheduler(t testing.TB, st *store.Store, personas []*runtime.Persona, r Runner, clock Clock, opts ...Option) *Scheduler {
	t.Helper()
	s, err := New(st, personas, r, append([]Option{WithClock(clock), WithLogger(quietLogger)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func lines(s []string) string { return strings.Join(s, "\n") }

func diffTrail(t testing.TB, got, want []string) {
	t.Helper()
	if lines(got) != lines(want) {
		t.Errorf("trail:\n%s\nwant:\n%s", lines(got), lines(want))
	}
}
