// Command demo runs the example personas end to end on a real store: it
// opens the embedded SQLite database (or MySQL with -dsn), applies the
// migrations, seeds a realistic support thread — an HTML-only message, an
// attachment, tool rounds recorded for earlier replies, a compaction of
// the thread's beginning — and builds two requests through the code
// generated from examples/*.persona.yaml:
//
//   - the support agent's reply to the newest inbound message, and
//   - the research assistant's scheduled daily-digest run,
//
// printing each in the transcript format (or as JSON with -json). It then
// runs the daily digest through the scheduler (runtime/schedule: one Tick
// with a fixed clock just after the fire) and prints its status trail. No
// model is called: the requests are what a model would receive.
//
//	go generate ./... && go run ./examples/cmd/demo
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/personagen/personagen/examples"
	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/generated"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transcript"
)

func main() {
	dsn := flag.String("dsn", "", "store DSN; default: an in-memory SQLite database (MySQL: \"root@tcp(127.0.0.1:3306)/test\")")
	asJSON := flag.Bool("json", false, "print the requests as JSON instead of transcripts")
	flag.Parse()
	if err := run(context.Background(), *dsn, *asJSON, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// threadID is the seeded support thread. The demo deletes it first, so a
// MySQL database can be reused between runs.
const threadID = "acme-support-1042"

func run(ctx context.Context, dsn string, asJSON bool, w io.Writer) error {
	if dsn == "" {
		dsn = ":memory:"
	}
	// The store keeps the scheduler's fixed clock, so the status trail it prints is the same on
	// every run.
	st, err := store.Open(ctx, dsn, store.WithClock(digestClock.Now))
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

	env := &host.Env{
		Accounts: map[string]host.Account{
			"lena.fischer@brightline.io": {
				Email: "lena.fischer@brightline.io", Name: "Lena Fischer", Company: "Brightline GmbH",
				Plan: "business", Seats: 24, CustomerSince: time.Date(2022, 5, 17, 0, 0, 0, 0, time.UTC), OpenTickets: 1,
			},
			"jonas.brandt@brightline.io": {
				Email: "jonas.brandt@brightline.io", Name: "Jonas Brandt (billing contact)", Company: "Brightline GmbH",
				Plan: "business", Seats: 24, CustomerSince: time.Date(2022, 5, 17, 0, 0, 0, 0, time.UTC), OpenTickets: 1,
			},
		},
		Topics: []host.Topic{
			{Name: "AI coding assistants", Keywords: []string{"code review", "agents", "IDE"}, Why: "Acme Tracker's automation roadmap competes with them."},
			{Name: "EU Data Act", Keywords: []string{"data portability", "cloud switching"}, Why: "Customers ask how to export their workspaces."},
		},
	}
	opts := runtime.Options{Files: runtime.FSFiles(examples.Prompts), History: st}

	support, err := generated.NewSupportAgent(env, opts)
	if err != nil {
		return err
	}
	reply, err := runtime.BuildRequest(ctx, &runtime.Invocation{Persona: support, CorrelationID: "demo-reply", Inbound: newest})
	if err != nil {
		return fmt.Errorf("support-agent reply: %w", err)
	}

	research, err := generated.NewResearchAssistant(env, opts)
	if err != nil {
		return err
	}
	digest, ok := research.Responsibility("daily-digest")
	if !ok {
		return errors.New("research-assistant has no daily-digest responsibility")
	}
	scheduled, err := runtime.BuildRequest(ctx, &runtime.Invocation{Persona: research, CorrelationID: "demo-digest", Responsibility: &digest})
	if err != nil {
		return fmt.Errorf("research-assistant daily-digest: %w", err)
	}

	var digestCron *schedule.Cron
	trail, err := scheduleDigest(ctx, st, research)
	if err == nil {
		digestCron, err = schedule.Parse(digest.Schedule, digest.Timezone)
	}
	if err != nil {
		return fmt.Errorf("research-assistant daily-digest through the scheduler: %w", err)
	}

	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"reply": reply, "daily_digest": scheduled, "daily_digest_trail": trailJSON(trail)})
	}
	printRequest(w, fmt.Sprintf("support-agent: reply to %s (%s store)", newest.MessageID, st.Dialect()), reply)
	fmt.Fprintln(w)
	printRequest(w, "research-assistant: scheduled run of daily-digest ("+digest.Schedule+", "+digest.Timezone+")", scheduled)
	fmt.Fprintln(w)
	printTrail(w, trail, digestCron.Location())
	return nil
}

// digestClock is the scheduler's clock in the demo: 30 seconds after the daily digest's fire
// on 7 March 2025 (08:00 in Berlin). Its timers are real, as the lease renewals need them.
var digestClock = fixedClock{time.Date(2025, 3, 7, 7, 0, 30, 0, time.UTC)}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time                         { return c.t }
func (c fixedClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// scheduleDigest runs one scheduler Tick for the research assistant at digestClock and returns
// the daily digest's status trail. The runner builds the scheduled run's request, as a runner
// does before it calls the model; no model is called. On a reused database the fire is
// already settled, so the Tick claims nothing and the trail is the same.
func scheduleDigest(ctx context.Context, st *store.Store, research *runtime.Persona) ([]store.Run, error) {
	runner := schedule.RunnerFunc(func(ctx context.Context, f schedule.Fire) (store.Finish, error) {
		// A runner sends this request to the model and runs the tools it calls.
		if _, err := runtime.BuildRequest(ctx, &runtime.Invocation{Persona: f.Persona, CorrelationID: f.Run.Key, Responsibility: &f.Responsibility}); err != nil {
			return store.Finish{}, err
		}
		return store.Finish{}, nil
	})
	s, err := schedule.New(st, []*runtime.Persona{research}, runner,
		schedule.WithClock(digestClock), schedule.WithHolder("demo"), schedule.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, err
	}
	if err := s.Tick(ctx); err != nil {
		return nil, err
	}
	return st.Runs(ctx, store.RunQuery{Persona: research.Name, Kind: store.RunScheduled, Responsibility: "daily-digest"})
}

// printTrail prints a status trail, one fire a line: scheduled instant (in the schedule's zone
// loc and in UTC), outcome, reason, actual start and finish, holder and attempt.
func printTrail(w io.Writer, trail []store.Run, loc *time.Location) {
	fmt.Fprintf(w, "# research-assistant: daily-digest through the scheduler, one Tick at %s\n", digestClock.t.Format(time.RFC3339))
	for _, r := range trail {
		fmt.Fprintf(w, "fire %s (%s)  %s", r.FireAt.In(loc).Format("2006-01-02 15:04 MST"), r.FireAt.Format(time.RFC3339), r.Status)
		if r.Reason != "" {
			fmt.Fprintf(w, " (%s)", r.Reason)
		}
		fmt.Fprintf(w, "  started %s  finished %s  holder %s  attempt %d\n",
			r.StartedAt.Format(time.RFC3339), r.FinishedAt.Format(time.RFC3339), r.Lease.Holder, r.Attempt)
	}
}

// trailJSON is the status trail as the -json output shows it.
func trailJSON(trail []store.Run) []map[string]any {
	var out []map[string]any
	for _, r := range trail {
		out = append(out, map[string]any{
			"run_key": r.Key, "fire_at": r.FireAt, "status": r.Status, "reason": r.Reason,
			"started_at": r.StartedAt, "finished_at": r.FinishedAt, "holder": r.Lease.Holder, "attempt": r.Attempt,
		})
	}
	return out
}

func printRequest(w io.Writer, title string, r *runtime.Request) {
	var tools []string
	for _, t := range r.Tools {
		tools = append(tools, t.Name())
	}
	fmt.Fprintf(w, "# %s\n# model %s, %d messages, tools: %s\n\n", title, r.Model.Name, len(r.Messages), strings.Join(tools, ", "))
	fmt.Fprint(w, transcript.Print(r.Messages))
}

// seed writes the support thread and returns the newest inbound message,
// the one the support agent answers.
func seed(ctx context.Context, st *store.Store) (*history.Message, error) {
	if err := st.DeleteThread(ctx, threadID); err != nil {
		return nil, err
	}
	at := func(day, hour, min int) time.Time { return time.Date(2025, 3, day, hour, min, 0, 0, time.UTC) }
	customer := "Lena Fischer <lena.fischer@brightline.io>"
	support := "Acme Tracker Support <support@acme.example>"
	msgs := []history.Message{
		{
			MessageID: "<c1@brightline.io>", Direction: history.Inbound, From: customer, To: []string{support},
			Subject: "Invoice INV-2025-0117 charged twice", Date: at(3, 9, 12),
			Text: "Hello,\n\nour card was charged twice for invoice INV-2025-0117 (EUR 432.00 each). Can you refund the duplicate?\n\nThanks,\nLena",
		},
		{
			MessageID: "<s1@acme.example>", Direction: history.Outbound, From: support, To: []string{customer},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(3, 9, 40),
			Text: "Hi Lena,\n\nyou are right: INV-2025-0117 was captured twice on 1 March. I have refunded the second charge of EUR 432.00; it reaches your card within 5 business days.\n\nMira, Acme Tracker Support",
		},
		{
			MessageID: "<c2@brightline.io>", Direction: history.Inbound, From: customer, To: []string{support}, Cc: []string{"Jonas Brandt <jonas.brandt@brightline.io>"},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(4, 8, 5),
			HTML: "<html><body><p>Thanks Mira, that was quick!</p><p>One more thing: can we switch to <b>annual billing</b> from April? Jonas (cc) handles our invoices from now on.</p><p>Lena</p></body></html>",
		},
		{
			MessageID: "<s2@acme.example>", Direction: history.Outbound, From: support, To: []string{customer}, Cc: []string{"Jonas Brandt <jonas.brandt@brightline.io>"},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(4, 8, 31),
			Text: "Hi Lena, hi Jonas,\n\nannual billing starts with your April renewal; the help-center article \"Switching to annual billing\" explains the pro-rated first invoice. I have added Jonas as billing contact.\n\nMira, Acme Tracker Support",
		},
		{
			MessageID: "<c3@brightline.io>", Direction: history.Inbound, From: "Jonas Brandt <jonas.brandt@brightline.io>", To: []string{support}, Cc: []string{customer},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(6, 14, 47),
			Text:        "Hi Mira,\n\nthe refund has not shown up on our statement yet (attached). Could you check whether it went out?\n\nBest,\nJonas",
			Attachments: []history.Attachment{{ID: "att-5531", Filename: "statement-2025-03.pdf", ContentType: "application/pdf", Size: 84213}},
		},
	}
	seqs := make([]int64, len(msgs))
	for i, m := range msgs {
		m.ThreadID = threadID
		a, err := st.AppendMessage(ctx, store.Message{Message: m})
		if err != nil {
			return nil, err
		}
		seqs[i] = a.Seq
	}

	// The runs that answered the first two messages called tools; their
	// rounds are recorded against the inbound message each run answered.
	rounds := []struct {
		source int
		runID  string
		turn   int
		calls  [][3]string // id, name, input JSON
		result []string
	}{
		{0, "run-0303-a", 0,
			[][3]string{{"call_01", "lookup_order", `{"number":"INV-2025-0117"}`}},
			[]string{`{"number":"INV-2025-0117","amount_eur":432.00,"status":"paid","captures":[{"at":"2025-03-01T06:00:02Z","amount_eur":432.00},{"at":"2025-03-01T06:00:03Z","amount_eur":432.00}]}`}},
		{0, "run-0303-a", 1,
			[][3]string{{"call_02", "escalate_ticket", `{"summary":"Duplicate capture on INV-2025-0117, refund EUR 432.00 within business-plan limit.","reason":"refund"}`}},
			[]string{`{"ticket":"BIL-8812","status":"refund issued"}`}},
		{2, "run-0304-b", 0,
			[][3]string{
				{"call_03", "search_help_center", `{"query":"annual billing switch"}`},
				{"call_04", "lookup_order", `{"number":"SUB-BRIGHTLINE"}`},
			},
			[]string{
				`[{"title":"Switching to annual billing","url":"https://help.acme.example/billing/annual"}]`,
				`{"plan":"business","seats":24,"renews":"2025-04-01","billing":"monthly"}`,
			}},
	}
	for _, r := range rounds {
		round := store.Round{
			Owner:   store.Owner{Type: store.OwnerMessage, ID: seqs[r.source]},
			Persona: "support-agent", RunID: r.runID, TurnIndex: r.turn,
		}
		for i, c := range r.calls {
			call, err := runtime.NewToolCall(c[0], c[1], json.RawMessage(c[2]))
			if err != nil {
				return nil, err
			}
			round.Calls = append(round.Calls, call)
			round.Results = append(round.Results, store.Result{Content: r.result[i], Succeeded: true})
		}
		if _, err := st.RecordRound(ctx, round); err != nil {
			return nil, err
		}
	}

	// The first exchange (the refund) is compacted: the summary replaces
	// it, and history replays what came after. A real host asks a model for
	// the summary; the demo's summarizer is canned.
	summarizer := runtime.SummarizerFunc(func(ctx context.Context, in runtime.SummaryInput) (string, error) {
		return "Lena Fischer (Brightline, business plan) reported a duplicate card charge for INV-2025-0117 (EUR 432.00). " +
			"Support confirmed two captures on 1 March, refunded the second one (ticket BIL-8812) and promised the money within 5 business days.", nil
	})
	if _, err := st.Compact(ctx, threadID, seqs[1], summarizer); err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}

	last := msgs[len(msgs)-1]
	last.Seq, last.ThreadID = seqs[len(seqs)-1], threadID
	return &last, nil
}
