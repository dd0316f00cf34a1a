package service

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/tool"
)

// The replica-process tests run copies of this test binary as separate OS processes (replicas),
// each running a Service on one database — a MariaDB scratch database, or one SQLite file in WAL
// mode — and check what they did together:
//
//   - TestReplicaProcessesKilled: four replicas answer 200 messages over 40 threads that arrive
//     while they run, while a random replica is killed (SIGKILL) every 2–4 s and restarted,
//     alternately under its old holder name and under a new one;
//   - TestReplicaProcessesStopGracefully: replicas are stopped with SIGTERM while their runs are
//     in flight;
//   - TestReplicaProcessesStopHandsFiresOver: the same with the fires on.
//
// Each persona also has a responsibility that fires every 2 s (in every test but
// TestReplicaProcessesStopGracefully); the replicas' schedulers share the fires, each fire's run calls a second tool that is not idempotent (post_digest), and the
// service's OnFire hook records each fire's outcome.
//
// The parent delivers every message through a replica's Deliver (a line on its stdin; the
// replica acknowledges once Deliver returned, and a message given to a replica that died before
// acknowledging it is given to another — a redelivery), and some messages a second time on
// purpose. Half the threads belong to "support", which answers a thread's pending messages with
// one run (coalescing), half to "sales", which answers each message with its own run
// (Config.EachMessage). Every process appends what it does to one shared file (the effects
// file), one line per write, in a global order: the model's and the tool's begin and end of work
// on a thread, each execution of the refund tool (not idempotent), each reply the Sender was
// given, and the parent's kills. The model is deterministic: it lists in its answer the messages
// of the thread that no earlier reply listed, and asks for a refund first when one of them asks
// for one. The tests then assert, from the store and the effects file:
//
//   - every message is stored once and answered by exactly one reply, which lists it; a support
//     reply lists exactly the messages after the previous run's up to its own (coalescing), a
//     sales reply exactly its own message; some support reply answers several;
//   - no two runs (or two attempts of one run) work on a thread at once;
//   - every reply is sent, and sent again only after a process was killed between handing it to
//     the Sender and recording it sent (the documented at-least-once window of a crash; a graceful
//     stop sends nothing twice);
//   - the refund tool ran at most once per call, and a reply that says "refunded" had its refund
//     run exactly once; a call cut off by a kill is reported to the model as of unknown outcome;
//   - every run a killed replica was working on is resumed by another, within a bound of a few
//     claim leases (a liveness bound, not a performance assertion);
//   - every fire instant has a run, run by one replica at a time, its post at most once, and it
//     succeeded or was skipped — or, cut off by a kill, ended as docs/scheduling.md says
//     (abandoned when a later fire came due); one cut off by a graceful stop is given back and
//     resumed (TestReplicaProcessesStopHandsFiresOver).
//
// A send claim lasts minutes (sendLease): when a replica is killed while it holds one, the test
// ends that claim at once (fast-forwarding its lease) instead of waiting, and logs it.
//
// In `go test` each database takes about 20–30 s. PERSONAGEN_SOAK=1 runs a longer soak instead:
// 2,000 messages over 200 threads arriving over 4 minutes, with the kills throughout (run it
// with -timeout 30m).
// PERSONAGEN_SERVICE_SEED=N replays the random choices of a run (its timing still differs);
// PERSONAGEN_SERVICE_KEEP=DIR keeps the replicas' logs and the effects file under DIR.

// Environment of a replica process; set only in one.
const (
	replicaDSNEnv     = "PERSONAGEN_SERVICE_REPLICA_DSN"
	replicaIDEnv      = "PERSONAGEN_SERVICE_REPLICA_ID"      // the incarnation's name in the effects file
	replicaHolderEnv  = "PERSONAGEN_SERVICE_REPLICA_HOLDER"  // Config.Holder
	replicaEffectsEnv = "PERSONAGEN_SERVICE_REPLICA_EFFECTS" // the shared effects file
	replicaLogEnv     = "PERSONAGEN_SERVICE_REPLICA_LOG"     // the replica's JSON log file
	replicaTuneEnv    = "PERSONAGEN_SERVICE_REPLICA_TUNE"    // replicaTuning as JSON
)

// replicaTuning is what a replica process runs with.
type replicaTuning struct {
	// Latency is the base model latency: each call takes between half and 1.5 times it, and a
	// run answering a message that says "(slow)" four times as long.
	Latency time.Duration
	// ToolLatency is how long the refund tool works after its effect (not cut short by ctx).
	ToolLatency time.Duration
	Lease       time.Duration // agent.Runner.LeaseFor, and the scheduler's lease
	Grace       time.Duration // Config.ShutdownGrace
	Workers     int
	// Fires turns the scheduler on: each persona's responsibility "digest" fires every
	// fireEvery.
	Fires bool
}

// fireEvery is the interval of the personas' responsibility.
const fireEvery = 2 * time.Second

// TestReplicaProcessChild is one replica process; it runs only under the replica-process tests.
func TestReplicaProcessChild(t *testing.T) {
	dsn := os.Getenv(replicaDSNEnv)
	if dsn == "" {
		t.Skip("a replica process of TestReplicaProcessesKilled and TestReplicaProcessesStopGracefully")
	}
	var outMu sync.Mutex
	say := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf("replica: "+format+"\n", a...)
	}
	var tune replicaTuning
	if err := json.Unmarshal([]byte(os.Getenv(replicaTuneEnv)), &tune); err != nil {
		say("error tuning: %v", err)
		return
	}
	fx, err := openEffects(os.Getenv(replicaEffectsEnv), os.Getenv(replicaIDEnv))
	if err != nil {
		say("error %v", err)
		return
	}
	logFile, err := os.OpenFile(os.Getenv(replicaLogEnv), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		say("error %v", err)
		return
	}
	defer logFile.Close()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		say("error %v", err)
		return
	}
	defer st.Close()
	svc, err := New(Config{
		Store: st, Personas: replicaPersonas(st, fx, tune), Models: Models{Default: replicaModel(fx, tune)},
		Sender: effectSender{fx}, Holder: os.Getenv(replicaHolderEnv), Workers: tune.Workers,
		EachMessage: []string{"sales"}, PollInterval: 50 * time.Millisecond, ShutdownGrace: tune.Grace,
		NoSchedule: !tune.Fires, Schedule: []schedule.Option{schedule.WithLease(tune.Lease)},
		OnFire: func(rep schedule.Report) {
			fx.line("fired", rep.Fire.Run.Key, "status="+string(rep.Recorded.Status), "outcome="+fireOutcome(rep.Result.Text))
		},
		Retry:  RetryPolicy{Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond, Attempts: 8},
		Runner: &agent.Runner{LeaseFor: tune.Lease},
		Logger: slog.New(slog.NewJSONHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo})),
	})
	if err != nil {
		say("error %v", err)
		return
	}
	ctx, stop := NotifyContext(context.Background(), svc.Kill)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	go func() {
		in := bufio.NewScanner(os.Stdin)
		in.Buffer(make([]byte, 1<<20), 1<<20)
		for in.Scan() {
			cmd, arg, _ := strings.Cut(in.Text(), " ")
			if cmd != "deliver" {
				say("error unknown command %q", cmd)
				continue
			}
			id, enc, _ := strings.Cut(arg, " ")
			raw, err := base64.StdEncoding.DecodeString(enc)
			if err != nil {
				say("error %v", err)
				continue
			}
			if _, err := svc.Deliver(context.Background(), bytes.NewReader(raw), Envelope{Source: "parent"}); err != nil {
				say("refused %s %v", id, strings.ReplaceAll(err.Error(), "\n", "; "))
				continue
			}
			say("delivered %s", id)
		}
		// The parent went away: stop as on a signal.
		stop()
	}()
	say("ready")
	if err := <-done; err != nil {
		say("error Run: %v", err)
		return
	}
	say("stopped")
}

// effects appends lines to the shared effects file: "<unix ns> <who> <what> <args...>", each
// with one write (O_APPEND), so the lines of all processes keep one global order.
type effects struct {
	mu  sync.Mutex
	f   *os.File
	who string
}

func openEffects(path, who string) (*effects, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &effects{f: f, who: who}, nil
}

func (e *effects) line(what string, args ...string) {
	l := fmt.Sprintf("%d %s %s %s\n", time.Now().UnixNano(), e.who, what, strings.Join(args, " "))
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.f.WriteString(l); err != nil {
		panic(err) // a lost effect would make the test's verdict wrong
	}
}

// tokenRE matches the token every test message carries: thread t, message m.
var tokenRE = regexp.MustCompile(`\bt\d+m\d+\b`)

// fireRE matches the run key a fire's request carries (see replicaPersonas).
var fireRE = regexp.MustCompile(`fire:\S+`)

// fireThread is the effects file's thread of a fire's run key: one per persona's
// responsibility, which has at most one run at a time.
func fireThread(key string) string {
	persona, _, _ := strings.Cut(strings.TrimPrefix(key, "fire:"), "/")
	return "fire-" + persona
}

// fireOutcome is what a fire's answer says of its post: "posted", "unknown" or "none".
func fireOutcome(text string) string {
	_, outcome, ok := strings.Cut(text, "digest: ")
	if !ok {
		return "none"
	}
	return outcome
}

// tokenThread is the thread part of a token ("t7" of "t7m3").
func tokenThread(tok string) string { return tok[:strings.LastIndexByte(tok, 'm')] }

// replicaPersonas are support (coalescing) and sales (one run per message), each replaying the
// whole thread and with the refund tool, which is not idempotent: each execution appends
// "refund ORDER RUN" to the effects file, then works for tune.ToolLatency whatever ctx says.
// With tune.Fires each has the responsibility "digest" every fireEvery, whose request names its
// run key, and the post_digest tool, not idempotent either ("post KEY").
func replicaPersonas(st *store.Store, fx *effects, tune replicaTuning) []*runtime.Persona {
	post := tool.Must(tool.New(tool.Def{
		Name: "post_digest", Description: "Post the digest.", Idempotent: false,
		InputSchema: json.RawMessage(`{"type":"object"}`),
	}, func(ctx context.Context, inv *runtime.Invocation, in struct{}) (string, error) {
		key := inv.CorrelationID
		fx.line("begin", fireThread(key), key, "tool")
		fx.line("post", key)
		time.Sleep(tune.ToolLatency)
		fx.line("end", fireThread(key), key, "tool")
		return "posted " + key, nil
	}))
	refund := tool.Must(tool.New(tool.Def{
		Name: "refund", Description: "Refund an order.", Idempotent: false,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`),
	}, func(ctx context.Context, inv *runtime.Invocation, in refundInput) (string, error) {
		run := tokenRE.FindString(inv.Inbound.Text)
		fx.line("begin", tokenThread(run), run, "tool")
		fx.line("refund", in.Order, run)
		time.Sleep(tune.ToolLatency)
		fx.line("end", tokenThread(run), run, "tool")
		return "refunded " + in.Order, nil
	}))
	var out []*runtime.Persona
	for _, name := range []string{"support", "sales"} {
		p := &runtime.Persona{Name: name, Description: "Answers customer email.", Tools: []runtime.Tool{refund, post},
			MessageChain: runtime.NewChain(
				runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "You answer customer email.", Role: chat.RoleSystem}},
				runtime.Step{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: st, Limit: runtime.NoLimit}},
			)}
		if tune.Fires {
			p.ResponsibilityChain = runtime.NewChain(runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Role: chat.RoleUser,
				TextFunc: func(inv *runtime.Invocation) (string, error) {
					return "Write the digest of run " + inv.CorrelationID + " now.", nil
				}}})
			p.Responsibilities = []runtime.Responsibility{{Name: "digest", Schedule: "@every " + fireEvery.String(), Enabled: true}}
		}
		p.Mailbox.Address = name + "@acme.example"
		out = append(out, p)
	}
	return out
}

// replicaModel is the replicas' deterministic model. The run it works for is named by the token
// of the request's last user message (the message answered). Its answer lists the tokens of the
// thread's user messages that no assistant message (an earlier reply) lists: "answered: t7m1
// t7m2", then "refunds: R-t7m1=refunded …" for those that ask for a refund, with the result the
// request shows for each. When one of them asks for a refund that no tool result of the request
// shows and the run has no tool result yet, it first asks for one refund call per such message
// (call id "refund-<token>", order "R-<token>"). Each call is bracketed by "begin"/"end" lines
// in the effects file and takes about tune.Latency.
func replicaModel(fx *effects, tune replicaTuning) chat.Model {
	return chat.ModelFunc(func(ctx context.Context, req *chat.Request) (*chat.Response, error) {
		last := -1
		for i, m := range req.Messages {
			if m.Role == chat.RoleUser {
				last = i
			}
		}
		if last < 0 {
			return nil, fmt.Errorf("replica model: no user message")
		}
		if key := fireRE.FindString(req.Messages[last].Text); key != "" {
			return fireAnswer(ctx, fx, tune, req, last, key)
		}
		run := tokenRE.FindString(req.Messages[last].Text)
		if run == "" {
			return nil, fmt.Errorf("replica model: the answered message has no token: %q", req.Messages[last].Text)
		}
		thread := tokenThread(run)
		fx.line("begin", thread, run, "model")
		h := fnv.New32a()
		fmt.Fprintf(h, "%s/%d", run, len(req.Messages))
		d := tune.Latency/2 + time.Duration(h.Sum32()%1000)*tune.Latency/1000
		if strings.Contains(req.Messages[last].Text, "(slow)") {
			d *= 4
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			fx.line("end", thread, run, "model", "cancelled")
			return nil, ctx.Err()
		}
		defer fx.line("end", thread, run, "model")
		answered := map[string]bool{}
		for _, m := range req.Messages {
			if m.Role == chat.RoleAssistant {
				for _, tok := range tokenRE.FindAllString(m.Text, -1) {
					answered[tok] = true
				}
			}
		}
		var open, refunds []string
		for _, m := range req.Messages {
			if m.Role != chat.RoleUser {
				continue
			}
			for _, tok := range tokenRE.FindAllString(m.Text, -1) {
				if !answered[tok] && !slices.Contains(open, tok) {
					open = append(open, tok)
					if strings.Contains(m.Text, "refund") {
						refunds = append(refunds, tok)
					}
				}
			}
		}
		// This run's refund results, and those of the whole request: an earlier run's recorded
		// round (one that failed after its refund, say) is in the thread's history, and a
		// refund it shows is not asked for again.
		results, seen := map[string]string{}, map[string]string{}
		for i, m := range req.Messages {
			if m.Role == chat.RoleTool {
				tok := strings.TrimPrefix(m.ToolCallID, "refund-")
				seen[tok] = m.Text
				if i > last {
					results[tok] = m.Text
				}
			}
		}
		var need []string
		for _, tok := range refunds {
			if _, ok := seen[tok]; !ok {
				need = append(need, tok)
			}
		}
		if len(need) > 0 && len(results) == 0 {
			var calls []chat.ToolCall
			for _, tok := range need {
				call, err := chat.NewToolCall("refund-"+tok, "refund", refundInput{Order: "R-" + tok})
				if err != nil {
					return nil, err
				}
				calls = append(calls, call)
			}
			return &chat.Response{Message: chat.AssistantMessage("", calls...), StopReason: chat.StopToolUse}, nil
		}
		text := "answered: " + strings.Join(open, " ")
		if len(refunds) > 0 {
			var rs []string
			for _, tok := range refunds {
				outcome := "unknown"
				switch r := seen[tok]; {
				case r == "refunded R-"+tok:
					outcome = "refunded"
				case !strings.Contains(r, "[outcome unknown]"):
					outcome = "other:" + strings.ReplaceAll(r, " ", "_")
				}
				rs = append(rs, "R-"+tok+"="+outcome)
			}
			text += "\nrefunds: " + strings.Join(rs, " ")
		}
		return &chat.Response{Message: chat.AssistantMessage(text), StopReason: chat.StopEndTurn,
			Usage: chat.Usage{InputTokens: 10, OutputTokens: 3}}, nil
	})
}

// fireAnswer is replicaModel's answer to a fire's request (run key): post the digest, then say
// how that went ("digest: posted" or "digest: unknown").
func fireAnswer(ctx context.Context, fx *effects, tune replicaTuning, req *chat.Request, last int, key string) (*chat.Response, error) {
	fx.line("begin", fireThread(key), key, "model")
	select {
	case <-time.After(tune.Latency):
	case <-ctx.Done():
		fx.line("end", fireThread(key), key, "model", "cancelled")
		return nil, ctx.Err()
	}
	defer fx.line("end", fireThread(key), key, "model")
	for _, m := range req.Messages[last+1:] {
		if m.Role == chat.RoleTool {
			outcome := "unknown"
			if m.Text == "posted "+key {
				outcome = "posted"
			}
			return &chat.Response{Message: chat.AssistantMessage("digest: " + outcome), StopReason: chat.StopEndTurn}, nil
		}
	}
	call, err := chat.NewToolCall("post", "post_digest", struct{}{})
	if err != nil {
		return nil, err
	}
	return &chat.Response{Message: chat.AssistantMessage("", call), StopReason: chat.StopToolUse}, nil
}

// effectSender records each reply it is given: "sent <Message-ID>".
type effectSender struct{ fx *effects }

func (s effectSender) Send(ctx context.Context, m Outgoing) error {
	s.fx.line("sent", m.MessageID)
	return nil
}

// replica is one incarnation of a replica process as the parent sees it.
type replica struct {
	index  int
	id     string // the incarnation's name: "r<index>.<incarnation>"
	holder string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wmu    sync.Mutex
	ready  chan struct{}
	exited chan struct{} // closed when the process exited and its output was read
	stop   string        // the "stopped"/"error" line it ended with
	log    string        // its log file
}

// fleet runs the replicas of one test and delivers the messages through them.
type fleet struct {
	t       *testing.T
	dsn     string
	dir     string
	tune    replicaTuning
	fx      *effects // the parent's lines (kills)
	effects string

	mu       sync.Mutex
	rng      *rand.Rand
	live     []*replica          // by index; nil while down
	all      []*replica          // every incarnation
	given    map[string]*replica // deliveries not acknowledged yet, by message id
	acked    map[string]bool
	raw      map[string][]byte
	n        int // incarnations started
	killedAt map[string]time.Time
}

func newFleet(t *testing.T, dsn string, tune replicaTuning, seed uint64) *fleet {
	dir := t.TempDir()
	if keep := os.Getenv("PERSONAGEN_SERVICE_KEEP"); keep != "" {
		dir = filepath.Join(keep, strings.ReplaceAll(t.Name(), "/", "_"))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Logf("replica logs and the effects file kept in %s", dir)
	}
	f := &fleet{t: t, dsn: dsn, dir: dir, tune: tune, effects: filepath.Join(dir, "effects"),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), given: map[string]*replica{},
		acked: map[string]bool{}, raw: map[string][]byte{}, killedAt: map[string]time.Time{}}
	fx, err := openEffects(f.effects, "parent")
	if err != nil {
		t.Fatal(err)
	}
	f.fx = fx
	t.Cleanup(func() {
		f.mu.Lock()
		all := slices.Clone(f.all)
		f.mu.Unlock()
		for _, r := range all {
			r.stdin.Close()
			r.cmd.Process.Kill()
			<-r.exited
		}
		if t.Failed() {
			f.dumpLogs()
		}
	})
	return f
}

// start starts replica index under holder and waits until its service runs.
func (f *fleet) start(index int, holder string) *replica {
	f.t.Helper()
	f.mu.Lock()
	f.n++
	id := fmt.Sprintf("r%d.%d", index, f.n)
	f.mu.Unlock()
	tune, _ := json.Marshal(f.tune)
	r := &replica{index: index, id: id, holder: holder, ready: make(chan struct{}), exited: make(chan struct{}),
		log: filepath.Join(f.dir, id+".log")}
	r.cmd = exec.Command(os.Args[0], "-test.run=^TestReplicaProcessChild$", "-test.count=1")
	r.cmd.Env = append(os.Environ(), replicaDSNEnv+"="+f.dsn, replicaIDEnv+"="+id, replicaHolderEnv+"="+holder,
		replicaEffectsEnv+"="+f.effects, replicaLogEnv+"="+r.log, replicaTuneEnv+"="+string(tune))
	var err error
	if r.stdin, err = r.cmd.StdinPipe(); err != nil {
		f.t.Fatal(err)
	}
	stdout, err := r.cmd.StdoutPipe()
	if err != nil {
		f.t.Fatal(err)
	}
	r.cmd.Stderr = os.Stderr
	if err := r.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	go func() {
		defer close(r.exited)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "replica: ")
			if !ok {
				continue
			}
			cmd, arg, _ := strings.Cut(line, " ")
			switch cmd {
			case "ready":
				close(r.ready)
			case "delivered":
				f.ack(r, arg)
			case "stopped":
				r.stop = line
			default: // "error …", "refused …"
				r.stop = line
				f.t.Errorf("replica %s: %s", r.id, line)
			}
		}
		r.cmd.Wait()
	}()
	select {
	case <-r.ready:
	case <-r.exited:
		f.t.Fatalf("replica %s exited before it was ready (%s)", id, r.stop)
	case <-time.After(30 * time.Second):
		f.t.Fatalf("replica %s not ready within 30s", id)
	}
	f.mu.Lock()
	f.live[index] = r
	f.all = append(f.all, r)
	f.mu.Unlock()
	return r
}

// ack records that r stored message id.
func (f *fleet) ack(r *replica, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.acked[id] = true
	if f.given[id] == r {
		delete(f.given, id)
	}
}

// deliver gives message id to a random live replica; until it acknowledges, the message is
// given again to another when that one dies.
func (f *fleet) deliver(id string) {
	f.mu.Lock()
	var up []*replica
	for _, r := range f.live {
		if r != nil {
			up = append(up, r)
		}
	}
	if len(up) == 0 {
		f.mu.Unlock()
		f.t.Errorf("no live replica to deliver %s to", id)
		return
	}
	r := up[f.rng.IntN(len(up))]
	f.given[id] = r
	raw := f.raw[id]
	f.mu.Unlock()
	r.wmu.Lock()
	defer r.wmu.Unlock()
	// A write to a replica that is being killed fails or is lost; its kill gives the message to
	// another replica.
	fmt.Fprintf(r.stdin, "deliver %s %s\n", id, base64.StdEncoding.EncodeToString(raw))
}

// acknowledged reports whether message id was stored.
func (f *fleet) acknowledged(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked[id]
}

// outstanding is the number of deliveries not acknowledged yet.
func (f *fleet) outstanding() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.given)
}

// kill kills replica index with SIGKILL (after writing "kill <id>" to the effects file, so every
// line of the process is before it) and gives the messages it had not acknowledged to others.
func (f *fleet) kill(index int) *replica {
	f.mu.Lock()
	r := f.live[index]
	f.live[index] = nil
	f.mu.Unlock()
	f.fx.line("kill", r.id)
	f.mu.Lock()
	f.killedAt[r.id] = time.Now()
	f.mu.Unlock()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		f.t.Errorf("kill %s: %v", r.id, err)
	}
	<-r.exited
	f.mu.Lock()
	var again []string
	for id, to := range f.given {
		if to == r {
			again = append(again, id)
		}
	}
	f.mu.Unlock()
	sort.Strings(again)
	for _, id := range again {
		f.deliver(id)
	}
	return r
}

// term stops replica index with SIGTERM and waits until it exited, which it must do cleanly
// ("stopped", exit status 0) within the grace period and a margin.
func (f *fleet) term(index int) *replica { return f.stop(index, false) }

// stop is term; final marks the stops at the test's end, when no replica may be left to take
// over what the stopping one gives back.
func (f *fleet) stop(index int, final bool) *replica {
	f.t.Helper()
	f.mu.Lock()
	r := f.live[index]
	f.live[index] = nil
	f.mu.Unlock()
	f.fx.line("term", r.id)
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		f.t.Fatalf("SIGTERM %s: %v", r.id, err)
	}
	select {
	case <-r.exited:
	case <-time.After(f.tune.Grace + 30*time.Second):
		f.t.Fatalf("replica %s did not stop within its grace period and 30s after SIGTERM", r.id)
	}
	if final {
		f.fx.line("exited", r.id, "final")
	} else {
		f.fx.line("exited", r.id)
	}
	if r.stop != "stopped" || r.cmd.ProcessState.ExitCode() != 0 {
		f.t.Errorf("replica %s ended with %q, exit status %d; want a clean stop", r.id, r.stop, r.cmd.ProcessState.ExitCode())
	}
	f.mu.Lock()
	var again []string
	for id, to := range f.given {
		if to == r {
			again = append(again, id)
		}
	}
	f.mu.Unlock()
	for _, id := range again {
		f.deliver(id)
	}
	return r
}

// termAll stops every live replica with SIGTERM.
func (f *fleet) termAll() {
	f.t.Helper()
	for i := range f.live {
		if f.live[i] != nil {
			f.stop(i, true)
		}
	}
}

// logStats logs how often each kind of state change was logged by all replicas together.
func (f *fleet) logStats() {
	counts := map[string]int{}
	for _, r := range f.all {
		b, err := os.ReadFile(r.log)
		if err != nil {
			continue
		}
		for _, l := range bytes.Split(b, []byte("\n")) {
			var rec struct {
				Msg string `json:"msg"`
			}
			if json.Unmarshal(l, &rec) == nil && rec.Msg != "" {
				counts[rec.Msg]++
			}
		}
	}
	var lines []string
	for msg, n := range counts {
		lines = append(lines, fmt.Sprintf("%6d  %s", n, msg))
	}
	sort.Strings(lines)
	f.t.Logf("log records of all replicas:\n%s", strings.Join(lines, "\n"))
}

// dumpLogs logs the warnings and errors of every replica's log, for a failed test.
func (f *fleet) dumpLogs() {
	for _, r := range f.all {
		b, err := os.ReadFile(r.log)
		if err != nil {
			continue
		}
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
				lines = append(lines, l)
			}
		}
		if len(lines) > 40 {
			lines = append(lines[:40], fmt.Sprintf("… and %d more", len(lines)-40))
		}
		if len(lines) > 0 {
			f.t.Logf("replica %s (%s) warnings and errors:\n%s", r.id, r.holder, strings.Join(lines, "\n"))
		}
	}
}

// testMessage is one message the parent delivers.
type testMessage struct {
	token   string // t<thread>m<n>, also the Message-ID's local part
	thread  int
	persona string
	refund  bool
	at      time.Duration // when to deliver it, from the start
}

func (m testMessage) id() string { return m.token + "@cust.example" }

// raw is the message's bytes: the thread's first message starts it, the others answer it.
func (m testMessage) raw(slow bool) []byte {
	var b strings.Builder
	subject := fmt.Sprintf("Order %d", m.thread)
	if !strings.HasSuffix(m.token, "m0") {
		subject = "Re: " + subject
	}
	fmt.Fprintf(&b, "From: Ann <ann%d@cust.example>\r\nTo: %s@acme.example\r\nSubject: %s\r\nMessage-ID: <%s>\r\n", m.thread, m.persona, subject, m.id())
	if root := fmt.Sprintf("t%dm0@cust.example", m.thread); root != m.id() {
		fmt.Fprintf(&b, "In-Reply-To: <%s>\r\nReferences: <%s>\r\n", root, root)
	}
	body := "About my order, " + m.token + "."
	if m.refund {
		body += " Please refund it."
	}
	if slow {
		body += " (slow)"
	}
	fmt.Fprintf(&b, "Date: Mon, 02 Mar 2026 10:00:00 +0000\r\n\r\n%s\r\n", body)
	return []byte(b.String())
}

// workload is the messages of a test: threads threads of perThread messages each, arriving over
// spread. Even threads are support's, odd ones sales'. Every third message asks for a refund.
// One thread in four gets its messages 2 to 4 as a burst while the run answering message 1 is
// slow, so that they are pending together.
func workload(rng *rand.Rand, threads, perThread int, spread time.Duration) []testMessage {
	var out []testMessage
	roots := spread / 5
	for th := range threads {
		persona := "support"
		if th%2 == 1 {
			persona = "sales"
		}
		rootAt := time.Duration(rng.Int64N(int64(roots)))
		burst := th%4 == 0 && perThread >= 5
		burstAt := rootAt + roots + time.Duration(rng.Int64N(int64(spread-2*roots)))
		for k := range perThread {
			m := testMessage{token: fmt.Sprintf("t%dm%d", th, k), thread: th, persona: persona, refund: (th+k)%3 == 0, at: rootAt}
			switch {
			case k == 0:
			case burst && k == 1:
				m.at = burstAt
			case burst && k <= 4:
				m.at = burstAt + 300*time.Millisecond
			default:
				m.at = rootAt + roots + time.Duration(rng.Int64N(int64(spread-roots-rootAt)))
			}
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b testMessage) int { return int(a.at - b.at) })
	return out
}

// slowToken reports whether m's run is slow: message 1 of each burst thread.
func slowToken(m testMessage, perThread int) bool {
	return m.thread%4 == 0 && perThread >= 5 && strings.HasSuffix(m.token, "m1")
}

// seed is PERSONAGEN_SERVICE_SEED, or a random seed, logged so a failure can be replayed.
func seed(t *testing.T) uint64 {
	if s := os.Getenv("PERSONAGEN_SERVICE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PERSONAGEN_SERVICE_SEED=%q: %v", s, err)
		}
		return n
	}
	n := rand.Uint64()
	t.Logf("seed %d (PERSONAGEN_SERVICE_SEED=%d replays its choices)", n, n)
	return n
}

// deliverAll delivers msgs at their times (a thread's later messages only once its first was
// stored), then delivers dup of them a second time.
func (f *fleet) deliverAll(msgs []testMessage, dups int) {
	start := time.Now()
	for _, m := range msgs {
		if d := time.Until(start.Add(m.at)); d > 0 {
			time.Sleep(d)
		}
		root := fmt.Sprintf("t%dm0@cust.example", m.thread)
		for deadline := time.Now().Add(30 * time.Second); root != m.id() && !f.acknowledged(root); {
			if time.Now().After(deadline) {
				f.t.Errorf("thread %d's first message not stored within 30s", m.thread)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
		f.deliver(m.id())
	}
	for range dups {
		f.deliver(msgs[f.randN(len(msgs))].id())
	}
}

// randN is a random number in [0, n) from the fleet's source.
func (f *fleet) randN(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rng.IntN(n)
}

// TestReplicaProcessesKilled: four replicas on one database answer 200 messages over 40 threads
// arriving while a random replica is killed every 2–4 s (see the comment at the top of the file).
func TestReplicaProcessesKilled(t *testing.T) {
	if os.Getenv(replicaDSNEnv) != "" {
		t.Skip("inside a replica process")
	}
	threads, perThread, spread, dups := 40, 5, 12*time.Second, 20
	if os.Getenv("PERSONAGEN_SOAK") == "1" {
		threads, perThread, spread, dups = 200, 10, 4*time.Minute, 200
	}
	eachDB(t, func(t *testing.T, dsn string) {
		tune := replicaTuning{Latency: 150 * time.Millisecond, ToolLatency: 100 * time.Millisecond, Lease: 3 * time.Second,
			Grace: 2 * time.Second, Workers: 8, Fires: true}
		sd := seed(t)
		f := newFleet(t, dsn, tune, sd)
		msgs := workload(rand.New(rand.NewPCG(sd, 1)), threads, perThread, spread)
		for _, m := range msgs {
			f.raw[m.id()] = m.raw(slowToken(m, perThread))
		}
		f.live = make([]*replica, 4)
		for i := range 4 {
			f.start(i, fmt.Sprintf("r%d", i))
		}
		delivered := make(chan struct{})
		go func() {
			defer close(delivered)
			f.deliverAll(msgs, dups)
		}()
		// Kill a random replica every 2–4 s until the messages are in and two more kills, and
		// restart it, alternately under its old holder and under a new one.
		kills, after := 0, 0
		for after < 2 {
			select {
			case <-delivered:
				after++
			default:
			}
			time.Sleep(2*time.Second + time.Duration(f.randN(int(2*time.Second))))
			i := f.randN(4)
			old := f.kill(i)
			kills++
			holder := old.holder
			if kills%2 == 0 {
				holder = fmt.Sprintf("r%d-%d", i, kills)
			}
			f.start(i, holder)
		}
		<-delivered
		t.Logf("%d kills; %d messages (%d delivered twice on purpose)", kills, len(msgs), dups)
		st := openStore(t, dsn)
		f.awaitSettled(st, len(msgs), 60*time.Second)
		// A fire cut off by the last kill is taken over once its lease ended, at a later tick.
		time.Sleep(tune.Lease + 2*fireEvery)
		f.termAll()
		f.logStats()
		check := f.check(st, msgs, true)
		if check.coalesced == 0 {
			t.Error("no support reply answered several messages: the bursts were never coalesced")
		}
		check.resumes(t, f, 4*(tune.Lease+claimMargin))
	})
}

// awaitSettled waits until every delivery was acknowledged, want messages are stored and no
// work is pending, failing the test after within. A reply whose send claim is held by a killed
// replica is made available at once (the claim's lease fast-forwarded: it lasts several
// minutes, see sendLease), and logged.
func (f *fleet) awaitSettled(st *store.Store, want int, within time.Duration) {
	f.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		var stored int
		if err := st.DB().GetContext(ctx, &stored, `SELECT COUNT(*) FROM messages WHERE direction = 'inbound'`); err != nil {
			f.t.Fatal(err)
		}
		c, err := st.CountPending(ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		if f.outstanding() == 0 && stored == want && c.Replies == 0 && c.Sends == 0 {
			return
		}
		f.expireDeadSends(st)
		if time.Now().After(deadline) {
			pending, _ := st.PendingReplies(ctx, "", 20)
			f.t.Fatalf("not settled within %s: %d deliveries unacknowledged, %d of %d messages stored, pending %+v: %+v",
				within, f.outstanding(), stored, want, c, pending)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// expireDeadSends ends the send claims that a killed replica took before it was killed.
func (f *fleet) expireDeadSends(st *store.Store) {
	f.mu.Lock()
	killed := map[string]time.Time{} // holder -> its latest kill
	for _, r := range f.all {
		if at, ok := f.killedAt[r.id]; ok && at.After(killed[r.holder]) {
			killed[r.holder] = at
		}
	}
	f.mu.Unlock()
	ctx := context.Background()
	for holder, at := range killed {
		// A claim lasts sendLease from when it was taken; one taken before the kill is the
		// dead process's.
		before := at.Add(sendLease).UTC()
		now := time.Now()
		q := st.DB().Rebind(`UPDATE mail_outbox SET available_at = ? WHERE holder = ? AND available_at > ? AND available_at < ? AND sent_at IS NULL`)
		res, err := st.DB().ExecContext(ctx, q, timeArg(st, now.Add(-time.Second)), holder, timeArg(st, now), timeArg(st, before))
		if err != nil {
			f.t.Fatal(err)
		}
		if n, _ := res.RowsAffected(); n > 0 {
			f.t.Logf("%d send claims of killed holder %s fast-forwarded past their %s lease", n, holder, sendLease)
		}
	}
}

// timeArg is t as the store writes it in a statement (SQLite keeps times as text).
func timeArg(st *store.Store, t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if st.Dialect() == store.DialectSQLite {
		return t.Format("2006-01-02 15:04:05.000000")
	}
	return t
}

// effectLine is one line of the effects file.
type effectLine struct {
	at   time.Time
	who  string
	what string
	args []string
}

func readEffects(t *testing.T, path string) []effectLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Only whole lines: a reader racing a writer may see the start of a line.
	text := string(b[:bytes.LastIndexByte(b, '\n')+1])
	var out []effectLine
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("effects line %q", l)
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			t.Fatalf("effects line %q: %v", l, err)
		}
		out = append(out, effectLine{at: time.Unix(0, ns), who: f[1], what: f[2], args: f[3:]})
	}
	return out
}

// cutOff is a run a replica was working on when it was killed or stopped.
type cutOff struct {
	run, by    string // the run's token and the incarnation that worked on it
	at         time.Time
	kill       bool // by a kill (else the process stopped on SIGTERM with the run cancelled)
	final      bool // by the stops at the test's end
	sameHolder bool // the replica was restarted under its holder name
	resumedBy  string
	resumedAt  time.Time
}

// checked is what check found beyond its assertions.
type checked struct {
	runs, replies, coalesced, inDoubt, resent int
	cut                                       []cutOff
	failedRuns                                map[string]bool // by the token of the message they answer
}

// check asserts the invariants of the comment at the top of the file on the store and the
// effects file, for msgs. killed says replicas were killed: a resend is then allowed after a
// kill, and a refund of unknown outcome after one; without kills neither may happen.
func (f *fleet) check(st *store.Store, msgs []testMessage, killed bool) checked {
	t := f.t
	t.Helper()
	ctx := context.Background()
	res := checked{failedRuns: map[string]bool{}}
	type row struct {
		Seq       int64  `db:"seq"`
		MessageID string `db:"message_id"`
		ThreadID  string `db:"thread_id"`
		Direction string `db:"direction"`
		Mailbox   string `db:"mailbox"`
		RunKey    string `db:"run_key"`
		Text      string `db:"text_body"`
	}
	var rows []row
	if err := st.DB().SelectContext(ctx, &rows, `SELECT seq, message_id, thread_id, direction, mailbox, COALESCE(run_key, '') AS run_key, text_body
		FROM messages ORDER BY seq`); err != nil {
		t.Fatal(err)
	}
	inbound := map[string]row{} // by token
	replyOf := map[string]row{} // by run key
	threadOf := map[int]string{}
	for _, r := range rows {
		if r.Direction == "outbound" {
			replyOf[r.RunKey] = r
			continue
		}
		tok := strings.TrimSuffix(r.MessageID, "@cust.example")
		if _, dup := inbound[tok]; dup {
			t.Errorf("message %s stored twice", r.MessageID)
		}
		inbound[tok] = r
	}
	want := map[string]testMessage{}
	for _, m := range msgs {
		want[m.token] = m
		r, ok := inbound[m.token]
		if !ok {
			t.Errorf("message %s not stored", m.id())
			continue
		}
		if r.Mailbox != m.persona {
			t.Errorf("message %s stored in mailbox %s, want %s", m.id(), r.Mailbox, m.persona)
		}
		if th, ok := threadOf[m.thread]; ok && th != r.ThreadID {
			t.Errorf("message %s in thread %s, the others of its thread in %s", m.id(), r.ThreadID, th)
		}
		threadOf[m.thread] = r.ThreadID
	}
	if len(inbound) != len(msgs) {
		t.Errorf("%d inbound messages stored, want %d", len(inbound), len(msgs))
	}
	bySeq := map[int64]string{}
	for tok, r := range inbound {
		bySeq[r.Seq] = tok
	}

	runs, err := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
	if err != nil {
		t.Fatal(err)
	}
	res.runs = len(runs)
	answeredBy := map[string][]string{} // token -> the run keys whose replies list it
	failed := map[string]store.Run{}    // token answered by a failed run
	refundOutcome := map[string]string{}
	perThread := map[string][]store.Run{}
	for _, r := range runs {
		perThread[r.ThreadID] = append(perThread[r.ThreadID], r)
	}
	for thread, rs := range perThread {
		slices.SortFunc(rs, func(a, b store.Run) int { return int(a.MessageSeq - b.MessageSeq) })
		var prev int64 // the MessageSeq of the thread's previous answered run
		for _, r := range rs {
			tok := bySeq[r.MessageSeq]
			if tok == "" || inbound[tok].ThreadID != thread {
				t.Errorf("run %s answers seq %d, not an inbound test message of its thread", r.Key, r.MessageSeq)
				continue
			}
			// The messages this run should answer: those after the previous answered run's, up
			// to its own.
			var expect []string
			for seq := prev + 1; seq <= r.MessageSeq; seq++ {
				if tk := bySeq[seq]; tk != "" && inbound[tk].ThreadID == thread {
					expect = append(expect, tk)
				}
			}
			switch r.Status {
			case store.RunSucceeded:
			case store.RunFailed:
				// A run may fail after MaxFaults cut-offs (kills); nothing else fails here.
				res.failedRuns[tok] = true
				if !killed || r.FailureClass != store.FailureCrashed {
					t.Errorf("run %s failed (%s): %s", r.Key, r.FailureClass, r.Reason)
				} else {
					t.Logf("run %s failed after %d faults: %s", r.Key, r.Faults, r.Reason)
				}
				for _, tk := range expect {
					failed[tk] = r
				}
				continue
			default:
				t.Errorf("run %s is %s (%s): %s", r.Key, r.Status, r.FailureClass, r.Reason)
				continue
			}
			rep, ok := replyOf[r.Key]
			if !ok {
				t.Errorf("run %s succeeded without a stored reply", r.Key)
				continue
			}
			res.replies++
			var listed []string
			for _, l := range strings.Split(rep.Text, "\n") {
				if rest, ok := strings.CutPrefix(l, "answered: "); ok {
					listed = strings.Fields(rest)
				}
				if rest, ok := strings.CutPrefix(l, "refunds: "); ok {
					for _, e := range strings.Fields(rest) {
						order, outcome, _ := strings.Cut(e, "=")
						refundOutcome[strings.TrimPrefix(order, "R-")] = outcome
					}
				}
			}
			for _, tk := range listed {
				answeredBy[tk] = append(answeredBy[tk], r.Key)
				delete(failed, tk)
			}
			if !slices.Equal(listed, expect) {
				t.Errorf("the reply of run %s (answering %s) lists %v; want the messages since the thread's previous answered run: %v",
					r.Key, tok, listed, expect)
			}
			if len(listed) > 1 && inbound[tok].Mailbox == "support" {
				res.coalesced++
			}
			prev = r.MessageSeq
		}
	}
	ran := map[int64]bool{}
	for _, r := range runs {
		ran[r.MessageSeq] = true
	}
	for _, m := range msgs {
		if m.persona == "sales" && !ran[inbound[m.token].Seq] {
			t.Errorf("sales message %s has no run of its own; sales answers each message with its own run", m.id())
		}
	}
	for _, m := range msgs {
		by := answeredBy[m.token]
		if _, ok := failed[m.token]; ok && len(by) == 0 {
			continue
		}
		if len(by) != 1 {
			t.Errorf("message %s answered by %d replies %v, want exactly one", m.id(), len(by), by)
		}
	}

	lines := readEffects(t, f.effects)
	// Sends: every reply sent, again only after the process that sent it was killed.
	sends := map[string][]int{} // Message-ID -> indexes of its "sent" lines
	for i, l := range lines {
		if l.what == "sent" {
			sends[l.args[0]] = append(sends[l.args[0]], i)
		}
	}
	replyIDs := map[string]bool{}
	for _, rep := range replyOf {
		replyIDs[rep.MessageID] = true
		idx := sends[rep.MessageID]
		if len(idx) == 0 {
			t.Errorf("reply %s (run %s) never sent", rep.MessageID, rep.RunKey)
		}
		for k := 0; k+1 < len(idx); k++ {
			res.resent++
			first := lines[idx[k]]
			// Killed before the next send (its kill line may even precede its own send line by
			// the microseconds the signal took to arrive).
			killedBetween := false
			for _, l := range lines[:idx[k+1]] {
				if l.who == "parent" && l.what == "kill" && l.args[0] == first.who {
					killedBetween = true
				}
			}
			if !killed || !killedBetween {
				t.Errorf("reply %s sent by %s and again by %s, with %s not killed in between", rep.MessageID, first.who, lines[idx[k+1]].who, first.who)
			}
		}
	}
	for id := range sends {
		if !replyIDs[id] {
			t.Errorf("%s was sent but is no stored reply", id)
		}
	}

	// Refunds: at most once per call (a call is the run's, and its id names the order);
	// "refunded" only when it ran; unknown only after a kill. A refund runs again in a later run
	// only when an earlier one failed (after MaxFaults cut-offs) with the call's outcome unknown:
	// its round is not recorded, so the later run's model cannot see it.
	refunds, calls := map[string]int{}, map[[2]string]int{}
	var runsOf = map[string][]string{}
	for _, l := range lines {
		if l.what == "refund" {
			tok := strings.TrimPrefix(l.args[0], "R-")
			refunds[tok]++
			calls[[2]string{tok, l.args[1]}]++
			runsOf[tok] = append(runsOf[tok], l.args[1])
		}
	}
	for call, n := range calls {
		if n > 1 {
			t.Errorf("the refund call of %s in run %s ran %d times", call[0], call[1], n)
		}
	}
	for _, m := range msgs {
		n, outcome := refunds[m.token], refundOutcome[m.token]
		if n > 1 {
			rs := runsOf[m.token]
			for _, run := range rs[:len(rs)-1] {
				if !res.failedRuns[run] {
					t.Errorf("refund of %s ran %d times, in runs %v, and run %s did not fail", m.token, n, rs, run)
				}
			}
			t.Logf("refund of %s ran in runs %v: the earlier failed with the call's outcome unknown", m.token, rs)
			n = 1
		}
		if !m.refund {
			if n > 0 || outcome != "" {
				t.Errorf("%s asked for no refund, but it ran %d times (reply: %q)", m.token, n, outcome)
			}
			continue
		}
		if _, ok := failed[m.token]; ok {
			continue
		}
		switch outcome {
		case "refunded":
			if n != 1 {
				t.Errorf("the reply to %s says refunded, but the refund ran %d times", m.token, n)
			}
		case "unknown":
			res.inDoubt++
			if !killed {
				t.Errorf("the refund of %s is of unknown outcome (ran %d times) without a kill", m.token, n)
			}
		default:
			t.Errorf("the reply to %s asked for a refund, but its reply says %q about it", m.token, outcome)
		}
	}

	// No two runs, nor two attempts of a run, work on a thread at once; what a process was
	// working on when it was killed or exited is resumed by another.
	open := map[string]map[[2]string]int{} // thread -> {who, run} -> open brackets
	gone := map[string]bool{}              // incarnations killed or exited
	sameHolder := map[string]bool{}        // incarnation -> restarted under its holder name
	for i, r := range f.all {
		for _, o := range f.all[i+1:] {
			if o.index == r.index {
				sameHolder[r.id] = o.holder == r.holder
				break
			}
		}
	}
	cutAt := func(who string, at time.Time, kill, final bool) {
		for _, keys := range open {
			for k, n := range keys {
				if k[0] == who && n > 0 {
					res.cut = append(res.cut, cutOff{run: k[1], by: who, at: at, kill: kill, final: final, sameHolder: sameHolder[who]})
					delete(keys, k)
				}
			}
		}
	}
	finalStop := map[string]bool{} // incarnations stopped at the test's end
	for _, l := range lines {
		if l.who == "parent" && l.what == "exited" && len(l.args) > 1 && l.args[1] == "final" {
			finalStop[l.args[0]] = true
		}
	}
	for _, l := range lines {
		if gone[l.who] {
			continue // written by a killed process after its kill line
		}
		switch {
		case l.who == "parent" && (l.what == "kill" || l.what == "exited"):
			cutAt(l.args[0], l.at, l.what == "kill", len(l.args) > 1 && l.args[1] == "final")
			gone[l.args[0]] = true
		case l.what == "begin":
			thread, run := l.args[0], l.args[1]
			if open[thread] == nil {
				open[thread] = map[[2]string]int{}
			}
			for k, n := range open[thread] {
				if n > 0 && k != [2]string{l.who, run} {
					t.Errorf("thread %s: %s began work on run %s while %s worked on run %s", thread, l.who, run, k[0], k[1])
				}
			}
			open[thread][[2]string{l.who, run}]++
			for i := range res.cut {
				if c := &res.cut[i]; c.run == run && c.resumedBy == "" && l.who != c.by {
					c.resumedBy, c.resumedAt = l.who, l.at
				}
			}
		case l.what == "end":
			k := [2]string{l.who, l.args[1]}
			if open[l.args[0]][k]--; open[l.args[0]][k] < 0 {
				t.Errorf("thread %s: %s ended work on run %s it had not begun", l.args[0], l.who, l.args[1])
			}
			if len(l.args) > 3 && l.args[3] == "cancelled" && !killed {
				res.cut = append(res.cut, cutOff{run: l.args[1], by: l.who, at: l.at, final: finalStop[l.who]})
			}
		}
	}
	t.Logf("%d reply runs, %d replies (%d support replies answering several messages), %d refunds of unknown outcome, %d resends",
		res.runs, res.replies, res.coalesced, res.inDoubt, res.resent)
	if f.tune.Fires {
		f.checkFires(st, lines, killed, &res)
	}
	return res
}

// checkFires asserts the fires' invariants: every fire instant of each persona's responsibility,
// from its first run to its last, has a run; each succeeded or was skipped, or was cut off (by a
// kill or the final stop) and then failed, was abandoned, or is still running; post_digest ran
// at most once per run, exactly once when the run's answer says "posted", and of unknown
// outcome only after a kill; no run was reported finished twice.
func (f *fleet) checkFires(st *store.Store, lines []effectLine, killed bool, res *checked) {
	t := f.t
	t.Helper()
	runs, err := st.Runs(context.Background(), store.RunQuery{Kind: store.RunScheduled})
	if err != nil {
		t.Fatal(err)
	}
	cutByKill, cutByStop, cutAtEnd := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, c := range res.cut {
		switch {
		case c.kill:
			cutByKill[c.run] = true
		case c.final:
			cutAtEnd[c.run] = true
		default:
			cutByStop[c.run] = true
		}
	}
	posts, fired := map[string]int{}, map[string][]string{}
	// A fire's last worker, and how each incarnation ended: a fire whose last worker was killed
	// or stopped was cut off, between its calls too (where no call of it was open).
	lastWho, ended, finishedBy := map[string]string{}, map[string]string{}, map[string]string{}
	for _, l := range lines {
		switch l.what {
		case "post":
			posts[l.args[0]]++
			lastWho[l.args[0]] = l.who
		case "begin", "end":
			if strings.HasPrefix(l.args[1], "fire:") {
				lastWho[l.args[1]] = l.who
			}
		case "fired":
			if l.args[1] != "status=" {
				fired[l.args[0]] = append(fired[l.args[0]], strings.TrimPrefix(l.args[2], "outcome="))
				finishedBy[l.args[0]] = l.who
			}
		case "kill":
			ended[l.args[0]] = "kill"
		case "exited":
			ended[l.args[0]] = "stop"
			if len(l.args) > 1 && l.args[1] == "final" {
				ended[l.args[0]] = "final"
			}
		}
	}
	// The holders of killed incarnations: a fire claimed by one just before it was killed shows
	// no call of its own, and is abandoned once its lease expired.
	killedHolder := map[string]bool{}
	for _, r := range f.all {
		if ended[r.id] == "kill" {
			killedHolder[r.holder] = true
		}
	}
	for key, who := range lastWho {
		if finishedBy[key] == who {
			continue
		}
		switch ended[who] {
		case "kill":
			cutByKill[key] = true
		case "stop":
			cutByStop[key] = true
		case "final":
			cutAtEnd[key] = true
		}
	}
	statuses := map[store.RunStatus]int{}
	at := map[string][]time.Time{}
	handedOver := 0
	for _, c := range res.cut {
		if !c.kill && !c.final && strings.HasPrefix(c.run, "fire:") && c.resumedBy != "" {
			handedOver++
		}
	}
	for _, r := range runs {
		statuses[r.Status]++
		at[r.Persona] = append(at[r.Persona], r.FireAt)
		switch r.Status {
		case store.RunSucceeded, store.RunSkipped:
		case store.RunRunning:
			if !cutByKill[r.Key] && !cutByStop[r.Key] && !cutAtEnd[r.Key] {
				t.Errorf("fire %s is still running (lease %+v) without having been cut off", r.Key, r.Lease)
			}
		default:
			// A fire cut off by a kill is abandoned when a later fire is due before its lease
			// ended; one cut off by a stop is given back and resumed, never abandoned
			// (docs/scheduling.md).
			res.failedRuns[r.Key] = true
			switch {
			case killed && cutByKill[r.Key]:
			case killed && r.Status == store.RunAbandoned && r.Reason == schedule.ReasonLeaseExpired && killedHolder[r.Lease.Holder]:
			case r.Status == store.RunAbandoned && r.Reason == schedule.ReasonStopped && (cutByStop[r.Key] || cutAtEnd[r.Key]):
				t.Errorf("fire %s, cut off by a replica's graceful stop, was abandoned (%s) instead of handed to another replica", r.Key, r.Reason)
			default:
				t.Errorf("fire %s is %s (%s): %s", r.Key, r.Status, r.FailureClass, r.Reason)
			}
		}
		if n := posts[r.Key]; n > 1 {
			t.Errorf("post_digest of fire %s ran %d times", r.Key, n)
		}
		outcomes := fired[r.Key]
		if len(outcomes) > 1 {
			t.Errorf("fire %s reported finished %d times: %v", r.Key, len(outcomes), outcomes)
		}
		if r.Status == store.RunSucceeded && len(outcomes) > 0 {
			switch outcomes[0] {
			case "posted":
				if posts[r.Key] != 1 {
					t.Errorf("fire %s says posted, but post_digest ran %d times", r.Key, posts[r.Key])
				}
			case "unknown":
				if !killed {
					t.Errorf("fire %s posted with an unknown outcome without a kill", r.Key)
				}
			default:
				t.Errorf("fire %s succeeded answering %q", r.Key, outcomes[0])
			}
		}
	}
	for persona, ts := range at {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap != fireEvery {
				t.Errorf("%s's fires at %s and %s: %s apart, want every %s (a fire has no run)", persona,
					ts[i-1].Format(time.TimeOnly), ts[i].Format(time.TimeOnly), gap, fireEvery)
			}
		}
	}
	if statuses[store.RunSucceeded] == 0 {
		t.Error("no fire succeeded")
	}
	t.Logf("fires: %d runs, by status %v; %d given back by a replica's graceful stop and resumed by another", len(runs), statuses, handedOver)
}

// resumes asserts that every run cut off by a kill was resumed by another process within
// bound, and logs how long that took, apart for replicas restarted under their own holder name
// and under a new one.
func (c checked) resumes(t *testing.T, f *fleet, bound time.Duration) {
	t.Helper()
	var same, other []time.Duration
	for _, cut := range c.cut {
		if !cut.kill {
			continue
		}
		if cut.resumedBy == "" {
			if !c.failedRuns[cut.run] {
				t.Errorf("run %s, cut off by the kill of %s, was never resumed", cut.run, cut.by)
			}
			continue
		}
		d := cut.resumedAt.Sub(cut.at)
		if d > bound {
			t.Errorf("run %s, cut off by the kill of %s, resumed by %s only after %s (bound %s)", cut.run, cut.by, cut.resumedBy, d, bound)
		}
		if cut.sameHolder {
			same = append(same, d)
		} else {
			other = append(other, d)
		}
	}
	describe := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "none"
		}
		slices.Sort(ds)
		return fmt.Sprintf("%d, median %s, max %s", len(ds), ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	t.Logf("runs cut off by kills and resumed: restarted under the same holder: %s; under a new holder: %s", describe(same), describe(other))
}

// TestReplicaProcessesStopGracefully: replicas stopped with SIGTERM while their reply runs are
// in flight finish them within the grace period or give them back, and the others resume what
// was given back at once — long before the 60 s lease would let them — with no reply lost or
// sent twice and no refund of unknown outcome.
func TestReplicaProcessesStopGracefully(t *testing.T) {
	stopGracefully(t, false)
}

// TestReplicaProcessesStopHandsFiresOver is TestReplicaProcessesStopGracefully with the
// schedulers on: a fire still running when a replica's grace period ends is given back like a
// reply run (never recorded abandoned) and resumed by another replica at once, the same run
// with its post at most once, so a rolling restart during a fire loses no fire.
func TestReplicaProcessesStopHandsFiresOver(t *testing.T) {
	stopGracefully(t, true)
}

// stopGracefully is the graceful-stop test, with the personas' responsibilities firing when
// fires is set.
func stopGracefully(t *testing.T, fires bool) {
	if os.Getenv(replicaDSNEnv) != "" {
		t.Skip("inside a replica process")
	}
	eachDB(t, func(t *testing.T, dsn string) {
		tune := replicaTuning{Latency: 1500 * time.Millisecond, ToolLatency: 300 * time.Millisecond, Lease: time.Minute,
			Grace: 300 * time.Millisecond, Workers: 8, Fires: fires}
		sd := seed(t)
		f := newFleet(t, dsn, tune, sd)
		msgs := workload(rand.New(rand.NewPCG(sd, 1)), 12, 3, time.Second)
		for _, m := range msgs {
			f.raw[m.id()] = m.raw(false)
		}
		f.live = make([]*replica, 4)
		for i := range 4 {
			f.start(i, fmt.Sprintf("r%d", i))
		}
		delivered := make(chan struct{})
		go func() {
			defer close(delivered)
			f.deliverAll(msgs, 0)
		}()
		st := openStore(t, dsn)
		ctx := context.Background()
		for _, n := range []int{2, 1} {
			i := f.awaitWorking(n)
			r := f.live[i]
			f.term(i)
			// Nothing of the stopped replica is left held: no run lease, no claim.
			var leases, claims, sends int
			if err := st.DB().GetContext(ctx, &leases, st.DB().Rebind(`SELECT COUNT(*) FROM runs WHERE status = 'running' AND lease_holder = ?`), r.holder); err != nil {
				t.Fatal(err)
			}
			if err := st.DB().GetContext(ctx, &claims, st.DB().Rebind(`SELECT COUNT(*) FROM pending_replies WHERE holder = ?`), r.holder); err != nil {
				t.Fatal(err)
			}
			if err := st.DB().GetContext(ctx, &sends, st.DB().Rebind(`SELECT COUNT(*) FROM mail_outbox WHERE holder = ? AND available_at > ?`), r.holder, timeArg(st, time.Now())); err != nil {
				t.Fatal(err)
			}
			if leases+claims+sends != 0 {
				t.Errorf("after %s stopped it still holds %d run leases, %d reply claims, %d send claims", r.id, leases, claims, sends)
			}
		}
		<-delivered
		f.awaitSettled(st, len(msgs), 45*time.Second)
		f.termAll()
		res := f.check(st, msgs, false)
		released := 0
		for _, c := range res.cut {
			if c.kill || c.final || res.failedRuns[c.run] {
				continue
			}
			released++
			if c.resumedBy == "" {
				t.Errorf("run %s, given back by %s when it stopped, was never resumed", c.run, c.by)
			}
		}
		if released == 0 {
			t.Error("no run was cut off by a stop: the test did not stop a replica mid-run")
		}
		// The calls a stopping replica finished within its grace period.
		stopping, finished := map[string]bool{}, 0
		for _, l := range readEffects(t, f.effects) {
			switch {
			case l.who == "parent" && l.what == "term":
				stopping[l.args[0]] = true
			case stopping[l.who] && l.what == "end" && len(l.args) == 3:
				finished++
			}
		}
		t.Logf("after SIGTERM: %d model and tool calls finished within the grace period, %d model calls cancelled and resumed elsewhere", finished, released)
	})
}

// awaitWorking waits until a live replica has at least n model calls in flight and returns its
// index.
func (f *fleet) awaitWorking(n int) int {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		open := map[string]int{}
		for _, l := range readEffects(f.t, f.effects) {
			if len(l.args) > 2 && l.args[2] == "model" {
				switch l.what {
				case "begin":
					open[l.who]++
				case "end":
					open[l.who]--
				}
			}
		}
		f.mu.Lock()
		live := slices.Clone(f.live)
		f.mu.Unlock()
		for i, r := range live {
			if r != nil && open[r.id] >= n {
				return i
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.t.Fatalf("no replica had %d model calls in flight within 30s", n)
	return -1
}
