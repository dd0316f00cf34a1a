// Command demo runs the example personas end to end on a real store, through the runner
// (runtime/agent), the whole way from received email to sent reply: it ingests the example
// support thread (examples/mail) into the embedded SQLite database (or MySQL with -dsn), answers
// its newest message and the customer's follow-up, sends both replies through the outbox, and
// runs the research assistant's daily digest through the scheduler. With -eml it ingests and
// answers the .eml files named by its arguments instead. The model is scripted unless -model
// names a provider. What each run does, the flags and the -eml rules are in docs/demo.md.
//
//   - runs the support agent on the newest email: its tools execute against the example host's
//     data (an order lookup and a help-center search in parallel, then an escalation ticket,
//     which waits for approval: the run pauses, the demo approves the call as `personagen
//     approve` would, and the run resumes where it paused), its reply is stored in the thread,
//     and the outbox sends it (mail.Render; the demo's sender prints it) and marks it sent;
//   - ingests the customer's follow-up (examples/mail/06-customer-follow-up.eml, an answer to
//     that reply) and answers it in the same thread, whose request replays the first run's tool
//     rounds from the store, and sends that reply too;
//   - runs the research assistant's daily digest through the scheduler (runtime/schedule: one
//     Tick with a fixed clock just after the fire), with the runner as its schedule.Runner, and
//     prints the fire's status trail.
//
// With -eml it ingests the .eml files named by its arguments instead, in order, answers the last
// one that is to be answered (an auto-reply, bulk mail or the persona's own mail is stored and
// not answered) and sends the reply the same way.
//
// Each run prints as its whole conversation in the transcript format (the request, the tool
// rounds, the answer), or everything as JSON with -json. The model is scripted unless -model
// names a provider: then the real SDK adapter is used with its standard environment variables
// (ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; OPENAI_API_KEY and OPENAI_BASE_URL).
//
//	go run ./examples/cmd/demo
//	go run ./examples/cmd/demo -model anthropic -model-name claude-sonnet-4-5
//	go run ./examples/cmd/demo -out-eml /tmp/sent -eml examples/mail/0[1-5]*.eml
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/personagen/personagen/examples"
	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/generated"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/openai"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

const usage = `usage: demo [-dsn DSN] [-json] [-model PROVIDER [-model-name NAME]] [-out-eml DIR] [-eml FILE...]

Without -eml the demo ingests the example support thread (examples/mail/*.eml), answers its newest
message and the customer's follow-up, sends both replies, and runs the research assistant's daily
digest through the scheduler. With -eml it ingests the files named after the flags, in order, and
answers the last one that is to be answered. Flags come before the files.

`

func main() {
	var cfg config
	flag.StringVar(&cfg.dsn, "dsn", "", "store DSN; default: an in-memory SQLite database (MySQL: \"root@tcp(127.0.0.1:3306)/test\")")
	flag.BoolVar(&cfg.json, "json", false, "print the runs as JSON instead of transcripts")
	flag.StringVar(&cfg.model, "model", "", "the model: \"\" (scripted), anthropic, openai (Chat Completions) or openai-responses")
	flag.StringVar(&cfg.modelName, "model-name", "", "the model name for -model (default: "+defaultNames()+")")
	flag.StringVar(&cfg.outEML, "out-eml", "", "also write each sent reply, as rendered, to `DIR`/<Message-ID>.eml")
	flag.BoolVar(&cfg.fake, "fake", false, "send every call through the real adapter of -model (default anthropic) to an in-process cache-honest fake API that answers with the scripted answers and bills them as the provider's prompt cache would")
	flag.BoolVar(&cfg.eml, "eml", false, "ingest the .eml files named by the arguments, in order, and answer the last one to be answered")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), usage)
		flag.PrintDefaults()
	}
	flag.Parse()
	cfg.files = flag.Args()
	if err := run(context.Background(), cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	dsn       string
	json      bool
	model     string
	modelName string
	outEML    string
	eml       bool
	fake      bool
	files     []string // the arguments: the .eml files with -eml
	// now is the clock of an -eml run; nil means the real time. (The example thread runs on the
	// demo's own fixed clock.)
	now func() time.Time
}

// The demo's clock: the support agent answers on the afternoon of 6 March 2025, the customer's
// follow-up arrives at 16:10 and is answered at 16:25, the digest fires at 08:00 in Berlin on 7
// March (digestClock, 30 seconds after the fire).
var (
	replyTime    = time.Date(2025, 3, 6, 15, 2, 0, 0, time.UTC)
	followUpTime = time.Date(2025, 3, 6, 16, 25, 0, 0, time.UTC)
	digestClock  = fixedClock{time.Date(2025, 3, 7, 7, 0, 30, 0, time.UTC)}
)

// demoRun is one run as the demo prints it: the run, the persona's tools, and the replies the
// outbox sent after it.
type demoRun struct {
	Title  string
	Result *agent.Result
	Tools  []runtime.Tool
	Sent   []sentReply
	// Approvals are the calls the run waited for, with the demo operator's decisions.
	Approvals []store.Approval
}

// demo is what both modes share: the store, the clock, the host's data, the personas and the
// model.
type demo struct {
	cfg      config
	st       *store.Store
	clock    *settableClock
	env      *host.Env
	support  *runtime.Persona
	research *runtime.Persona
	model    chat.Model // nil: each run gets its own scripted model (scriptFor)
	fake     *fakeRun   // with -fake: the fake API every run's scripted answers go through
}

func run(ctx context.Context, cfg config, w io.Writer) error {
	if !cfg.eml && len(cfg.files) > 0 {
		return fmt.Errorf("unexpected arguments %q: to ingest .eml files, put -eml before them", cfg.files)
	}
	if cfg.eml && len(cfg.files) == 0 {
		return errors.New("-eml needs at least one .eml file after the flags")
	}
	var fake *fakeRun
	if cfg.fake {
		if cfg.model == "" {
			cfg.model = provider.Anthropic
		}
		f, err := newFakeRun(cfg.model)
		if err != nil {
			return err
		}
		defer f.srv.Close()
		fake = f
	}
	model, err := newModel(cfg)
	if err != nil {
		return err
	}
	if fake != nil {
		model = nil // the scripted answers go through the fake (runner)
	}
	dsn := cfg.dsn
	if dsn == "" {
		dsn = ":memory:"
	}
	clock := &settableClock{now: replyTime}
	if cfg.eml {
		clock.real = cfg.now
		if clock.real == nil {
			clock.real = time.Now
		}
	}
	st, err := store.Open(ctx, dsn, store.WithClock(clock.Now))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}

	env, _ := host.ExampleEnv(ctx)
	opts := runtime.Options{Files: runtime.FSFiles(examples.Prompts), History: st}
	support, err := generated.NewSupportAgent(env, opts)
	if err != nil {
		return err
	}
	research, err := generated.NewResearchAssistant(env, opts)
	if err != nil {
		return err
	}
	if cfg.model != "" {
		for _, p := range []*runtime.Persona{support, research} {
			p.Model = settingsFor(cfg, p.Model)
		}
	}
	d := &demo{cfg: cfg, st: st, clock: clock, env: env, support: support, research: research, model: model, fake: fake}
	if cfg.eml {
		return d.runEML(ctx, w)
	}
	return d.runThread(ctx, w)
}

// personas are the personas mail is routed to.
func (d *demo) personas() []*runtime.Persona { return []*runtime.Persona{d.support, d.research} }

// runner returns the runner of one run: the demo's model, or the scripted model written for the
// message answered (key: its Message-ID) or the fire ("daily-digest"); for another message
// (answered, by persona) the scripted model answers that it has no answer written for it.
func (d *demo) runner(key string, answered *history.Message, persona *runtime.Persona) *agent.Runner {
	model := d.model
	if model == nil {
		model = scriptFor(key, answered, persona)
	}
	if d.fake != nil {
		model = d.fake.through(model)
	}
	return &agent.Runner{Store: d.st, Model: model, Holder: "demo", Logger: slog.New(slog.DiscardHandler), Now: d.clock.Now}
}

// runThread is the default demo: the example thread, its two replies and the daily digest.
func (d *demo) runThread(ctx context.Context, w io.Writer) error {
	st := d.st
	newest, ingested, err := seedThread(ctx, st, d.personas(), d.clock)
	if err != nil {
		return fmt.Errorf("the example thread: %w", err)
	}

	// 1. The support agent answers the newest email, and the outbox sends the reply.
	first, approved, err := d.reply(ctx, d.runner(newest.MessageID, nil, nil), agent.Inbound{Persona: d.support, Message: newest, CorrelationID: "demo-reply"})
	if err != nil {
		return fmt.Errorf("support-agent reply: %w", err)
	}
	sentFirst, err := sendOutbox(ctx, st, d.support, d.cfg.outEML)
	if err != nil {
		return err
	}
	// 2. The customer answers; the next run replays the first one's rounds from the store.
	d.clock.set(followUpTime)
	next, followed, err := ingestFollowUp(ctx, st, d.personas(), d.clock.Now(), first.Reply)
	if err != nil {
		return fmt.Errorf("follow-up: %w", err)
	}
	ingested = append(ingested, followed)
	second, approvedSecond, err := d.reply(ctx, d.runner(next.MessageID, nil, nil), agent.Inbound{Persona: d.support, Message: next, CorrelationID: "demo-follow-up"})
	if err != nil {
		return fmt.Errorf("support-agent follow-up: %w", err)
	}
	sentSecond, err := sendOutbox(ctx, st, d.support, d.cfg.outEML)
	if err != nil {
		return err
	}
	// 3. The research assistant's daily digest, through the scheduler.
	d.clock.set(digestClock.t)
	digest, trail, err := scheduleDigest(ctx, st, d.research, d.runner("daily-digest", nil, nil))
	if err != nil {
		return fmt.Errorf("research-assistant daily-digest through the scheduler: %w", err)
	}
	resp, _ := d.research.Responsibility("daily-digest")
	cron, err := schedule.Parse(resp.Schedule, resp.Timezone)
	if err != nil {
		return err
	}

	runs := []demoRun{
		{Title: fmt.Sprintf("support-agent answers %s (%s store)", newest.MessageID, st.Dialect()), Result: first, Tools: d.support.Tools,
			Sent: sentFirst, Approvals: approved},
		{Title: fmt.Sprintf("support-agent answers the follow-up %s: the first run's rounds are replayed from the store", next.MessageID),
			Result: second, Tools: d.support.Tools, Sent: sentSecond, Approvals: approvedSecond},
		{Title: "research-assistant: scheduled run of daily-digest (" + resp.Schedule + ", " + resp.Timezone + ")",
			Result: digest, Tools: d.research.Tools},
	}
	if d.cfg.json {
		return printJSON(w, output{Ingested: ingested, Runs: runs, Tickets: d.env.Tickets(), Trail: trail})
	}
	printIngested(w, "the example thread, examples/mail/01…05", ingested[:len(ingested)-1])
	fmt.Fprintf(w, "# recorded: the tool rounds of the runs that answered %s and %s; the thread compacted through %s\n\n",
		ingested[0].Deliveries[0].Message.MessageID, ingested[2].Deliveries[0].Message.MessageID, ingested[1].Deliveries[0].Message.MessageID)
	printRun(w, runs[0])
	fmt.Fprintln(w)
	printIngested(w, "the customer's answer to that reply", ingested[len(ingested)-1:])
	fmt.Fprintln(w)
	for _, r := range runs[1:] {
		printRun(w, r)
		fmt.Fprintln(w)
	}
	printTickets(w, d.env)
	fmt.Fprintln(w)
	printTrail(w, trail, cron.Location())
	return nil
}

// scheduleDigest runs one scheduler Tick for the research assistant at digestClock, with the
// runner as the scheduler's schedule.Runner, and returns the digest run and the daily digest's
// status trail. On a reused database the fire is already settled, so the Tick claims nothing and
// the run is read back (AlreadyFinished) instead.
func scheduleDigest(ctx context.Context, st *store.Store, research *runtime.Persona, runner *agent.Runner) (*agent.Result, []store.Run, error) {
	var digest *agent.Result
	fires := schedule.RunnerFunc(func(ctx context.Context, f schedule.Fire) (schedule.FireResult, error) {
		run := f.Run
		res, err := runner.Fire(ctx, agent.Fire{Persona: f.Persona, Responsibility: f.Responsibility.Name, At: f.At, Run: &run,
			CorrelationID: "demo-digest"})
		if res == nil {
			return schedule.FireResult{}, err
		}
		digest = res
		return schedule.FireResult{Finish: res.Finish, Text: res.Text}, err
	})
	s, err := schedule.New(st, []*runtime.Persona{research}, fires,
		schedule.WithClock(digestClock), schedule.WithHolder("demo"), schedule.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, nil, err
	}
	if err := s.Tick(ctx); err != nil {
		return nil, nil, err
	}
	trail, err := st.Runs(ctx, store.RunQuery{Persona: research.Name, Kind: store.RunScheduled, Responsibility: "daily-digest"})
	if err != nil {
		return nil, nil, err
	}
	if digest == nil && len(trail) > 0 {
		last := trail[len(trail)-1]
		digest, err = runner.Fire(ctx, agent.Fire{Persona: research, Responsibility: "daily-digest", At: last.FireAt})
	}
	if digest == nil && err == nil {
		err = errors.New("the scheduler ran no fire")
	}
	return digest, trail, err
}

// newModel returns the adapter -model names, or nil for the scripted model.
func newModel(cfg config) (chat.Model, error) {
	switch cfg.model {
	case "":
		return nil, nil
	case provider.Anthropic:
		return anthropic.New(), nil
	case provider.OpenAI:
		return openai.NewChat(), nil
	case provider.OpenAIResponses:
		return openai.NewResponses(), nil
	}
	return nil, fmt.Errorf("-model %q: want anthropic, openai or openai-responses (or nothing, for the scripted model)", cfg.model)
}

// defaultNames are the model names -model-name defaults to, by provider.
var defaultName = map[string]string{
	provider.Anthropic:       "claude-sonnet-4-5",
	provider.OpenAI:          "gpt-4.1-mini",
	provider.OpenAIResponses: "gpt-5-mini",
}

func defaultNames() string {
	return provider.Anthropic + " " + defaultName[provider.Anthropic] + ", " + provider.OpenAI + " " + defaultName[provider.OpenAI] +
		", " + provider.OpenAIResponses + " " + defaultName[provider.OpenAIResponses]
}

// settingsFor is a persona's model settings for the provider -model names: its name, the
// provider, and the persona's token budget. The other settings are written for the persona's own
// provider and may not apply to another (an adapter refuses what its provider cannot take).
func settingsFor(cfg config, s chat.ModelSettings) chat.ModelSettings {
	name := cfg.modelName
	if name == "" {
		name = defaultName[cfg.model]
	}
	return chat.ModelSettings{Name: name, Provider: cfg.model, MaxTokens: s.MaxTokens}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                         { return c.t }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// settableClock is the store's and the runner's clock: the example thread's demo moves it from
// run to run, so what it prints is the same on every run; an -eml run reads real (the real time,
// unless a test fixes it).
type settableClock struct {
	mu   sync.Mutex
	now  time.Time
	real func() time.Time
}

func (c *settableClock) Now() time.Time {
	if c.real != nil {
		return c.real()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *settableClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
