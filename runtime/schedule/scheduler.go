package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// Defaults of the scheduler's options.
const (
	// DefaultCatchUp is how late a fire may still run: after downtime, the latest missed fire
	// runs when it is at most this old, and is recorded missed otherwise.
	DefaultCatchUp = time.Hour
	// DefaultLease is how long a claimed run's lease lasts; the scheduler renews it every third
	// of that while the run works, and other replicas take the run over or abandon it once it
	// expired.
	DefaultLease = time.Minute
	// DefaultMaxMissed is how many missed fires before the latest one a tick records per
	// responsibility; older ones leave no row.
	DefaultMaxMissed = 100
	// DefaultMaxAttempts is how many holders a run may have: a run whose replica died is taken
	// over until it has had this many, then abandoned.
	DefaultMaxAttempts = 3
	// DefaultRetryInitial and DefaultRetryMax are the backoff of a fire whose attempt stopped
	// transiently: the first retry comes after DefaultRetryInitial, each next one after twice
	// the wait before, at most DefaultRetryMax, each wait jittered to between half and one and a
	// half times itself.
	DefaultRetryInitial = 2 * time.Second
	DefaultRetryMax     = 5 * time.Minute
)

// stopGrace is how long Stop (and a cancelled Tick) waits, after its deadline, for interrupted
// runs to return before it records them abandoned itself.
const stopGrace = time.Second

// retryDelay is how long the Start loop waits after a pass that met an error before the next.
const retryDelay = time.Second

// finishTimeout bounds the store writes that record a run's end, which run on a context of
// their own so that a cancelled run is still recorded.
const finishTimeout = 30 * time.Second

// pendingPoll is how often the Start loop looks again at a due fire whose claim waits: the
// previous run of its responsibility is recorded running under another replica's live lease.
const pendingPoll = 250 * time.Millisecond

// Scheduler fires the enabled responsibilities of a set of personas, over a store shared by any
// number of replicas: each fire is claimed with one INSERT keyed by (persona, responsibility,
// fire instant), and only the replica whose INSERT creates the run carries it out. Drive it with
// Tick (one pass, for hosts run by an external cron) or Start and Stop (a long-lived loop). A
// Scheduler is safe for concurrent use.
type Scheduler struct {
	store        *store.Store
	runner       Runner
	clock        Clock
	clockSet     bool
	holder       string
	catchUp      time.Duration
	lease        time.Duration
	maxMissed    int
	maxAttempts  int
	retryInitial time.Duration
	retryMax     time.Duration
	jitter       func(time.Duration) time.Duration
	results      func(Report)
	log          *slog.Logger

	jobs     []*job
	byName   map[[2]string]*job
	personas []string

	tickMu sync.Mutex // one tick at a time; guards the jobs' cursors

	mu     sync.Mutex
	active map[string]*activeRun // by run key
	loop   *loop
	runs   sync.WaitGroup
	// wake tells the Start loop that a run ended, so that a fire whose claim waited for it is
	// claimed at once.
	wake chan struct{}
}

// job is one enabled responsibility of a registered persona. Its fields are guarded by the
// scheduler's tickMu.
type job struct {
	persona *runtime.Persona
	resp    runtime.Responsibility
	cron    *Cron
	// cursor is the latest fire this scheduler has settled: claimed, found claimed or recorded
	// by any replica, or put in the backlog. Fires after it are due once they pass. Zero until
	// read from the store.
	cursor time.Time
	loaded bool
	// pending is the due fire whose claim waits for the previous run's record (zero: none).
	pending time.Time
	// previous is the responsibility's latest run that ran (or runs), as last seen: what a
	// claim and the backlog judge overlap by. nil when unknown.
	previous *store.Run
	// backlog holds the fires up to cursor that are still to be recorded skipped, oldest first,
	// with their reasons.
	backlog []skippedFire
}

// activeRun is a run this scheduler carries out.
type activeRun struct {
	fire   Fire
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	// retryUntil is when retries of a transient failure stop (a retry must start before it),
	// and why it is then.
	retryUntil time.Time
	why        string
	// report is the outcome of the last Runner call, set before done closes.
	report Report
}

// loop is the state of a started scheduler.
type loop struct {
	stop   chan struct{}
	exited chan struct{}
}

// errLeaseLost and errStopped are the causes with which the scheduler cancels a run.
var (
	errLeaseLost = errors.New("schedule: the run's lease was lost")
	errStopped   = errors.New("schedule: the scheduler stopped")
)

// Option configures a Scheduler.
type Option func(*Scheduler)

// WithClock sets the scheduler's clock. The default is StoreClock of the scheduler's store, so
// that fires are judged due on the clock the store judges leases on (the database's); a test's
// fake clock goes to both (store.WithClock(c.Now)).
func WithClock(c Clock) Option { return func(s *Scheduler) { s.clock, s.clockSet = c, true } }

// WithHolder sets the lease holder name under which this scheduler claims runs: unique per
// replica and process, at most store.MaxNameChars characters. The default is the host name,
// the process id and a random suffix.
func WithHolder(name string) Option { return func(s *Scheduler) { s.holder = name } }

// WithCatchUp sets how late a fire may still run (default DefaultCatchUp; must be positive).
func WithCatchUp(d time.Duration) Option { return func(s *Scheduler) { s.catchUp = d } }

// WithLease sets the lease of a claimed run (default DefaultLease; must be at least a
// second), renewed every third of it.
func WithLease(d time.Duration) Option { return func(s *Scheduler) { s.lease = d } }

// WithMaxMissed sets how many missed fires before the latest one a tick records per
// responsibility (default DefaultMaxMissed; 0 records none of them).
func WithMaxMissed(n int) Option { return func(s *Scheduler) { s.maxMissed = n } }

// WithMaxAttempts sets how many holders a run may have before a dead replica's run is
// abandoned instead of taken over (default DefaultMaxAttempts; 1 never takes a run over).
func WithMaxAttempts(n int) Option { return func(s *Scheduler) { s.maxAttempts = n } }

// WithRetry sets the backoff of a fire whose attempt stopped transiently (see Runner): the
// first retry after initial, each next one after twice the wait before, at most max, each wait
// jittered to between half and one and a half times itself (defaults DefaultRetryInitial and
// DefaultRetryMax; both must be positive, max at least initial).
func WithRetry(initial, max time.Duration) Option {
	return func(s *Scheduler) { s.retryInitial, s.retryMax = initial, max }
}

// WithResults sets a function the scheduler calls with the outcome of every Runner call once
// it has acted on it (recorded the run's end, or scheduled a retry): how a host gets a fire's
// output (Report.Result.Text) and usage without wrapping its Runner. It is called from the
// run's goroutine, several at once for runs of different fires, and must not block for long.
func WithResults(fn func(Report)) Option { return func(s *Scheduler) { s.results = fn } }

// WithLogger sets where the scheduler logs claims, takeovers, skipped fires, retries, failures
// and store errors (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Scheduler) { s.log = l } }

// New returns a scheduler of the enabled responsibilities of personas over st, whose fires
// runner carries out. Disabled responsibilities are not scheduled, and a persona or
// responsibility that is not passed here claims nothing (its trail stays in the store).
//
// Errors: a nil store or runner; a nil persona, one without a name, or two with the same name;
// two responsibilities of a persona with the same name; an enabled responsibility whose
// schedule or timezone Parse refuses (the error names the persona and responsibility); an
// option out of range (WithClock(nil) or WithLogger(nil) included).
func New(st *store.Store, personas []*runtime.Persona, runner Runner, opts ...Option) (*Scheduler, error) {
	if st == nil || runner == nil {
		return nil, errors.New("schedule: New needs a store and a runner")
	}
	s := &Scheduler{
		store: st, runner: runner, catchUp: DefaultCatchUp, lease: DefaultLease,
		maxMissed: DefaultMaxMissed, maxAttempts: DefaultMaxAttempts, log: slog.Default(),
		retryInitial: DefaultRetryInitial, retryMax: DefaultRetryMax, jitter: jitter,
		byName: map[[2]string]*job{}, active: map[string]*activeRun{}, wake: make(chan struct{}, 1),
	}
	for _, o := range opts {
		o(s)
	}
	if !s.clockSet {
		s.clock = StoreClock(st)
	}
	switch {
	case s.clock == nil:
		return nil, errors.New("schedule: WithClock(nil)")
	case s.retryInitial <= 0 || s.retryMax < s.retryInitial:
		return nil, fmt.Errorf("schedule: retry backoff %v to %v: both must be positive, the maximum at least the initial", s.retryInitial, s.retryMax)
	case s.log == nil:
		return nil, errors.New("schedule: WithLogger(nil)")
	case s.catchUp <= 0:
		return nil, fmt.Errorf("schedule: catch-up window %v: it must be positive", s.catchUp)
	case s.lease < time.Second:
		return nil, fmt.Errorf("schedule: lease %v: it must be at least 1s", s.lease)
	case s.maxMissed < 0:
		return nil, fmt.Errorf("schedule: max missed %d: it must not be negative", s.maxMissed)
	case s.maxAttempts < 1:
		return nil, fmt.Errorf("schedule: max attempts %d: it must be at least 1", s.maxAttempts)
	}
	if s.holder == "" {
		s.holder = defaultHolder()
	}
	seen := map[string]bool{}
	for i, p := range personas {
		if p == nil || p.Name == "" {
			return nil, fmt.Errorf("schedule: persona %d has no name", i)
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("schedule: persona %q is registered twice", p.Name)
		}
		seen[p.Name] = true
		s.personas = append(s.personas, p.Name)
		for _, r := range p.Responsibilities {
			name := [2]string{p.Name, r.Name}
			if _, dup := s.byName[name]; dup {
				return nil, fmt.Errorf("schedule: persona %q has two responsibilities named %q", p.Name, r.Name)
			}
			s.byName[name] = nil
			if !r.Enabled {
				continue
			}
			c, err := Parse(r.Schedule, r.Timezone)
			if err != nil {
				return nil, fmt.Errorf("schedule: persona %q, responsibility %q: %w", p.Name, r.Name, err)
			}
			j := &job{persona: p, resp: r, cron: c}
			s.jobs = append(s.jobs, j)
			s.byName[name] = j
		}
	}
	return s, nil
}

// defaultHolder names this process: host name, process id and 8 random hex digits.
func defaultHolder() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "host"
	}
	host = runtime.Clip(host, 120)
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Holder returns the lease holder name under which this scheduler claims runs.
func (s *Scheduler) Holder() string { return s.holder }
