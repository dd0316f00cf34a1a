package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

// Defaults of Config's limits and intervals.
const (
	// DefaultWorkers is how many runs one process works on at once when Config.Workers is 0.
	DefaultWorkers = 8
	// DefaultSenders is how many replies one process sends at once when Config.Senders is 0.
	DefaultSenders = 4
	// DefaultPollInterval is how often an idle process asks the store for work other processes
	// stored (its own deliveries wake it at once).
	DefaultPollInterval = time.Second
	// DefaultShutdownGrace is how long a stopping service lets runs in flight finish before it
	// cancels them (their leases are then released, so another replica resumes them at once).
	DefaultShutdownGrace = 30 * time.Second
)

// ErrConfig is returned (wrapped) by New for a Config it cannot run.
var ErrConfig = errors.New("service: invalid config")

// Config is what a host hands the service: its personas, the store, its models, its mail
// transports and its options. Store, Personas and Models are required; every other field has
// a default.
type Config struct {
	// Store holds everything: threads, runs, pending work. Every replica of the service uses
	// the same store.
	Store *store.Store
	// Personas are the personas this service answers for and fires the responsibilities of;
	// their names are unique. A persona answers the mail of its mailbox (its name, see
	// mail.Ingest) and of its Mailbox addresses.
	Personas []*runtime.Persona
	// Models picks each persona's model (see Models).
	Models Models
	// Runner, when set, carries the runner settings the service uses (MaxTurns, Parallel,
	// Compaction, Compose, LeaseFor, TracerProvider, …); the service sets its Store, Model,
	// Holder and Logger when they are zero, and owns it from then on. nil = the defaults.
	Runner *agent.Runner
	// Receivers feed the service mail (SMTP, IMAP, webhooks, a directory); each runs until the
	// service stops. None is required: mail stored by another process is answered too.
	Receivers []Receiver
	// Sender sends the replies of the outbox; nil leaves replies in the outbox (another
	// replica, or a host loop, sends them).
	Sender Sender
	// Holder names this worker in leases and claims: unique among the workers running at once,
	// kept across restarts when the host can (a pod's or replica's name) so a restarted worker
	// resumes its own cut-off runs at once (Run gives back the claims its earlier process held,
	// and the runner resumes the runs it held without waiting for their leases).
	// "" = "<hostname>/<pid>/<random>".
	Holder string
	// Workers bounds the runs this process works on at once (default DefaultWorkers);
	// PersonaWorkers bounds those of one persona (default: Workers). Both are per process: N
	// replicas run up to N times as many.
	Workers        int
	PersonaWorkers int
	// Senders bounds the replies this process sends at once (default DefaultSenders).
	Senders int
	// EachMessage names the personas that answer every message of a thread with its own run;
	// every other persona answers the newest of a thread's pending messages with one run that
	// has the older ones in its view.
	EachMessage []string
	// Retry is the backoff of work that failed transiently (zero value: DefaultRetry).
	Retry RetryPolicy
	// PollInterval is how often an idle process looks for work (default DefaultPollInterval).
	PollInterval time.Duration
	// ShutdownGrace is how long Run lets runs in flight finish after its ctx ended (default
	// DefaultShutdownGrace).
	ShutdownGrace time.Duration
	// NoSchedule turns the scheduler off (no fires from this process).
	NoSchedule bool
	// Schedule are options for the scheduler (catch-up, lease, clock, …); the service sets
	// the holder, the logger and the results hook.
	Schedule []schedule.Option
	// OnFire, when set, receives every fire's report (schedule.Report: the run's output text,
	// its usage, how it was recorded), once per runner call; it must not block for long.
	OnFire func(schedule.Report)
	// NotifyApproval, when set, is called once for each call of the personas' tools that
	// starts waiting for approval (see runtime/agent), with the call, its arguments and its
	// deadline, say to email an approver or post to a chat. A nil error means the notice went
	// out; an error (or a panic) calls it again after Retry.Max, until the call is decided or
	// expires. It runs on one replica at a time per call; a replica that dies while it runs
	// leaves the call to another after five minutes, so a notice may rarely come twice.
	NotifyApproval func(ctx context.Context, a store.Approval) error
	// Logger receives the service's logs; every state change of a piece of work is one record
	// with persona, thread (or responsibility), run key and correlation id. nil = slog.Default().
	Logger *slog.Logger
	// MeterProvider receives the service's metrics (see package doc, Metrics). nil = a
	// provider of the service's own, exported in Prometheus format by Handler's /metrics.
	MeterProvider metric.MeterProvider
}

// Service runs a host's personas until its context ends: it answers pending mail, fires
// responsibilities, sends replies, and takes mail from its receivers. Create it with New; run
// it with Run. It is safe for concurrent use.
type Service struct {
	st       *store.Store
	personas map[string]*runtime.Persona // by name, with instrumented tools
	names    []string                    // persona names, in Config order
	each     []string
	runner   *agent.Runner
	sched    *schedule.Scheduler
	sender   Sender
	recv     []Receiver
	holder   string
	log      *slog.Logger
	retry    RetryPolicy
	poll     time.Duration
	grace    time.Duration
	workers  int
	perP     int
	senders  int
	metrics  *metrics
	handler  http.Handler
	wakeRun  chan struct{}
	wakeSend chan struct{}
	notify   func(context.Context, store.Approval) error

	mu       sync.Mutex
	inFlight map[string]int  // runs in flight by persona
	resuming map[string]bool // scheduled runs this process resumes after their approvals, by key
	running  bool
	stopping bool
	kill     context.CancelFunc
}

// New checks cfg and returns a service ready to Run. Errors wrap ErrConfig and say which field
// is wrong and what to do: no Store, no personas, two personas of one name, a persona whose
// model provider has no adapter in Models (or no Models.Default for one that names none), a
// negative limit, an EachMessage name that is no persona.
func New(cfg Config) (*Service, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("%w: Config.Store is nil (open one with store.Open)", ErrConfig)
	}
	if len(cfg.Personas) == 0 {
		return nil, fmt.Errorf("%w: Config.Personas is empty (pass the generated package's Personas)", ErrConfig)
	}
	if cfg.Workers < 0 || cfg.PersonaWorkers < 0 || cfg.Senders < 0 {
		return nil, fmt.Errorf("%w: negative Workers, PersonaWorkers or Senders", ErrConfig)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &Service{
		st: cfg.Store, personas: map[string]*runtime.Persona{}, sender: cfg.Sender, recv: cfg.Receivers,
		holder: cfg.Holder, log: log, retry: cfg.Retry.orDefault(), poll: cfg.PollInterval, grace: cfg.ShutdownGrace,
		workers: cfg.Workers, perP: cfg.PersonaWorkers, senders: cfg.Senders,
		wakeRun: make(chan struct{}, 1), wakeSend: make(chan struct{}, 1), inFlight: map[string]int{},
		notify: cfg.NotifyApproval,
	}
	if s.holder == "" {
		s.holder = defaultHolder()
	}
	if len(s.holder) > store.MaxNameChars {
		return nil, fmt.Errorf("%w: Config.Holder is %d characters long (at most %d)", ErrConfig, len(s.holder), store.MaxNameChars)
	}
	if s.poll <= 0 {
		s.poll = DefaultPollInterval
	}
	if s.grace <= 0 {
		s.grace = DefaultShutdownGrace
	}
	if s.workers == 0 {
		s.workers = DefaultWorkers
	}
	if s.perP == 0 || s.perP > s.workers {
		s.perP = s.workers
	}
	if s.senders == 0 {
		s.senders = DefaultSenders
	}
	m, handler, err := newMetrics(cfg.MeterProvider, s)
	if err != nil {
		return nil, fmt.Errorf("service: metrics: %w", err)
	}
	s.metrics = m
	s.handler = handler
	model, err := cfg.Models.router(cfg.Personas, m)
	if err != nil {
		return nil, err
	}
	for _, p := range cfg.Personas {
		if p == nil {
			return nil, fmt.Errorf("%w: Config.Personas holds a nil persona", ErrConfig)
		}
		if _, dup := s.personas[p.Name]; dup {
			return nil, fmt.Errorf("%w: two personas are named %q", ErrConfig, p.Name)
		}
		s.personas[p.Name] = m.instrumentTools(p)
		s.names = append(s.names, p.Name)
	}
	for _, name := range cfg.EachMessage {
		if _, ok := s.personas[name]; !ok {
			return nil, fmt.Errorf("%w: Config.EachMessage names %q, which is no persona of Config.Personas", ErrConfig, name)
		}
	}
	s.each = slices.Clone(cfg.EachMessage)
	r := cfg.Runner
	if r == nil {
		r = &agent.Runner{}
	}
	if r.Store == nil {
		r.Store = cfg.Store
	}
	if r.Model == nil {
		r.Model = model
	}
	if r.Holder == "" {
		r.Holder = s.holder
	}
	if r.Logger == nil {
		r.Logger = log
	}
	s.runner = r
	if !cfg.NoSchedule {
		opts := append([]schedule.Option{schedule.WithHolder(s.holder), schedule.WithLogger(log),
			schedule.WithResults(func(rep schedule.Report) { s.fired(rep, cfg.OnFire) })}, cfg.Schedule...)
		sched, err := schedule.New(cfg.Store, s.personaList(), r, opts...)
		if err != nil {
			return nil, fmt.Errorf("%w: schedule: %v", ErrConfig, err)
		}
		s.sched = sched
	}
	return s, nil
}

// checkDirs checks the directories of the service's transports that work in one (see
// dirChecker), creating those missing, and returns the first error.
func (s *Service) checkDirs() error {
	ts := []any{s.sender}
	for _, r := range s.recv {
		ts = append(ts, r)
	}
	for _, t := range ts {
		if c, ok := t.(dirChecker); ok { // a nil sender is no dirChecker
			if err := c.checkDir(); err != nil {
				return err
			}
		}
	}
	return nil
}

// personaList returns the service's personas (instrumented), in Config order.
func (s *Service) personaList() []*runtime.Persona {
	out := make([]*runtime.Persona, len(s.names))
	for i, n := range s.names {
		out[i] = s.personas[n]
	}
	return out
}

// Holder returns the name under which this service claims work and holds leases.
func (s *Service) Holder() string { return s.holder }

// Run runs the service until ctx ends, then stops gracefully: it stops claiming, lets the runs
// in flight finish within Config.ShutdownGrace, cancels the rest (the runner releases their
// leases, and their claims are given back, so another replica resumes them at once), and
// returns nil. Kill stops at once. A service runs once: a second Run returns an error.
func (s *Service) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("service: Run called twice")
	}
	s.running = true
	// work is the context of the runs and sends: it outlives ctx by the grace period.
	work, kill := context.WithCancel(context.WithoutCancel(ctx))
	s.kill = kill
	s.mu.Unlock()
	defer kill()

	s.log.Info("service started", "holder", s.holder, "personas", len(s.names), "workers", s.workers)
	// Claims under this holder are an earlier process's (holders are unique among the workers
	// running at once): give them back, so its cut-off work resumes now, not when they expire.
	if replies, sends, err := s.st.ReleaseHolder(ctx, s.holder); err != nil {
		s.log.Warn("giving back the claims of this holder's earlier process failed; they run out instead", "error", store.RedactDSN(err.Error()))
	} else if replies+sends > 0 {
		s.log.Info("claims of this holder's earlier process given back", "replies", replies, "sends", sends)
	}
	// A directory the sender writes to is created now, not at the first reply (the receivers
	// create theirs when they start); /readyz reports one that cannot be.
	if c, ok := s.sender.(dirChecker); ok {
		if err := c.checkDir(); err != nil {
			s.log.Error("sender cannot send", "error", err)
		}
	}
	var loops sync.WaitGroup   // the claim loops and receivers: they stop with ctx
	var flights sync.WaitGroup // the runs and sends in flight: they stop with work
	loops.Go(func() { s.replyLoop(ctx, work, &flights) })
	loops.Go(func() { s.approvalLoop(ctx, work, &flights) })
	if s.sender != nil {
		loops.Go(func() { s.sendLoop(ctx, work, &flights) })
	}
	if s.sched != nil {
		loops.Go(func() { s.scheduleLoop(ctx, work) })
	}
	for _, r := range s.recv {
		loops.Go(func() {
			if err := r.Receive(ctx, s); err != nil && ctx.Err() == nil {
				s.log.Error("receiver stopped", "receiver", fmt.Sprintf("%T", r), "error", err)
			}
		})
	}
	<-ctx.Done()
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.log.Info("service stopping", "grace", s.grace)
	loops.Wait()
	done := make(chan struct{})
	go func() { flights.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.grace):
		s.log.Warn("grace period over; cancelling the runs in flight")
		kill()
		<-done
	}
	s.log.Info("service stopped")
	return nil
}

// Kill stops a running service at once: the runs and sends in flight are cancelled (their
// leases released and claims given back as far as the store can still be reached). Run then
// returns as soon as they have.
func (s *Service) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kill != nil {
		s.kill()
	}
}

// Handler returns the service's operational endpoints, for the host to mount where it wants
// (nothing listens unless it does): GET /healthz (200 while the process runs), GET /readyz
// (200 when the store answers and is migrated, the directories of a Dir or DirSender exist or
// could be created, and the service is not stopping, else 503 with the reason) and GET
// /metrics (the service's metrics in Prometheus text format, when Config.MeterProvider was
// nil; 404 otherwise).
func (s *Service) Handler() http.Handler { return s.handler }

// wake tells a claim loop there may be work.
func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// defaultHolder is "<hostname>/<pid>/<12 random hex digits>".
func defaultHolder() string {
	host, _ := os.Hostname()
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// fired logs and counts a fire's report, and hands it to the host's hook.
func (s *Service) fired(rep schedule.Report, hook func(schedule.Report)) {
	f := rep.Fire
	log := s.log.With("persona", f.Persona.Name, "responsibility", f.Responsibility.Name, "fire_at", f.At.UTC(),
		"run", f.Run.Key, "correlation_id", f.Run.Key)
	switch st := rep.Recorded.Status; {
	case rep.Released:
		s.metrics.run(context.Background(), f.Persona.Name, store.RunScheduled, "stopped", string(store.FailureShutdown))
		log.Info("scheduled run given back; the next pass of any replica's scheduler resumes it", "error", rep.Err)
	case st == "":
		s.metrics.run(context.Background(), f.Persona.Name, store.RunScheduled, "stopped", string(rep.Result.Finish.Class))
		log.Info("scheduled run stopped; will retry", "retry_at", rep.RetryAt, "error", rep.Err)
	default:
		s.metrics.run(context.Background(), f.Persona.Name, store.RunScheduled, string(st), string(rep.Recorded.Class))
		log.Info("scheduled run finished", "status", st, "output_characters", len([]rune(rep.Result.Text)),
			"input_tokens", rep.Result.Finish.Usage.InputTokens, "output_tokens", rep.Result.Finish.Usage.OutputTokens)
	}
	if hook != nil {
		hook(rep)
	}
}
