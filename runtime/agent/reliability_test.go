package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/scripted"
	"github.com/personagen/personagen/runtime/store"
)

// poisoned is a resolver that fails (or panics) for the seeded message to answer, and adds
// nothing for every other message.
func poisoned(fail func() ([]chat.Message, error)) runtime.Step {
	return runtime.Step{Kind: "use", Resolver: runtime.ResolverFunc(func(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
		if inv.Inbound != nil && inv.Inbound.MessageID == "m2@example.com" {
			return fail()
		}
		return dst, nil
	})}
}

// withStep returns p with s appended to its message chain.
func withStep(p *runtime.Persona, s runtime.Step) {
	p.MessageChain = runtime.NewChain(append(p.MessageChain.Steps(), s)...)
}

// TestEveryRunEnds delivers the message to answer three times (each after the previous
// attempt's lease, so any worker may go on) for each way a run used to stay running forever or
// pay for a model call on every retry, and for each permanent failure class: the run ends as the
// row says — its status, failure class and reason exact —, the model was called exactly as often
// as the row says (never again after a permanent failure), the non-idempotent tool ran exactly
// as often as its calls were carried out (never for an answer refused before its tools), and
// the thread's next message is answered.
func TestEveryRunEnds(t *testing.T) {
	many := make([]chat.ToolCall, store.MaxRoundCalls+1)
	for i := range many {
		many[i] = act(fmt.Sprintf("c%d", i), fmt.Sprintf("q%d", i))
	}
	composeFails := func(r *agent.Runner, p *runtime.Persona) {
		r.Compose = func(*runtime.Persona, *history.Message, string, string, time.Time) (*history.Message, error) {
			return nil, errors.New("no reply template for support")
		}
	}
	composeNil := func(r *agent.Runner, p *runtime.Persona) {
		r.Compose = func(*runtime.Persona, *history.Message, string, string, time.Time) (*history.Message, error) {
			return nil, nil
		}
	}
	composeUnsendable := func(r *agent.Runner, p *runtime.Persona) {
		r.Compose = func(p *runtime.Persona, answered *history.Message, key, text string, date time.Time) (*history.Message, error) {
			m, err := mail.NewReply(p, answered, key, text, date)
			if m != nil {
				m.Subject = "Re: a subject\r\nBcc: everyone@example.com"
			}
			return m, err
		}
	}
	refused := &chat.CallError{Provider: "anthropic", StatusCode: 401, Err: errors.New("invalid x-api-key")}
	tooLong := &chat.CallError{Provider: "anthropic", StatusCode: 400, Err: fmt.Errorf("prompt is too long: %w", chat.ErrContextWindow)}
	const runID = 1 // every row's run is the first of its fresh database
	cases := []struct {
		name   string
		turns  []scripted.Turn
		setup  func(r *agent.Runner, p *runtime.Persona)
		status store.RunStatus
		class  store.FailureClass
		reason string
		calls  int64
		acts   map[string]int // executions of act by its q
		ids    []string       // the recorded ids of round 0's calls
	}{
		{
			name:   "two calls of one id are renamed before they run",
			turns:  []scripted.Turn{scripted.Calls(act("c", "a"), act("c", "b")), scripted.Text("Done.")},
			status: store.RunSucceeded, calls: 2, acts: map[string]int{"a": 1, "b": 1}, ids: []string{"c", "c_1"},
		},
		{
			name:   "empty call ids are renamed before they run",
			turns:  []scripted.Turn{scripted.Calls(act("", "a"), act("", "b")), scripted.Text("Done.")},
			status: store.RunSucceeded, calls: 2, acts: map[string]int{"a": 1, "b": 1}, ids: []string{"call_0", "call_1"},
		},
		{
			name:   "more than 100 calls are refused before any runs, and never asked for again",
			turns:  []scripted.Turn{scripted.Calls(many...), scripted.Calls(many...), scripted.Calls(many...)},
			status: store.RunFailed, class: store.FailureInvalidAnswer,
			reason: "agent: the model's answer cannot be carried out: 101 tool calls (at most 100)",
			calls:  1, acts: map[string]int{"q0": 0, "q100": 0},
		},
		{
			name:   "a call without a tool name is refused before any call runs",
			turns:  []scripted.Turn{scripted.Calls(act("c", "a"), chat.ToolCall{ID: "d", Input: json.RawMessage(`{}`)})},
			status: store.RunFailed, class: store.FailureInvalidAnswer,
			reason: fmt.Sprintf("agent: the model's answer cannot be carried out: store: invalid value: turn 0 of run %d: call 1: tool name is empty", runID),
			calls:  1, acts: map[string]int{"a": 0},
		},
		{
			name:   "a final answer over the store's text limit is refused",
			turns:  []scripted.Turn{scripted.Text(strings.Repeat("x", store.MaxRoundTextBytes+1))},
			status: store.RunFailed, class: store.FailureInvalidAnswer,
			reason: fmt.Sprintf("agent: the model's answer cannot be carried out: store: invalid value: turn 0 of run %d: text has 262145 bytes (at most 262144)", runID),
			calls:  1,
		},
		{
			name:   "a Compose that fails ends the run after its tools ran once",
			turns:  []scripted.Turn{scripted.Calls(act("c", "a")), scripted.Text("Done.")},
			setup:  composeFails,
			status: store.RunFailed, class: store.FailureHostError,
			reason: "agent: compose the reply: no reply template for support",
			calls:  2, acts: map[string]int{"a": 1},
		},
		{
			name:   "a Compose that returns nil is an error, not a panic",
			turns:  []scripted.Turn{scripted.Calls(act("c", "a")), scripted.Text("Done.")},
			setup:  composeNil,
			status: store.RunFailed, class: store.FailureHostError,
			reason: "agent: compose the reply: Compose returned neither a message nor an error",
			calls:  2, acts: map[string]int{"a": 1},
		},
		{
			name:   "a Compose result that cannot be sent is refused before it is stored",
			turns:  []scripted.Turn{scripted.Calls(act("c", "a")), scripted.Text("Done.")},
			setup:  composeUnsendable,
			status: store.RunFailed, class: store.FailureHostError,
			reason: `agent: the reply Compose built cannot be sent: mail: render 230121ca5bdf52374dabdc76f5dc7ee0@acme.test: Subject "Re: a subject\r\nBcc: everyone@example.com" holds the control character U+000D at byte 13; a header value is one line of text`,
			calls:  2, acts: map[string]int{"a": 1},
		},
		{
			name:   "a persona without a mailbox address is refused before the first model call",
			turns:  []scripted.Turn{scripted.Calls(act("c", "a")), scripted.Text("Done.")},
			setup:  func(r *agent.Runner, p *runtime.Persona) { p.Mailbox.Address = "" },
			status: store.RunFailed, class: store.FailureHostError,
			reason: "agent: the reply cannot be composed: mail: persona has no mailbox address",
			calls:  0, acts: map[string]int{"a": 0},
		},
		{
			name:   "a permanent model call error is not sent again",
			turns:  []scripted.Turn{scripted.Fail(refused), scripted.Text("Done.")},
			status: store.RunFailed, class: store.FailureRequestRefused,
			reason: "anthropic: status 401 (permanent): invalid x-api-key",
			calls:  1,
		},
		{
			name:   "a request the adapter refuses before sending is not sent again",
			turns:  []scripted.Turn{scripted.Fail(errors.New("anthropic: temperature and top_p cannot both be set")), scripted.Text("Done.")},
			status: store.RunFailed, class: store.FailureRequestRefused,
			reason: "anthropic: temperature and top_p cannot both be set",
			calls:  1,
		},
		{
			name:   "a malformed answer fails the run",
			turns:  []scripted.Turn{scripted.Fail(fmt.Errorf("openai: %w: no choices", provider.ErrMalformedResponse)), scripted.Text("Done.")},
			status: store.RunFailed, class: store.FailureInvalidAnswer,
			reason: "openai: malformed model answer: no choices",
			calls:  1,
		},
		{
			name:   "the turn limit",
			turns:  []scripted.Turn{scripted.Calls(act("c", "a")), scripted.Text("Done.")},
			setup:  func(r *agent.Runner, p *runtime.Persona) { r.MaxTurns = 1 },
			status: store.RunFailed, class: store.FailureMaxTurns,
			reason: "agent: the run reached its turn limit without a final answer (1 model calls)",
			calls:  1, acts: map[string]int{"a": 1},
		},
		{
			name:   "no final answer",
			turns:  []scripted.Turn{scripted.Text(" ")},
			status: store.RunFailed, class: store.FailureNoAnswer,
			reason: `agent: the model gave no final answer (stop reason "end_turn", 1 characters of text)`,
			calls:  1,
		},
		{
			name:   "the context window, still exceeded after the thread was compacted",
			turns:  []scripted.Turn{scripted.Fail(tooLong), scripted.Text("Summary: Ada ordered A-17."), scripted.Fail(tooLong)},
			status: store.RunFailed, class: store.FailureContextWindow,
			reason: "anthropic: status 400 (permanent): prompt is too long: request exceeds the model's context window",
			calls:  3,
		},
		{
			name:  "a resolver's error of no known class, at the third attempt",
			turns: []scripted.Turn{scripted.Text("Done.")},
			setup: func(r *agent.Runner, p *runtime.Persona) {
				withStep(p, poisoned(func() ([]chat.Message, error) { return nil, errors.New("the CRM is down for maintenance") }))
			},
			status: store.RunFailed, class: store.FailureUnclassified,
			reason: "agent: the run faulted too often (fault 3 of 3: resolver #4 (use): the CRM is down for maintenance)",
			calls:  0,
		},
		{
			name:  "a resolver that panics, at the third attempt",
			turns: []scripted.Turn{scripted.Text("Done.")},
			setup: func(r *agent.Runner, p *runtime.Persona) {
				withStep(p, poisoned(func() ([]chat.Message, error) { panic("nil map in the CRM loader") }))
			},
			status: store.RunFailed, class: store.FailureCrashed,
			reason: "agent: the run faulted too often (fault 3 of 3: agent: the run panicked: nil map in the CRM loader)",
			calls:  0,
		},
		{
			name:   "a model adapter that panics, at the third attempt",
			turns:  slices.Repeat([]scripted.Turn{{Reply: func(*chat.Request) (*chat.Response, error) { panic("adapter bug") }}}, 3),
			status: store.RunFailed, class: store.FailureCrashed,
			reason: "agent: the run faulted too often (fault 3 of 3: agent: the run panicked: adapter bug)",
			calls:  3,
		},
		{
			name:  "a Compose that panics, at the third attempt, with the answer asked for once",
			turns: []scripted.Turn{scripted.Calls(act("c", "a")), scripted.Text("Done.")},
			setup: func(r *agent.Runner, p *runtime.Persona) {
				r.Compose = func(*runtime.Persona, *history.Message, string, string, time.Time) (*history.Message, error) {
					panic("template index out of range")
				}
			},
			status: store.RunFailed, class: store.FailureCrashed,
			reason: "agent: the run faulted too often (fault 3 of 3: agent: the run panicked: template index out of range)",
			calls:  2, acts: map[string]int{"a": 1},
		},
	}
	eachDB(t, func(t *testing.T, d *db) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d := newDB(t, d.name)
				ctx := context.Background()
				st := d.open(t)
				in := seed(t, st)
				box := newToolbox()
				m := script(c.turns...)
				p := persona(st, box.tools())
				r := runner(st, m, "w1")
				if c.setup != nil {
					c.setup(r, p)
				}
				key := agent.ReplyKey("support", mailbox, in.MessageID)
				var final *agent.RunError
				for attempt := range 3 {
					res, err := r.Reply(ctx, agent.Inbound{Persona: p, Message: in})
					var rerr *agent.RunError
					switch {
					case err == nil && c.status == store.RunSucceeded:
						if attempt == 0 && (res.Run.Status != store.RunSucceeded || res.Reply == nil) {
							t.Errorf("attempt 1 = %+v", res.Run)
						}
					case errors.As(err, &rerr) && rerr.Final:
						if final != nil {
							t.Errorf("attempt %d failed the run again: %v", attempt+1, err)
						}
						final = rerr
					case errors.As(err, &rerr):
						if rerr.Class != c.class || res.Run.Status != store.RunRunning || res.Run.Lease.Holder != "" {
							t.Errorf("attempt %d stopped with %s, run %s under %q; want a %s stop with the lease released",
								attempt+1, rerr.Class, res.Run.Status, res.Run.Lease.Holder, c.class)
						}
					case final != nil && errors.Is(err, store.ErrRunFinished):
					default:
						t.Errorf("attempt %d: %v", attempt+1, err)
					}
					d.clock.Advance(2 * time.Minute)
				}
				if c.status == store.RunFailed && (final == nil || final.Class != c.class || final.Key != key) {
					t.Errorf("no attempt returned a final %s RunError of run %q: %+v", c.class, key, final)
				}
				run, err := st.Run(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				if run.Status != c.status || run.FailureClass != c.class || run.Reason != c.reason {
					t.Errorf("run = %s, class %q, reason %q\nwant %s, class %q, reason %q", run.Status, run.FailureClass,
						run.Reason, c.status, c.class, c.reason)
				}
				if n := m.calls(); n != c.calls {
					t.Errorf("%d model calls, want %d", n, c.calls)
				}
				for q, n := range c.acts {
					if got := box.ran("act", q); got != n {
						t.Errorf("act %q ran %d times, want %d", q, got, n)
					}
				}
				if c.ids != nil {
					rounds, err := st.Rounds(ctx, store.Owner{Type: store.OwnerMessage, ID: in.Seq}, key)
					if err != nil || len(rounds) != 1 {
						t.Fatalf("rounds = %d, %v", len(rounds), err)
					}
					var ids []string
					for _, call := range rounds[0].Calls {
						ids = append(ids, call.ID)
					}
					if !slices.Equal(ids, c.ids) {
						t.Errorf("recorded call ids %q, want %q", ids, c.ids)
					}
				}
				answerNext(t, st)
			})
		}
	})
}

// TestOneReplyPerStoredMessage delivers one stored message in the ways a caller may spell it:
// each delivery that names the stored message (in full, without its mailbox, by its seq alone)
// finds the one run and its one reply; each that disagrees with the stored row is refused with
// an error naming the field, before any run; a seq that is not stored or is outbound is refused.
// The thread ends with one reply, and the model was called once.
func TestOneReplyPerStoredMessage(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newToolbox()
		m := script(scripted.Calls(act("c1", "refund")), scripted.Text("Dear Ada, your refund is on its way."),
			scripted.Calls(act("c1", "refund")), scripted.Text("a second reply"))
		p := persona(st, box.tools())
		variant := func(f func(*store.Message)) store.Message {
			v := in
			f(&v)
			return v
		}
		invalid := func(field, given, stored string) string {
			return fmt.Sprintf("agent: invalid job: reply: Inbound.Message.%s disagrees with the stored message seq %d (%s, stored %s); "+
				"leave it zero or pass the message as stored", field, in.Seq, given, stored)
		}
		for _, c := range []struct {
			name  string
			msg   store.Message
			first bool   // the delivery that runs
			err   string // the refusal, exactly
		}{
			{name: "as stored", msg: in, first: true},
			{name: "without its mailbox", msg: variant(func(m *store.Message) { m.Mailbox = "" })},
			{name: "by its seq alone", msg: store.Message{Message: history.Message{Seq: in.Seq}}},
			{name: "with the date in another zone", msg: variant(func(m *store.Message) { m.Date = m.Date.In(time.FixedZone("CET", 3600)) })},
			{name: "with the id's case changed", msg: variant(func(m *store.Message) { m.MessageID = "M2@EXAMPLE.COM" }),
				err: invalid("MessageID", `"M2@EXAMPLE.COM"`, `"m2@example.com"`)},
			{name: "in another mailbox", msg: variant(func(m *store.Message) { m.Mailbox = "sales@acme.test" }),
				err: invalid("Mailbox", `"sales@acme.test"`, `"support@acme.test"`)},
			{name: "in another thread", msg: variant(func(m *store.Message) { m.ThreadID = "t-2" }),
				err: invalid("ThreadID", `"t-2"`, `"t-1"`)},
			{name: "with another text", msg: variant(func(m *store.Message) { m.Text = "Never mind." }),
				err: invalid("Text", `"Never mind."`, `"It has not arrived. Please refund me and close my account."`)},
			{name: "with an attachment the store does not hold",
				msg: variant(func(m *store.Message) { m.Attachments = []history.Attachment{{ID: "a1", Filename: "x.pdf"}} }),
				err: fmt.Sprintf("agent: invalid job: reply: Inbound.Message.Attachments disagrees with the stored message seq %d "+
					"(1 attachments whose metadata differ from the 0 stored); leave it zero or pass the message as stored", in.Seq)},
			{name: "an outbound message", msg: store.Message{Message: history.Message{Seq: in.Seq - 1}},
				err: fmt.Sprintf("agent: invalid job: reply: message \"r1@acme.test\" (seq %d) is outbound", in.Seq-1)},
			{name: "a seq that is not stored", msg: store.Message{Message: history.Message{Seq: 999}},
				err: "agent: invalid job: reply: store: read message seq 999: store: message not found: [999]"},
			{name: "no seq", msg: variant(func(m *store.Message) { m.Seq = 0 }),
				err: "agent: invalid job: reply: Inbound.Message.Seq must name the stored message (got 0)"},
		} {
			res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: c.msg})
			switch {
			case c.err != "":
				if err == nil || err.Error() != c.err || !errors.Is(err, agent.ErrInvalidJob) {
					t.Errorf("%s: err = %v\nwant %s", c.name, err, c.err)
				}
			case err != nil:
				t.Errorf("%s: %v", c.name, err)
			case res.AlreadyFinished == c.first || res.Reply == nil || res.Reply.Text != "Dear Ada, your refund is on its way.":
				t.Errorf("%s: already finished %t, reply %+v", c.name, res.AlreadyFinished, res.Reply)
			}
		}
		runs, err := st.Runs(ctx, store.RunQuery{ThreadID: threadID})
		if err != nil || len(runs) != 1 || runs[0].Key != agent.ReplyKey("support", mailbox, in.MessageID) ||
			runs[0].Status != store.RunSucceeded || runs[0].FailureClass != "" || runs[0].Reason != "" {
			t.Errorf("runs = %+v, %v; want the one run, succeeded", runs, err)
		}
		if thread, _ := st.Thread(ctx, threadID); len(thread) != 4 {
			t.Errorf("thread has %d messages, want the 3 seeded and one reply", len(thread))
		}
		if m.calls() != 2 || box.ran("act", "refund") != 1 {
			t.Errorf("%d model calls, act ran %d times; want 2 and 1", m.calls(), box.ran("act", "refund"))
		}
		answerNext(t, st)
	})
}

// restartRunner is a Runner with the runner's default lease and holder (unless holder is set),
// on its own connection to d.
func restartRunner(t *testing.T, d *db, m chat.Model, holder string) (*agent.Runner, *store.Store) {
	st := d.open(t)
	return &agent.Runner{Store: st, Model: m, Holder: holder, Logger: quiet,
		Now: func() time.Time { return time.Date(2026, 3, 6, 15, 0, 0, 0, time.UTC) }}, st
}

// TestRestartsResumeWithinTheLease cuts a run off after its first round was recorded — the
// worker dies (its store closes, nothing is released), or stops gracefully (its ctx is
// cancelled) — and resumes it with a restarted or another worker, on the default 30 s lease: a
// worker the host names resumes its own run at once, a default-named one after the lease and
// not before, and after a graceful stop any worker at once. The resumed run replays the round
// (act ran once), calls the model once more, and replies once.
func TestRestartsResumeWithinTheLease(t *testing.T) {
	if agent.DefaultLeaseFor != 30*time.Second {
		t.Fatalf("DefaultLeaseFor = %v, want 30s", agent.DefaultLeaseFor)
	}
	cases := []struct {
		name            string
		holder, resumer string        // "" = the default name
		graceful        bool          // the first worker's ctx is cancelled instead of its store closed
		early, wait     time.Duration // a resume at early is refused; one at wait succeeds
		faults          int
	}{
		{name: "a worker the host names resumes its own run at once after a restart", holder: "replica-1", resumer: "replica-1",
			faults: 1},
		{name: "a default-named worker's run resumes after the 30 s lease, not before",
			early: 29 * time.Second, wait: 31 * time.Second, faults: 1},
		{name: "a graceful stop releases the lease: another worker resumes at once", holder: "replica-1", resumer: "replica-2",
			graceful: true},
	}
	eachDB(t, func(t *testing.T, d *db) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d := newDB(t, d.name)
				ctx := context.Background()
				box := newToolbox()
				first := script(scripted.Calls(act("c1", "a")), scripted.Text("unused"))
				r1, st1 := restartRunner(t, d, first, c.holder)
				in := seed(t, st1)
				ctx1, cancel := context.WithCancel(ctx)
				defer cancel()
				agent.SetHook(r1, func(point string) error {
					if point != "record:0" {
						return nil
					}
					if c.graceful {
						cancel()
						return nil
					}
					st1.Close()
					return errCrash
				})
				_, err := r1.Reply(ctx1, agent.Inbound{Persona: persona(st1, box.tools()), Message: in})
				var rerr *agent.RunError
				if c.graceful && (!errors.As(err, &rerr) || rerr.Class != store.FailureShutdown || rerr.Final) {
					t.Fatalf("graceful stop: %v, want a shutdown stop", err)
				}
				second := script(scripted.Text("Dear Ada, done."))
				if c.early > 0 {
					d.clock.Advance(c.early)
					r2, st2 := restartRunner(t, d, second, c.resumer)
					if _, err := r2.Reply(ctx, agent.Inbound{Persona: persona(st2, box.tools()), Message: in}); !errors.Is(err, store.ErrLeaseHeld) {
						t.Errorf("resume %v after the crash: %v, want ErrLeaseHeld", c.early, err)
					}
					d.clock.Advance(c.wait - c.early)
				}
				r2, st2 := restartRunner(t, d, second, c.resumer)
				res, err := r2.Reply(ctx, agent.Inbound{Persona: persona(st2, box.tools()), Message: in})
				if err != nil || res.Run.Status != store.RunSucceeded || res.Replayed != 1 || res.Text != "Dear Ada, done." {
					t.Fatalf("resume: %v (%+v)", err, res)
				}
				if res.Run.Attempt != 2 || res.Run.Faults != c.faults {
					t.Errorf("run attempt %d, faults %d; want 2, %d", res.Run.Attempt, res.Run.Faults, c.faults)
				}
				if n := box.ran("act", "a"); n != 1 {
					t.Errorf("act ran %d times, want 1", n)
				}
				if first.calls() != 1 || second.calls() != 1 {
					t.Errorf("model calls %d then %d, want 1 then 1", first.calls(), second.calls())
				}
				if res.Run.FailureClass != "" || res.Run.Reason != "" {
					t.Errorf("succeeded run keeps class %q, reason %q", res.Run.FailureClass, res.Run.Reason)
				}
				if thread, _ := st2.Thread(ctx, threadID); len(thread) != 4 {
					t.Errorf("thread has %d messages, want one reply", len(thread))
				}
				answerNext(t, st2)
			})
		}
	})
}

// TestTransientStopThenRecovery: a model call fails transiently (a 529) in the second turn.
// The attempt stops with the error, its class and no retry time recorded and the lease released
// in one statement; the thread's next message meanwhile gets a BusyError saying the run is
// resumable now; the next Reply, on another worker at once, resumes the run: the recorded round
// is replayed, not run again, and the model is asked only for the turn that failed.
func TestTransientStopThenRecovery(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newToolbox()
		overloaded := &chat.CallError{Provider: "anthropic", StatusCode: 529, Transient: true, Err: errors.New("overloaded")}
		m := script(scripted.Calls(act("c1", "a")), scripted.Fail(overloaded), scripted.Text("Dear Ada, refunded."))
		p := persona(st, box.tools())
		_, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		var rerr *agent.RunError
		if !errors.As(err, &rerr) || rerr.Final || rerr.Class != store.FailureModelUnavailable || !rerr.RetryAt.IsZero() ||
			!errors.Is(err, overloaded) {
			t.Fatalf("Reply = %v; want a model_unavailable stop, resumable now", err)
		}
		key := agent.ReplyKey("support", mailbox, in.MessageID)
		run, _ := st.Run(ctx, key)
		released := d.clock.Now().UTC().Truncate(time.Microsecond)
		if run.Status != store.RunRunning || run.FailureClass != store.FailureModelUnavailable ||
			run.Reason != "anthropic: status 529 (transient): overloaded" || !run.RetryAt.IsZero() || run.Faults != 0 ||
			run.Lease != (store.Lease{Expires: released}) {
			t.Errorf("stopped run = %+v", run)
		}
		next := appendNext(t, st)
		_, err = runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: next})
		var busy *store.BusyError
		want := fmt.Sprintf(`agent: reply to "m4@example.com": store: persona "support" already has run %q running on thread "t-1" `+
			`(resumable now: its lease was released at %s; last stop: model_unavailable)`, key, released.Format(time.RFC3339Nano))
		if !errors.As(err, &busy) || !busy.Resumable || busy.Running.Key != key || err.Error() != want {
			t.Errorf("the next message: %v\nwant %s", err, want)
		}
		res, err := runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if err != nil || res.Run.Status != store.RunSucceeded || res.Replayed != 1 || res.Text != "Dear Ada, refunded." ||
			res.Run.FailureClass != "" || res.Run.Reason != "" {
			t.Fatalf("resume: %v (%+v)", err, res)
		}
		if m.calls() != 3 || box.ran("act", "a") != 1 {
			t.Errorf("%d model calls, act ran %d times; want 3 and 1", m.calls(), box.ran("act", "a"))
		}
		res, err = runner(st, script(scripted.Text("Next answer.")), "w2").Reply(ctx, agent.Inbound{Persona: p, Message: next})
		if err != nil || res.Run.Status != store.RunSucceeded {
			t.Errorf("the next message after the run finished: %v", err)
		}
	})
}

// TestRetryAfterIsRecordedAndHonoured: a 429 asking for an hour's wait stops the attempt with
// the retry time (the store's clock plus an hour) recorded; until then Reply refuses to resume
// the run without calling the model, and a message of the thread is told the run is not
// resumable before that time; then the run resumes.
func TestRetryAfterIsRecordedAndHonoured(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		limited := &chat.CallError{Provider: "openai", StatusCode: 429, Transient: true, RetryAfter: time.Hour, Err: errors.New("rate limited")}
		m := script(scripted.Fail(limited), scripted.Text("Dear Ada, done."))
		p := persona(st, nil)
		retryAt := d.clock.Now().UTC().Truncate(time.Microsecond).Add(time.Hour)
		_, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		var rerr *agent.RunError
		if !errors.As(err, &rerr) || rerr.Final || rerr.Class != store.FailureModelUnavailable || !rerr.RetryAt.Equal(retryAt) {
			t.Fatalf("Reply = %v; want a model_unavailable stop resumable from %s", err, retryAt)
		}
		d.clock.Advance(59 * time.Minute)
		_, err = runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if !errors.As(err, &rerr) || !errors.Is(err, store.ErrRetryLater) || !rerr.RetryAt.Equal(retryAt) {
			t.Errorf("Reply before the retry time: %v, want ErrRetryLater", err)
		}
		next := appendNext(t, st)
		_, err = runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: next})
		var busy *store.BusyError
		if !errors.As(err, &busy) || busy.Resumable || !strings.Contains(err.Error(),
			"(resumable from its retry time "+retryAt.Format(time.RFC3339Nano)+"; last stop: model_unavailable)") {
			t.Errorf("the next message before the retry time: %v", err)
		}
		if m.calls() != 1 {
			t.Errorf("%d model calls before the retry time, want 1", m.calls())
		}
		d.clock.Advance(time.Minute)
		res, err := runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if err != nil || res.Run.Status != store.RunSucceeded || m.calls() != 2 {
			t.Errorf("Reply at the retry time: %v, %d model calls", err, m.calls())
		}
	})
}

// TestDeadWorkersAreFaults: a message whose model answer kills its worker (before anything is
// recorded) is resumed by the next worker — at once by a restart under the same name, after the
// lease by another — each such resume counting a fault; the resume that counts the third fault
// fails the run without calling the model, and the thread's next message is answered.
func TestDeadWorkersAreFaults(t *testing.T) {
	cases := []struct {
		name  string
		names []string
		wait  time.Duration
	}{
		{"restarts under one name", []string{"replica-1", "replica-1", "replica-1", "replica-1"}, 0},
		{"other workers after the lease", []string{"w1", "w2", "w3", "w4"}, 2 * time.Minute},
	}
	eachDB(t, func(t *testing.T, d *db) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d := newDB(t, d.name)
				ctx := context.Background()
				st := d.open(t)
				in := seed(t, st)
				m := script(slices.Repeat([]scripted.Turn{scripted.Text("Dear Ada.")}, 4)...)
				var err error
				for i, name := range c.names {
					r := runner(st, m, name)
					agent.SetHook(r, func(point string) error {
						if point == "model:0" {
							return errCrash
						}
						return nil
					})
					_, err = r.Reply(ctx, agent.Inbound{Persona: persona(st, nil), Message: in})
					if i < 3 && !errors.Is(err, errCrash) {
						t.Fatalf("worker %d: %v, want the injected crash", i+1, err)
					}
					d.clock.Advance(c.wait)
				}
				var rerr *agent.RunError
				if !errors.As(err, &rerr) || !rerr.Final || rerr.Class != store.FailureCrashed || !errors.Is(err, agent.ErrTooManyFaults) {
					t.Errorf("the fourth worker: %v, want the run failed as crashed", err)
				}
				run, _ := st.Run(ctx, agent.ReplyKey("support", mailbox, in.MessageID))
				if run.Status != store.RunFailed || run.FailureClass != store.FailureCrashed || run.Faults != 3 || run.Attempt != 4 ||
					run.Reason != "agent: the run faulted too often (fault 3 of 3: a worker died holding the run)" {
					t.Errorf("run = %s, %s, faults %d, attempt %d, reason %q", run.Status, run.FailureClass, run.Faults, run.Attempt, run.Reason)
				}
				if m.calls() != 3 {
					t.Errorf("%d model calls, want 3 (none by the fourth worker)", m.calls())
				}
				answerNext(t, st)
			})
		}
	})
}

// A Runner called twice at once for one message works on it once: the second call is refused
// while the first holds the run, though both are the same holder.
func TestOneRunnerWorksOnARunOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		release := make(chan struct{})
		entered := make(chan struct{})
		m := script(scripted.Turn{Reply: func(*chat.Request) (*chat.Response, error) {
			close(entered)
			<-release
			return &chat.Response{Message: chat.AssistantMessage("Dear Ada."), StopReason: chat.StopEndTurn}, nil
		}})
		r := runner(st, m, "replica-1")
		p := persona(st, nil)
		done := make(chan error)
		go func() {
			_, err := r.Reply(ctx, agent.Inbound{Persona: p, Message: in})
			done <- err
		}()
		<-entered
		_, err := r.Reply(ctx, agent.Inbound{Persona: p, Message: in})
		close(release)
		if !errors.Is(err, store.ErrLeaseHeld) || !strings.Contains(err.Error(), "is in progress in this Runner") {
			t.Errorf("second call: %v, want ErrLeaseHeld", err)
		}
		if err := <-done; err != nil {
			t.Errorf("first call: %v", err)
		}
		if run, _ := st.Run(ctx, agent.ReplyKey("support", mailbox, in.MessageID)); run.Status != store.RunSucceeded || run.Attempt != 1 {
			t.Errorf("run = %s, attempt %d", run.Status, run.Attempt)
		}
	})
}
