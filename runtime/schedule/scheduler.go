package schedule

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
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
)

// stopGrace is how long Stop (and a cancelled Tick) waits, after its deadline, for interrupted
// runs to return before it records them abandoned itself.
const stopGrace = time.Second

// retryDelay is how long the Start loop waits after a pass that met an error before the next.
const retryDelay = time.Second

// finishTimeout bounds the store writes that record a run's end, which run on a context of
// their own so that a cancelled run is still recorded.
const finishTimeout = 30 * time.Second

// Scheduler fires the enabled responsibilities of a set of personas, over a store shared by any
// number of replicas: each fire is claimed with one INSERT keyed by (persona, responsibility,
// fire instant), and only the replica whose INSERT creates the run carries it out. Drive it with
// Tick (one pass, for hosts run by an external cron) or Start and Stop (a long-lived loop). A
// Scheduler is safe for concurrent use.
type Scheduler struct {
	store       *store.Store
	runner      Runner
	clock       Clock
	holder      string
	catchUp     time.Duration
	lease       time.Duration
	maxMissed   int
	maxAttempts int
	log         *slog.Logger

	jobs     []*job
	byName   map[[2]string]*job
	personas []string

	tickMu sync.Mutex // one tick at a time; guards the jobs' cursors

	mu     sync.Mutex
	active map[string]*activeRun // by run key
	loop   *loop
	runs   sync.WaitGroup
}

// job is one enabled responsibility of a registered persona.
type job struct {
	persona *runtime.Persona
	resp    runtime.Responsibility
	cron    *Cron
	// cursor is the latest fire this scheduler has settled: claimed, found claimed or recorded
	// by any replica. Fires after it are due once they pass. Zero until read from the store.
	cursor time.Time
	loaded bool
}

// activeRun is a run this scheduler carries out.
type activeRun struct {
	fire   Fire
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
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

// WithClock sets the scheduler's clock (default SystemClock). Give the store the same clock's
// Now (store.WithClock).
func WithClock(c Clock) Option { return func(s *Scheduler) { s.clock = c } }

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

// WithLogger sets where the scheduler logs claims, takeovers and store errors (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(s *Scheduler) { s.log = l } }

// New returns a scheduler of the enabled responsibilities of personas over st, whose fires
// runner carries out. Disabled responsibilities are not scheduled, and a persona or
// responsibility that is not passed here claims nothing (its trail stays in the store).
//
// Errors: a nil store or runner; a nil persona, one without a name, or two with the same name;
// two responsibilities of a persona with the same name; an enabled responsibility whose
// schedule or timezone Parse refuses (the error names the persona and responsibility); an
// option out of range.
func New(st *store.Store, personas []*runtime.Persona, runner Runner, opts ...Option) (*Scheduler, error) {
	if st == nil || runner == nil {
		return nil, errors.New("schedule: New needs a store and a runner")
	}
	s := &Scheduler{
		store: st, runner: runner, clock: SystemClock(), catchUp: DefaultCatchUp, lease: DefaultLease,
		maxMissed: DefaultMaxMissed, maxAttempts: DefaultMaxAttempts, log: slog.Default(),
		byName: map[[2]string]*job{}, active: map[string]*activeRun{},
	}
	for _, o := range opts {
		o(s)
	}
	switch {
	case s.clock == nil:
		return nil, errors.New("schedule: WithClock(nil)")
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

// Tick makes one pass and waits for the runs it started: it abandons or takes over the runs of
// dead replicas (expired leases), then, for every responsibility, records the fires missed
// since the last settled one and claims the latest due fire, running it when this replica's
// claim wins. A host driven by an external cron calls Tick every minute or so. Concurrent Ticks
// of one Scheduler (and its Start loop) make their passes one at a time; only their runs
// overlap. When ctx is cancelled, the runs Tick started are cancelled and recorded abandoned
// (ReasonStopped) unless they finish first.
//
// Tick carries on past a failing responsibility and returns the errors it met, joined (store
// errors; the fires concerned are retried on the next Tick); every fire it settled is recorded.
func (s *Scheduler) Tick(ctx context.Context) error {
	started, err := s.tick(ctx, ctx)
	s.await(ctx, started)
	return err
}

// Start runs the scheduler in the background until Stop, or until ctx is done: it ticks when
// the next fire is due, and at least every half lease (and every minute) to sweep for dead
// replicas' runs; after a pass that met an error it waits a second before the next. Runs
// started by the loop get contexts derived from ctx. Errors of a pass are logged and retried on
// the next. Start returns an error when the scheduler is already started.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loop != nil {
		return errors.New("schedule: the scheduler is already started")
	}
	l := &loop{stop: make(chan struct{}), exited: make(chan struct{})}
	s.loop = l
	go s.run(ctx, l)
	return nil
}

func (s *Scheduler) run(ctx context.Context, l *loop) {
	defer close(l.exited)
	for {
		wait := time.Duration(0)
		if _, err := s.tick(ctx, ctx); err != nil {
			s.log.Warn("schedule: pass failed; retrying on the next", "holder", s.holder, "error", err)
			wait = retryDelay
		}
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-s.clock.After(max(wait, s.nextWake())):
		}
	}
}

// nextWake returns how long the loop may sleep: until the earliest next fire, at most half a
// lease (the sweep for dead replicas' runs) and a minute (so that a clock that jumps is
// noticed).
func (s *Scheduler) nextWake() time.Duration {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	now := s.clock.Now()
	wait := min(s.lease/2, time.Minute)
	for _, j := range s.jobs {
		if !j.loaded {
			continue // its trail could not be read: retried at the sweep
		}
		if next, ok := j.cron.Next(j.cursor); ok {
			wait = min(wait, max(next.Sub(now), 0))
		}
	}
	return wait
}

// Stop stops the loop that Start began and waits for the runs in progress to finish. When ctx
// is done first, it cancels them, waits at most a second more for them to return, and records
// the ones still going abandoned (ReasonStopped), so a stop leaves no run of this replica
// recorded running; it then returns ctx's error, wrapped. Stop without Start returns an error.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	l := s.loop
	s.loop = nil
	s.mu.Unlock()
	if l == nil {
		return errors.New("schedule: the scheduler is not started")
	}
	close(l.stop)
	<-l.exited
	s.mu.Lock()
	var runs []*activeRun
	for _, a := range s.active {
		runs = append(runs, a)
	}
	s.mu.Unlock()
	if n := s.await(ctx, runs); n > 0 {
		return fmt.Errorf("schedule: stop: %d runs interrupted and recorded abandoned: %w", n, ctx.Err())
	}
	return nil
}

// await waits for runs to finish. When ctx is done first it interrupts them: cancels them,
// waits up to stopGrace, and records those still going abandoned. It returns how many it
// interrupted.
func (s *Scheduler) await(ctx context.Context, runs []*activeRun) int {
	var pending []*activeRun
	for _, a := range runs {
		select {
		case <-a.done:
		case <-ctx.Done():
			pending = append(pending, a)
		}
	}
	if len(pending) == 0 {
		return 0
	}
	for _, a := range pending {
		a.cancel(errStopped)
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	expired := false
	for _, a := range pending {
		if !expired {
			select {
			case <-a.done:
				continue
			case <-grace.C:
				expired = true
			}
		}
		select {
		case <-a.done:
		default:
			s.finish(a, store.Finish{Status: store.RunAbandoned, Reason: ReasonStopped})
		}
	}
	return len(pending)
}

// tick makes one pass: the sweep, then every job. Runs it starts get contexts derived from
// runCtx; it returns them.
func (s *Scheduler) tick(ctx, runCtx context.Context) ([]*activeRun, error) {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	now := s.clock.Now()
	started, err := s.sweep(ctx, runCtx, now)
	errs := []error{err}
	for _, j := range s.jobs {
		a, err := s.fireJob(ctx, runCtx, j, now)
		errs = append(errs, err)
		started = append(started, a...)
	}
	return started, errors.Join(errs...)
}

// sweep deals with the running runs of this scheduler's responsibilities whose lease expired:
// their replica died or hung. One that is still its responsibility's latest fire, within the
// catch-up window and short of its attempts is taken over (exactly one contender wins) and run
// again; any other is abandoned, so that it no longer blocks its responsibility.
func (s *Scheduler) sweep(ctx, runCtx context.Context, now time.Time) ([]*activeRun, error) {
	running, err := s.store.RunningFires(ctx, s.personas)
	if err != nil {
		return nil, fmt.Errorf("schedule: sweep: %w", err)
	}
	var started []*activeRun
	var errs []error
	for _, r := range running {
		j := s.byName[[2]string{r.Persona, r.Responsibility}]
		if j == nil || r.Lease.Live(now) || s.isActive(r.Key) {
			continue
		}
		latest, _ := j.cron.Prev(now)
		if r.FireAt.Equal(latest) && now.Sub(latest) <= s.catchUp && r.Attempt < s.maxAttempts {
			taken, err := s.store.TakeOverRun(ctx, r.Key, s.holder, s.lease)
			switch {
			case err == nil:
				s.log.Info("schedule: took over a run whose lease expired", "run", r.Key,
					"from", r.Lease.Holder, "holder", s.holder, "attempt", taken.Attempt)
				started = append(started, s.launch(runCtx, j, taken))
			case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrRunFinished):
				// Another replica took it over first, or its holder finished it after all.
			default:
				errs = append(errs, fmt.Errorf("schedule: take over run %q: %w", r.Key, err))
			}
			continue
		}
		if err := s.abandon(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return started, errors.Join(errs...)
}

// abandon records the running run r, whose lease expired, abandoned (ReasonLeaseExpired).
// A holder that renewed in time, or finished the run, wins: that is no error.
func (s *Scheduler) abandon(ctx context.Context, r store.Run) error {
	_, err := s.store.AbandonRun(ctx, r.Key, ReasonLeaseExpired)
	switch {
	case err == nil:
		s.log.Info("schedule: abandoned a run whose lease expired", "run", r.Key, "holder", r.Lease.Holder)
		return nil
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrRunFinished):
		return nil
	}
	return fmt.Errorf("schedule: abandon run %q: %w", r.Key, err)
}

// fireJob settles j's fires that passed since its cursor: the ones before the latest are
// recorded missed (at most maxMissed, the most recent), and the latest is claimed — or
// recorded missed when it is older than the catch-up window.
func (s *Scheduler) fireJob(ctx, runCtx context.Context, j *job, now time.Time) ([]*activeRun, error) {
	latest, ok := j.cron.Prev(now)
	if !ok {
		return nil, nil
	}
	if !j.loaded {
		trail, err := s.store.Runs(ctx, store.RunQuery{Persona: j.persona.Name, Kind: store.RunScheduled,
			Responsibility: j.resp.Name, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("schedule: %s/%s: read the trail: %w", j.persona.Name, j.resp.Name, err)
		}
		switch {
		case len(trail) == 1:
			j.cursor = trail[0].FireAt
		case now.Sub(latest) > s.catchUp:
			// No trail yet: the responsibility starts with its next fire, and nothing older is
			// recorded.
			j.cursor = latest
		default:
			j.cursor = latest.Add(-time.Nanosecond)
		}
		j.loaded = true
	}
	if !latest.After(j.cursor) {
		return nil, nil
	}
	var missed []time.Time
	for f := latest; len(missed) < s.maxMissed; {
		p, ok := j.cron.Prev(f.Add(-time.Nanosecond))
		if !ok || !p.After(j.cursor) {
			break
		}
		missed = append(missed, p)
		f = p
	}
	slices.Reverse(missed)
	if now.Sub(latest) > s.catchUp {
		missed = append(missed, latest)
	}
	for _, f := range missed {
		if err := s.skip(ctx, j, f, ReasonMissed); err != nil {
			return nil, err
		}
		j.cursor = f
	}
	if !latest.After(j.cursor) {
		return nil, nil
	}
	a, err := s.claim(ctx, runCtx, j, latest, now)
	if err != nil {
		return nil, err
	}
	j.cursor = latest
	if a == nil {
		return nil, nil
	}
	return []*activeRun{a}, nil
}

// claim claims j's fire at with one INSERT and starts it when this scheduler wins. A fire
// already claimed by anyone is left alone (or resumed when it is this scheduler's own claim
// from an earlier, failed pass); a fire whose responsibility has a run in progress is recorded
// skipped (ReasonOverlap) — unless that run's lease expired, which abandons it first.
func (s *Scheduler) claim(ctx, runCtx context.Context, j *job, at, now time.Time) (*activeRun, error) {
	claim := s.newRun(j, at)
	key := claim.Key
	for range 2 {
		run, outcome, err := s.store.StartRun(ctx, claim)
		var busy *store.BusyError
		switch {
		case err == nil && outcome == store.Stored:
			return s.launch(runCtx, j, run), nil
		case err == nil:
			if run.Status == store.RunRunning && run.Lease.Holder == s.holder && !s.isActive(key) {
				return s.launch(runCtx, j, run), nil
			}
			return nil, nil
		case errors.As(err, &busy):
			r := busy.Running
			// A run waiting for approval holds no lease but keeps its responsibility: overlap.
			if r.Lease.Live(now) || s.isActive(r.Key) || r.Status == store.RunWaiting {
				return nil, s.skip(ctx, j, at, ReasonOverlap)
			}
			if err := s.abandon(ctx, r); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("schedule: claim %q: %w", key, err)
		}
	}
	// The running run was renewed under us after all.
	return nil, s.skip(ctx, j, at, ReasonOverlap)
}

// newRun is the claim of j's fire at: a running run under this scheduler's lease.
func (s *Scheduler) newRun(j *job, at time.Time) store.NewRun {
	return store.NewRun{
		Key: RunKey(j.persona.Name, j.resp.Name, at), Kind: store.RunScheduled, Persona: j.persona.Name,
		Responsibility: j.resp.Name, FireAt: at, Holder: s.holder, LeaseFor: s.lease,
	}
}

// skip records j's fire at skipped with reason, in one INSERT; a fire already recorded (by any
// replica, with any outcome) is left as it is.
func (s *Scheduler) skip(ctx context.Context, j *job, at time.Time, reason string) error {
	key := RunKey(j.persona.Name, j.resp.Name, at)
	_, _, err := s.store.StartRun(ctx, store.NewRun{
		Key: key, Kind: store.RunScheduled, Persona: j.persona.Name, Responsibility: j.resp.Name,
		FireAt: at, Status: store.RunSkipped, Reason: reason,
	})
	if err != nil {
		return fmt.Errorf("schedule: record %q skipped (%s): %w", key, reason, err)
	}
	return nil
}

func (s *Scheduler) isActive(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[key] != nil
}

// launch starts the claimed run in its own goroutine.
func (s *Scheduler) launch(runCtx context.Context, j *job, run store.Run) *activeRun {
	ctx, cancel := context.WithCancelCause(runCtx)
	a := &activeRun{
		fire: Fire{Persona: j.persona, Responsibility: j.resp, At: run.FireAt.UTC(), Run: run},
		ctx:  ctx, cancel: cancel, done: make(chan struct{}),
	}
	s.mu.Lock()
	s.active[run.Key] = a
	s.mu.Unlock()
	s.runs.Add(1)
	go s.execute(a)
	return a
}

// execute runs a's fire through the runner, renewing its lease meanwhile, and records the end.
func (s *Scheduler) execute(a *activeRun) {
	defer func() {
		s.mu.Lock()
		delete(s.active, a.fire.Run.Key)
		s.mu.Unlock()
		a.cancel(nil)
		close(a.done)
		s.runs.Done()
	}()
	renewed := make(chan struct{})
	go s.renew(a, renewed)
	f, err := s.call(a)
	close(renewed)
	cause := context.Cause(a.ctx)
	switch {
	case errors.Is(err, store.ErrWaiting):
		// The runner paused the run for approval and recorded it so, releasing the lease: there
		// is nothing to finish. Whoever resumes it after the decision (runtime/service) finishes it.
		s.log.Info("schedule: a run waits for approval", "run", a.fire.Run.Key, "error", err)
		return
	case errors.Is(cause, errLeaseLost):
		s.log.Warn("schedule: a run lost its lease and was taken over; its result is dropped",
			"run", a.fire.Run.Key, "holder", s.holder, "error", err)
		return
	case err != nil && a.ctx.Err() != nil:
		f.Status, f.Reason = store.RunAbandoned, ReasonStopped
	case err != nil:
		f.Status, f.Reason = store.RunFailed, err.Error()
	case f.Status == "":
		f.Status = store.RunSucceeded
	}
	s.finish(a, f)
}

// call runs the runner, turning a panic into an error.
func (s *Scheduler) call(a *activeRun) (f store.Finish, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the runner panicked: %v", p)
		}
	}()
	return s.runner.RunFire(a.ctx, a.fire)
}

// renew renews a's lease a third into each lease (so a renewal that comes late, after a
// stall, comes at once) until done closes; a renewal that fails is retried every tenth of a
// lease, and a lease that was lost (taken over or abandoned by another replica) cancels the run.
func (s *Scheduler) renew(a *activeRun, done <-chan struct{}) {
	next := a.fire.Run.Lease.Expires.Add(-2 * s.lease / 3)
	for {
		select {
		case <-done:
			return
		case <-a.ctx.Done():
			return
		case <-s.clock.After(next.Sub(s.clock.Now())):
		}
		lease, err := s.store.RenewLease(a.ctx, a.fire.Run.Key, s.holder, s.lease)
		switch {
		case err == nil:
			s.log.Debug("schedule: renewed a run's lease", "run", a.fire.Run.Key, "holder", s.holder, "until", lease.Expires)
			next = lease.Expires.Add(-2 * s.lease / 3)
		case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrRunFinished):
			s.log.Warn("schedule: a run's lease was lost; cancelling it", "run", a.fire.Run.Key, "holder", s.holder, "error", err)
			a.cancel(errLeaseLost)
			return
		default:
			if a.ctx.Err() == nil {
				s.log.Warn("schedule: renewing a run's lease failed; retrying", "run", a.fire.Run.Key, "error", err)
			}
			next = s.clock.Now().Add(s.lease / 10)
		}
	}
}

// finish records a's end f, retrying store errors a few times. A result the store refuses
// (ErrInvalid: say a stop reason that is too long) is recorded as a failure saying so.
func (s *Scheduler) finish(a *activeRun, f store.Finish) {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	key := a.fire.Run.Key
	for attempt := 1; ; attempt++ {
		_, err := s.store.FinishRun(ctx, key, s.holder, f)
		switch {
		case err == nil:
			return
		case errors.Is(err, store.ErrInvalid) && f.Status != store.RunFailed:
			f = store.Finish{Status: store.RunFailed, Reason: fmt.Sprintf("the run's result could not be stored: %v", err)}
			continue
		case errors.Is(err, store.ErrRunFinished), errors.Is(err, store.ErrLeaseLost):
			s.log.Info("schedule: a run was already settled elsewhere", "run", key, "status", f.Status, "error", err)
			return
		case attempt == 3 || ctx.Err() != nil:
			s.log.Error("schedule: recording a run's end failed; its lease will expire and it will be abandoned",
				"run", key, "status", f.Status, "error", err)
			return
		}
		select {
		case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
		case <-ctx.Done():
		}
	}
}
