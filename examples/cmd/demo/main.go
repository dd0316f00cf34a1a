// Command demo runs the example personas end to end on a real store, through the runner
// (runtime/agent): it opens the embedded SQLite database (or MySQL with -dsn), applies the
// migrations, seeds a realistic support thread — an HTML-only message, an attachment, tool rounds
// recorded for earlier replies, a compaction of the thread's beginning — and then
//
//   - runs the support agent on the newest email: its tools execute against the example host's
//     data (an order lookup and a help-center search in parallel, then an escalation ticket), and
//     its reply is stored in the thread;
//   - answers the customer's follow-up in the same thread, whose request replays the first run's
//     tool rounds from the store;
//   - runs the research assistant's daily digest through the scheduler (runtime/schedule: one
//     Tick with a fixed clock just after the fire), with the runner as its schedule.Runner, and
//     prints the fire's status trail.
//
// Each run prints as its whole conversation in the transcript format (the request, the tool
// rounds, the answer), or everything as JSON with -json. The model is scripted unless -model
// names a provider: then the real SDK adapter is used with its standard environment variables
// (ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL; OPENAI_API_KEY and OPENAI_BASE_URL).
//
//	go generate ./... && go run ./examples/cmd/demo
//	go run ./examples/cmd/demo -model anthropic -model-name claude-sonnet-4-5
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
	"github.com/personagen/personagen/generated"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/openai"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.dsn, "dsn", "", "store DSN; default: an in-memory SQLite database (MySQL: \"root@tcp(127.0.0.1:3306)/test\")")
	flag.BoolVar(&cfg.json, "json", false, "print the runs as JSON instead of transcripts")
	flag.StringVar(&cfg.model, "model", "", "the model: \"\" (scripted), anthropic, openai (Chat Completions) or openai-responses")
	flag.StringVar(&cfg.modelName, "model-name", "", "the model name for -model (default: "+defaultNames()+")")
	flag.Parse()
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
}

// threadID is the seeded support thread. The demo deletes it first, so a MySQL database can be
// reused between runs.
const threadID = "acme-support-1042"

// The demo's clock: the support agent answers on the afternoon of 6 March 2025, the digest fires
// at 08:00 in Berlin on 7 March (digestClock, 30 seconds after the fire).
var (
	replyTime    = time.Date(2025, 3, 6, 15, 2, 0, 0, time.UTC)
	followUpTime = time.Date(2025, 3, 6, 16, 25, 0, 0, time.UTC)
	digestClock  = fixedClock{time.Date(2025, 3, 7, 7, 0, 30, 0, time.UTC)}
)

// demoRun is one run as the demo prints it.
type demoRun struct {
	Title  string         `json:"title"`
	Result *agent.Result  `json:"-"`
	Tools  []runtime.Tool `json:"-"`
}

func run(ctx context.Context, cfg config, w io.Writer) error {
	model, err := newModel(cfg)
	if err != nil {
		return err
	}
	dsn := cfg.dsn
	if dsn == "" {
		dsn = ":memory:"
	}
	clock := &settableClock{now: replyTime}
	st, err := store.Open(ctx, dsn, store.WithClock(clock.Now))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	newest, err := seed(ctx, st)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}

	env := newEnv()
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

	runner := &agent.Runner{Store: st, Model: model, Holder: "demo", Logger: slog.New(slog.DiscardHandler),
		Now: clock.Now}

	// 1. The support agent answers the newest email.
	first, err := runner.Reply(ctx, agent.Inbound{Persona: support, Message: newest, CorrelationID: "demo-reply"})
	if err != nil {
		return fmt.Errorf("support-agent reply: %w", err)
	}
	// 2. The customer answers; the next run replays the first one's rounds from the store.
	clock.set(followUpTime)
	next, err := followUp(ctx, st, first.Reply)
	if err != nil {
		return fmt.Errorf("follow-up: %w", err)
	}
	second, err := runner.Reply(ctx, agent.Inbound{Persona: support, Message: next, CorrelationID: "demo-follow-up"})
	if err != nil {
		return fmt.Errorf("support-agent follow-up: %w", err)
	}
	// 3. The research assistant's daily digest, through the scheduler.
	clock.set(digestClock.t)
	digest, trail, err := scheduleDigest(ctx, st, research, runner)
	if err != nil {
		return fmt.Errorf("research-assistant daily-digest through the scheduler: %w", err)
	}
	resp, _ := research.Responsibility("daily-digest")
	cron, err := schedule.Parse(resp.Schedule, resp.Timezone)
	if err != nil {
		return err
	}

	runs := []demoRun{
		{Title: fmt.Sprintf("support-agent answers %s (%s store)", newest.MessageID, st.Dialect()), Result: first, Tools: support.Tools},
		{Title: fmt.Sprintf("support-agent answers the follow-up %s: the first run's rounds are replayed from the store", next.MessageID),
			Result: second, Tools: support.Tools},
		{Title: "research-assistant: scheduled run of daily-digest (" + resp.Schedule + ", " + resp.Timezone + ")",
			Result: digest, Tools: research.Tools},
	}
	if cfg.json {
		return printJSON(w, runs, trail, env)
	}
	for _, r := range runs {
		printRun(w, r)
		fmt.Fprintln(w)
	}
	printTickets(w, env)
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
	fires := schedule.RunnerFunc(func(ctx context.Context, f schedule.Fire) (store.Finish, error) {
		run := f.Run
		res, err := runner.Fire(ctx, agent.Fire{Persona: f.Persona, Responsibility: f.Responsibility.Name, At: f.At, Run: &run,
			CorrelationID: "demo-digest"})
		if res == nil {
			return store.Finish{}, err
		}
		digest = res
		return res.Finish, err
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

// newModel returns the scripted model, or the adapter -model names.
func newModel(cfg config) (runtime.Model, error) {
	switch cfg.model {
	case "":
		return script(), nil
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
func settingsFor(cfg config, s runtime.ModelSettings) runtime.ModelSettings {
	name := cfg.modelName
	if name == "" {
		name = defaultName[cfg.model]
	}
	return runtime.ModelSettings{Name: name, Provider: cfg.model, MaxTokens: s.MaxTokens}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                         { return c.t }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// settableClock is the store's and the runner's clock: the demo moves it from run to run, so
// what it prints is the same on every run.
type settableClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *settableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *settableClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}
