package service

import (
	"bufio"
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/personagen/personagen/bench/internal/cputime"
	pgruntime "github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// kinds are the databases every benchmark runs on.
var kinds = []string{"sqlite", "mysql"}

// personaName is the persona (and mailbox) every message is for.
const personaName = "support"

// quiet is the logger of the child processes' services.
var quiet = slog.New(slog.DiscardHandler)

// finished is a log handler that counts the service's "reply run finished" records (written once
// a run's work is completed in the store) and closes done at the want-th: the benchmarks learn
// that the messages are answered without polling the database. It builds every Info record,
// for the direct loop's runner too, so both sides pay for their logs alike.
type finished struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func newFinished(want int) *finished {
	return &finished{want: int64(want), done: make(chan struct{})}
}

func (f *finished) logger() *slog.Logger { return slog.New(f) }

func (f *finished) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (f *finished) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "reply run finished" && f.n.Add(1) == f.want {
		close(f.done)
	}
	return nil
}

func (f *finished) WithAttrs([]slog.Attr) slog.Handler { return f }
func (f *finished) WithGroup(string) slog.Handler      { return f }

// wait waits until want runs finished, for at most within.
func (f *finished) wait(within time.Duration) error {
	select {
	case <-f.done:
		return nil
	case <-time.After(within):
		return fmt.Errorf("%d of %d runs finished after %s", f.n.Load(), f.want, within)
	}
}

// newPersona is the benchmarks' persona: a system prompt and the thread's history.
func newPersona(st *store.Store) *pgruntime.Persona {
	p := &pgruntime.Persona{Name: personaName, Description: "Answers customer email.",
		MessageChain: pgruntime.NewChain(
			pgruntime.Step{Kind: "load_text", Resolver: &pgruntime.LoadText{Text: "You answer customer email for Acme.", Role: chat.RoleSystem}},
			pgruntime.Step{Kind: "thread_history", Resolver: &pgruntime.ThreadHistory{Source: st}},
		)}
	p.Mailbox.Address = "support@acme.example"
	return p
}

// scripted is the scripted model: one final answer per call, after latency, counting the calls
// in flight and their peak. With hold set, a call instead waits until hold is closed, and the
// target-th call in flight closes full.
type scripted struct {
	latency    time.Duration
	hold, full chan struct{}
	target     int64
	inFlight   atomic.Int64
	peak       atomic.Int64
}

func (m *scripted) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	n := m.inFlight.Add(1)
	defer m.inFlight.Add(-1)
	for p := m.peak.Load(); n > p && !m.peak.CompareAndSwap(p, n); p = m.peak.Load() {
	}
	if m.hold != nil {
		if n == m.target {
			close(m.full)
		}
		select {
		case <-m.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if m.latency > 0 {
		t := time.NewTimer(m.latency)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &chat.Response{Message: chat.AssistantMessage("Thank you for writing; your order ships tomorrow."),
		StopReason: chat.StopEndTurn, Usage: chat.Usage{InputTokens: 40, OutputTokens: 9}}, nil
}

// openStore opens a migrated store on dsn whose round trips trips counts (nil: not counted).
func openStore(ctx context.Context, dsn string, trips *atomic.Int64) (*store.Store, error) {
	var opts []store.Option
	if trips != nil {
		opts = append(opts, store.WithConnector(func(c driver.Connector) driver.Connector { return storetest.CountTrips(c, trips, nil) }))
	}
	st, err := store.Open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// database is a fresh database of kind for tb: a SQLite file, or a scratch MariaDB database
// (storetest.MySQL: skipped when unreachable, failed under CI=true). It returns its DSN, a
// counted store on it, and the counter.
func database(tb testing.TB, kind string) (string, *store.Store, *atomic.Int64) {
	tb.Helper()
	dsn := "sqlite:" + filepath.Join(tb.TempDir(), "bench.db")
	if kind == "mysql" {
		dsn = storetest.MySQL(tb)
	}
	trips := &atomic.Int64{}
	st, err := openStore(context.Background(), dsn, trips)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return dsn, st, trips
}

// seed stores n inbound messages for the persona, each starting a thread of its own (their
// reply work pending from then on), and returns their seqs. The names are unique per call.
func seed(ctx context.Context, st *store.Store, n int) ([]int64, error) {
	stamp := time.Now().UnixNano()
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	seqs := make([]int64, 0, n)
	for i := range n {
		thread := fmt.Sprintf("%s/%d-%d", personaName, stamp, i)
		a, err := st.AppendMessage(ctx, store.Message{Mailbox: personaName, Message: history.Message{
			ThreadID: thread, MessageID: fmt.Sprintf("q%d-%d@cust.example", stamp, i), Direction: history.Inbound,
			From: "Ann <ann@cust.example>", To: []string{"support@acme.example"}, Subject: "Where is my order?",
			Date: at, Text: "Hello, where is my order A-17? It was due yesterday.",
		}})
		if err != nil {
			return nil, err
		}
		seqs = append(seqs, a.Seq)
	}
	return seqs, nil
}

// clearWork removes the pending work of earlier benchmarks (the direct loops leave theirs).
func clearWork(ctx context.Context, st *store.Store) error {
	_, err := st.DB().ExecContext(ctx, "DELETE FROM pending_replies")
	return err
}

// awaitAnswered waits until st holds no reply work, asking every poll.
func awaitAnswered(ctx context.Context, st *store.Store, within, poll time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		c, err := st.CountPending(ctx)
		if err != nil {
			return err
		}
		if c.Replies == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d threads still pending after %s", c.Replies, within)
		}
		time.Sleep(poll)
	}
}

// newService is a service of one persona on st with workers workers, no sender and no
// scheduler, logging to log.
func newService(st *store.Store, model chat.Model, holder string, workers int, log *slog.Logger) (*service.Service, error) {
	return service.New(service.Config{Store: st, Personas: []*pgruntime.Persona{newPersona(st)}, Models: service.Models{Default: model},
		Holder: holder, Workers: workers, NoSchedule: true, Logger: log})
}

// variant is one way of answering the stored messages seqs; it returns when they are answered.
type variant struct {
	name string
	run  func(b *testing.B, v env, seqs []int64) (childTrips int64)
}

// env is what a variant runs on.
type env struct {
	ctx   context.Context
	dsn   string
	st    *store.Store // counted
	watch *store.Store // not counted: for waiting
	// restart restarts the clock of the timed part, for a variant whose setup comes first;
	// answered ends the timed part, as soon as the messages are answered.
	restart, answered func()
}

// direct answers seqs by calling Runner.Reply in a loop, on goroutines goroutines.
func direct(goroutines int) func(b *testing.B, v env, seqs []int64) int64 {
	return func(b *testing.B, v env, seqs []int64) int64 {
		r := &agent.Runner{Store: v.st, Model: &scripted{}, Holder: "bench-direct", Logger: newFinished(len(seqs)).logger()}
		p := newPersona(v.st)
		var next atomic.Int64
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for i := next.Add(1) - 1; i < int64(len(seqs)); i = next.Add(1) - 1 {
					if _, err := r.Reply(v.ctx, agent.Inbound{Persona: p, Message: store.Message{Message: history.Message{Seq: seqs[i]}}}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		v.answered()
		return 0
	}
}

// inProcess answers seqs with one service of workers workers in this process.
func inProcess(workers int) func(b *testing.B, v env, seqs []int64) int64 {
	return func(b *testing.B, v env, seqs []int64) int64 {
		fin := newFinished(len(seqs))
		b.StopTimer()
		svc, err := newService(v.st, &scripted{}, "bench-1", workers, fin.logger())
		if err != nil {
			b.Fatal(err)
		}
		v.restart()
		b.StartTimer()
		ctx, cancel := context.WithCancel(v.ctx)
		done := make(chan error, 1)
		go func() { done <- svc.Run(ctx) }()
		err = fin.wait(5 * time.Minute)
		v.answered()
		cancel()
		if rerr := <-done; rerr != nil {
			b.Error(rerr)
		}
		if err != nil {
			b.Fatal(err)
		}
		return 0
	}
}

// processes answers seqs with n services of workers workers, each in a process of its own
// (this test binary, TestBenchChildProcess), started before the timed part and told to go at its
// start. It returns the round trips the processes made from then on.
func processes(n, workers int) func(b *testing.B, v env, seqs []int64) int64 {
	return func(b *testing.B, v env, seqs []int64) int64 {
		b.StopTimer()
		var cs []*child
		for i := range n {
			cs = append(cs, startChild(b, v.dsn, fmt.Sprintf("bench-%d", i), workers))
		}
		v.restart()
		b.StartTimer()
		for _, c := range cs {
			c.send(b, "go")
		}
		err := awaitAnswered(v.ctx, v.watch, 5*time.Minute, 2*time.Millisecond)
		v.answered()
		var trips int64
		for _, c := range cs {
			c.send(b, "stop")
			trips += c.trips(b)
		}
		if err != nil {
			b.Fatal(err)
		}
		return trips
	}
}

var variants = []variant{
	{"direct", direct(1)},
	{"direct_8", direct(8)},
	{"service_1x1", inProcess(1)},
	{"service_1x8", inProcess(8)},
	{"service_4x8", processes(4, 8)},
}

// BenchmarkService: see the package documentation.
func BenchmarkService(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			dsn, st, trips := database(b, kind)
			watch, err := openStore(ctx, dsn, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer watch.Close()
			for _, vr := range variants {
				b.Run(vr.name, func(b *testing.B) {
					if err := clearWork(ctx, st); err != nil {
						b.Fatal(err)
					}
					seqs, err := seed(ctx, st, b.N)
					if err != nil {
						b.Fatal(err)
					}
					var start, end time.Time
					var before, after int64
					var cpuStart, cpuEnd time.Duration
					var cpuOK bool
					var once sync.Once
					v := env{ctx: ctx, dsn: dsn, st: st, watch: watch, restart: func() {
						start, before = time.Now(), trips.Load()
						cpuStart, cpuOK = cputime.Process()
					}, answered: func() {
						once.Do(func() {
							b.StopTimer()
							end, after = time.Now(), trips.Load()
							cpuEnd, _ = cputime.Process()
						})
					}}
					b.ResetTimer()
					v.restart()
					child := vr.run(b, v, seqs)
					v.answered()
					elapsed := end.Sub(start)
					if cpuOK && child == 0 { // the processes' CPU time is not this one's
						b.ReportMetric(float64(cpuEnd-cpuStart)/float64(b.N), "cpu-ns/op")
					}
					answered, err := answeredOf(ctx, watch, seqs)
					if err != nil {
						b.Fatal(err)
					}
					if answered != len(seqs) {
						b.Fatalf("%d of %d messages answered", answered, len(seqs))
					}
					b.ReportMetric(float64(after-before+child)/float64(b.N), "roundtrips/op")
					b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
				})
			}
		})
	}
}

// ratioBatch is BenchmarkServiceRatio's messages per side and round: 100 with
// PERSONAGEN_BENCH_SCALE=full, 10 otherwise.
func ratioBatch() int {
	if os.Getenv("PERSONAGEN_BENCH_SCALE") == "full" {
		return 100
	}
	return 10
}

// BenchmarkServiceRatio interleaves the direct loop and the one-worker service: each round
// answers a batch of messages each way, in alternating order, so that the load of a shared
// machine falls on both alike. It reports the service's time per message over the direct
// loop's (service/direct), the same for the process's CPU time (cpu-service/direct: with
// SQLite the database's work is in it, with MariaDB only the client's), and the round trips it
// adds per message (extra-roundtrips/op); a round's service time includes its start (New
// excluded).
func BenchmarkServiceRatio(b *testing.B) {
	m := ratioBatch()
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			dsn, st, trips := database(b, kind)
			watch, err := openStore(ctx, dsn, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer watch.Close()
			var spent, cpu [2]time.Duration // direct, service
			var made [2]int64
			sides := [2]func(b *testing.B, v env, seqs []int64) int64{direct(1), inProcess(1)}
			b.ResetTimer()
			for i := range b.N {
				for k := range 2 {
					side := (i + k) % 2
					b.StopTimer()
					if err := clearWork(ctx, st); err != nil {
						b.Fatal(err)
					}
					seqs, err := seed(ctx, st, m)
					if err != nil {
						b.Fatal(err)
					}
					var start, end time.Time
					var before, after int64
					var cpuStart, cpuEnd time.Duration
					var once sync.Once
					v := env{ctx: ctx, dsn: dsn, st: st, watch: watch, restart: func() {
						start, before = time.Now(), trips.Load()
						cpuStart, _ = cputime.Process()
					}, answered: func() {
						once.Do(func() {
							b.StopTimer()
							end, after = time.Now(), trips.Load()
							cpuEnd, _ = cputime.Process()
						})
					}}
					b.StartTimer()
					v.restart()
					sides[side](b, v, seqs)
					v.answered()
					spent[side] += end.Sub(start)
					cpu[side] += cpuEnd - cpuStart
					made[side] += after - before
				}
			}
			b.ReportMetric(float64(spent[1])/float64(spent[0]), "service/direct")
			if cpu[0] > 0 {
				b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "cpu-service/direct")
			}
			b.ReportMetric(float64(made[1]-made[0])/float64(b.N*m), "extra-roundtrips/op")
		})
	}
}

// answeredOf counts the messages of seqs that have a succeeded reply run.
func answeredOf(ctx context.Context, st *store.Store, seqs []int64) (int, error) {
	if len(seqs) == 0 {
		return 0, nil
	}
	var n int
	err := st.DB().GetContext(ctx, &n, st.DB().Rebind(`SELECT COUNT(*) FROM runs WHERE kind = 'reply' AND status = 'succeeded'
		AND message_seq BETWEEN ? AND ?`), seqs[0], seqs[len(seqs)-1])
	return n, err
}

// inFlightRuns is BenchmarkServiceInFlight's batch: 1,000 with PERSONAGEN_BENCH_SCALE=full, 20
// otherwise.
func inFlightRuns() int {
	if os.Getenv("PERSONAGEN_BENCH_SCALE") == "full" {
		return 1000
	}
	return 20
}

// BenchmarkServiceInFlight: see the package documentation. model_1s gives every model call 1 s;
// held keeps every call until the whole batch is in flight, and measures then.
func BenchmarkServiceInFlight(b *testing.B) {
	n := inFlightRuns()
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			_, st, _ := database(b, kind)
			if kind == "mysql" && os.Getenv("PERSONAGEN_BENCH_UNCAPPED_POOL") == "1" {
				// The store's pool opens at most store.DefaultMaxOpenConns connections.
				// Unbounded, a thousand runs finishing at once open more connections than
				// MariaDB's default max_connections (151) allows, and the refused ones stop
				// their runs (Error 1040).
				st.DB().SetMaxOpenConns(0)
			}
			for _, held := range []bool{false, true} {
				name := "model_1s"
				if held {
					name = "held"
				}
				b.Run(name, func(b *testing.B) {
					var peak, perRun, total float64
					for range b.N {
						p, mem, at := inFlight(b, st, n, held)
						grown := float64(mem) - float64(at.base)
						peak += float64(p)
						perRun += grown / float64(at.runs)
						total += grown / (1 << 20)
					}
					b.ReportMetric(peak/float64(b.N), "in-flight")
					b.ReportMetric(perRun/float64(b.N), "bytes/run")
					b.ReportMetric(total/float64(b.N), "peak-MiB")
					b.ReportMetric(float64(n), "batch")
				})
			}
		})
	}
}

// measured is when inFlight measured the memory: the process's memory before the batch, and
// the runs in flight then.
type measured struct {
	base uint64
	runs int64
}

// inFlight answers a batch of n stored messages with one service of n workers and returns the
// most runs in flight at once, the process's memory at the peak it measured (see memory), and
// when it measured. With held, every model call waits until all n are in flight, and memory is
// measured then; otherwise each call takes 1 s, and memory is measured at each new peak seen
// every 20 ms.
func inFlight(b *testing.B, st *store.Store, n int, held bool) (peak int64, mem uint64, at measured) {
	b.StopTimer()
	ctx := context.Background()
	if err := clearWork(ctx, st); err != nil {
		b.Fatal(err)
	}
	if _, err := seed(ctx, st, n); err != nil {
		b.Fatal(err)
	}
	m := &scripted{latency: time.Second}
	if held {
		m = &scripted{hold: make(chan struct{}), full: make(chan struct{}), target: int64(n)}
	}
	fin := newFinished(n)
	svc, err := newService(st, m, "bench-inflight", n, fin.logger())
	if err != nil {
		b.Fatal(err)
	}
	at.base = memory()
	b.StartTimer()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	stopSampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		if held {
			select {
			case <-m.full:
				mem, at.runs = memory(), m.inFlight.Load()
				close(m.hold)
			case <-stopSampling:
			}
			return
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-tick.C:
			}
			if cur := m.inFlight.Load(); cur > at.runs {
				mem, at.runs = memory(), cur
			}
		}
	}()
	err = fin.wait(5 * time.Minute)
	b.StopTimer()
	close(stopSampling)
	<-sampled
	cancel()
	if rerr := <-done; rerr != nil {
		b.Error(rerr)
	}
	if err != nil {
		b.Fatal(err)
	}
	if at.runs == 0 {
		b.Fatal("no run was measured in flight")
	}
	return m.peak.Load(), mem, at
}

// memory is the process's live heap (after a collection) plus its goroutine stacks, in bytes.
func memory() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc + ms.StackInuse
}

// Environment of a benchmark child process; set only in one.
const (
	childDSNEnv     = "PERSONAGEN_BENCH_SERVICE_DSN"
	childHolderEnv  = "PERSONAGEN_BENCH_SERVICE_HOLDER"
	childWorkersEnv = "PERSONAGEN_BENCH_SERVICE_WORKERS"
)

// TestBenchChildProcess is one service process of BenchmarkService's service_4x8: it opens a
// counted store, builds its service and waits; on "go" it runs the service, on "stop" it stops
// it and prints "trips N", the round trips it made from "go" on.
func TestBenchChildProcess(t *testing.T) {
	dsn := os.Getenv(childDSNEnv)
	if dsn == "" {
		t.Skip("a service process of BenchmarkService")
	}
	ctx := context.Background()
	trips := &atomic.Int64{}
	st, err := openStore(ctx, dsn, trips)
	if err != nil {
		fmt.Printf("bench: error %v\n", err)
		return
	}
	defer st.Close()
	workers, _ := strconv.Atoi(os.Getenv(childWorkersEnv))
	svc, err := newService(st, &scripted{}, os.Getenv(childHolderEnv), workers, quiet)
	if err != nil {
		fmt.Printf("bench: error %v\n", err)
		return
	}
	fmt.Println("bench: ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "go" {
		return
	}
	start := trips.Load()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- svc.Run(runCtx) }()
	in.Scan() // "stop", or the parent went away
	cancel()
	if err := <-done; err != nil {
		fmt.Printf("bench: error %v\n", err)
		return
	}
	fmt.Printf("bench: trips %d\n", trips.Load()-start)
}

// child is a service process as the benchmark sees it.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startChild(b *testing.B, dsn, holder string, workers int) *child {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), childDSNEnv+"="+dsn, childHolderEnv+"="+holder, childWorkersEnv+"="+strconv.Itoa(workers))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if l, ok := strings.CutPrefix(sc.Text(), "bench: "); ok {
				c.lines <- l
			}
		}
	}()
	b.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	if l := c.await(b); l != "ready" {
		b.Fatalf("service process: %s", l)
	}
	return c
}

func (c *child) await(b *testing.B) string {
	b.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			b.Fatal("service process exited")
		}
		return l
	case <-time.After(time.Minute):
		b.Fatal("service process silent for a minute")
	}
	return ""
}

func (c *child) send(b *testing.B, line string) {
	b.Helper()
	if _, err := fmt.Fprintln(c.stdin, line); err != nil {
		b.Fatal(err)
	}
}

// trips reads the process's "trips N" line, after "stop".
func (c *child) trips(b *testing.B) int64 {
	b.Helper()
	l := c.await(b)
	n, err := strconv.ParseInt(strings.TrimPrefix(l, "trips "), 10, 64)
	if err != nil {
		b.Fatalf("service process: %s", l)
	}
	return n
}
