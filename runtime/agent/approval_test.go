package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/scripted"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
	"github.com/personagen/personagen/runtime/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The texts the model reads for a denied call (with the refund tool's denial note) and for an
// expired one, pinned here and in the golden requests of testdata/approval.
const (
	denyNote    = "Over the refund limit of the Team plan; offer store credit instead."
	deniedRead  = "[denied] A person reviewed this call of refund and denied it, so it did not run. The reason given: " + denyNote
	expiredRead = "[expired] This call of refund needed a person's approval, and no decision came within 3 days, so it did not run."
)

// refundBox holds the approval tests' tools: lookup (idempotent) and refund (not idempotent,
// needs approval). Each refund that runs appends a line to a file, so the count holds across
// processes.
type refundBox struct {
	log string // the side-effect file: one line per refund that ran
	mu  sync.Mutex
	// during, when set, runs inside refund after its effect (a crash mid-tool).
	during  func(ctx context.Context) error
	lookups int
}

type refundInput struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
	Reason string `json:"reason"`
}

func newRefundBox(t testing.TB) *refundBox {
	return &refundBox{log: filepath.Join(t.TempDir(), "refunds.log")}
}

// refunds counts the refunds that ran, for the call id id ("" for all).
func (b *refundBox) refunds(t testing.TB, id string) int {
	t.Helper()
	data, err := os.ReadFile(b.log)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line != "" && (id == "" || strings.HasPrefix(line, id+" ")) {
			n++
		}
	}
	return n
}

func (b *refundBox) tools() []runtime.Tool {
	lookup := tool.Must(tool.New(tool.Def{Name: "lookup", Description: "Look an order up.", Idempotent: true,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)},
		func(ctx context.Context, inv *runtime.Invocation, in query) (string, error) {
			b.mu.Lock()
			b.lookups++
			b.mu.Unlock()
			return "order " + in.Q + ": 120 EUR, paid, not delivered", nil
		}))
	refund := tool.Must(tool.New(tool.Def{Name: "refund", Description: "Refund an order; not idempotent.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"},"amount":{"type":"integer","minimum":1},` +
			`"reason":{"type":"string"}},"required":["order","amount"],"additionalProperties":false}`)},
		func(ctx context.Context, inv *runtime.Invocation, in refundInput) (string, error) {
			f, err := os.OpenFile(b.log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(f, "%s %d\n", in.Order, in.Amount)
			if err := f.Close(); err != nil {
				return "", err
			}
			if b.during != nil {
				if err := b.during(ctx); err != nil {
					return "", err
				}
			}
			return fmt.Sprintf("refunded %d EUR on %s: RF-%d", in.Amount, in.Order, in.Amount), nil
		}))
	return []runtime.Tool{lookup, refund}
}

// refundPersona is the test persona with the refund tools, refund needing approval by rule.
func refundPersona(st *store.Store, b *refundBox, rule runtime.ApprovalRule) *runtime.Persona {
	p := persona(st, b.tools())
	p.ToolRules = map[string]runtime.ToolRule{"refund": {Approval: &rule}}
	return p
}

// refundModel asks, for a request without rounds, for a lookup and the refunds (one of 120 EUR,
// and with two set one of 30 EUR too, each keyed by its order so refunds can be told apart),
// and then answers with the results it read. It records every request, encoded as JSON.
type refundModel struct {
	two bool
	// args, when set, replaces the first refund's arguments.
	args string
	mu   sync.Mutex
	reqs [][]byte
}

func (m *refundModel) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := chat.Validate(req.Messages); err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.reqs = append(m.reqs, b)
	m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var results []string
	for _, msg := range req.Messages {
		if msg.Role == chat.RoleTool {
			results = append(results, msg.Text)
		}
	}
	usage := chat.Usage{InputTokens: int64(1000 + 100*len(results)), OutputTokens: 30}
	if len(results) > 0 {
		return &chat.Response{Message: chat.AssistantMessage("Dear Ada, " + strings.Join(results, " | ")),
			StopReason: chat.StopEndTurn, Usage: usage}, nil
	}
	args := `{"order":"A-17","amount":120}`
	if m.args != "" {
		args = m.args
	}
	calls := []chat.ToolCall{
		{ID: "lk", Name: "lookup", Input: json.RawMessage(`{"q":"A-17"}`)},
		{ID: "rf1", Name: "refund", Input: json.RawMessage(args)},
	}
	if m.two {
		calls = append(calls, chat.ToolCall{ID: "rf2", Name: "refund", Input: json.RawMessage(`{"order":"B-3","amount":30}`)})
	}
	return &chat.Response{Message: chat.AssistantMessage("Let me check the order and refund it.", calls...),
		StopReason: chat.StopToolUse, Usage: usage}, nil
}

func (m *refundModel) sent() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// last is the request with the round in it: the one a resumed run sends.
func (m *refundModel) last(t testing.TB) []byte {
	t.Helper()
	reqs := m.sent()
	if len(reqs) == 0 {
		t.Fatal("no request sent")
	}
	return reqs[len(reqs)-1]
}

// golden compares got with testdata/approval/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "approval", name)
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, got, "", "  "); err != nil {
		t.Fatal(err)
	}
	pretty.WriteByte('\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(pretty.Bytes(), want) {
		t.Errorf("request differs from %s:\n got %s\nwant %s", path, pretty.Bytes(), want)
	}
}

// uninterrupted runs the refund conversation in one attempt, the decision made (decide) after
// the model asked for the refund and before the run could pause, and returns the request that
// carries the round: what every resumed run must send for that decision.
func uninterrupted(t *testing.T, d *db, rule runtime.ApprovalRule, decide func(st *store.Store, key string)) []byte {
	t.Helper()
	ctx := context.Background()
	st := d.open(t)
	in := seed(t, st)
	box := newRefundBox(t)
	m := &refundModel{}
	r := runner(st, m, "w0")
	key := agent.ReplyKey("support", in.Mailbox, in.MessageID)
	agent.SetHook(r, func(point string) error {
		if point == "started:0" {
			decide(st, key)
		}
		return nil
	})
	res, err := r.Reply(ctx, agent.Inbound{Persona: refundPersona(st, box, rule), Message: in})
	if err != nil || res.Run.Status != store.RunSucceeded {
		t.Fatalf("uninterrupted run: %v", err)
	}
	return m.last(t)
}

// pauseRefund runs the refund conversation until it pauses and checks the pause: the lookup
// ran, the refund did not, the run waits with its lease released, and the Result and the error
// name the call, its arguments, its decoded input and its deadline.
func pauseRefund(t *testing.T, st *store.Store, box *refundBox, rule runtime.ApprovalRule, m chat.Model) (store.Message, *agent.Result) {
	t.Helper()
	in := seed(t, st)
	res, err := runner(st, m, "w1").Reply(context.Background(), agent.Inbound{Persona: refundPersona(st, box, rule), Message: in})
	var we *store.WaitingError
	if !errors.As(err, &we) || !errors.Is(err, store.ErrWaiting) {
		t.Fatalf("Reply = %v, want a *store.WaitingError", err)
	}
	if res == nil || res.Run.Status != store.RunWaiting || res.Run.Lease.Holder != "" || len(res.Approvals) == 0 {
		t.Fatalf("paused result = %+v", res)
	}
	a := res.Approvals[0]
	if a.CallID != "rf1" || a.Arguments != `{"order":"A-17","amount":120}` || a.Input != `{"order":"A-17","amount":120,"reason":""}` ||
		a.Status != store.ApprovalWaiting || !res.WaitUntil.Equal(a.ExpiresAt) || a.Timeout() != rule.EffectiveTimeout() {
		t.Fatalf("waiting call = %+v (until %v)", a, res.WaitUntil)
	}
	if box.refunds(t, "") != 0 || box.lookups != 1 {
		t.Fatalf("before the decision: %d refunds, %d lookups; want 0 and 1", box.refunds(t, ""), box.lookups)
	}
	return in, res
}

// TestApprovalChildProcess is a worker process for TestRefundWaitsDaysForAnApprovalFromAnotherProcess:
// "run" answers the seeded message until the run pauses and then waits to be killed; "approve"
// approves the refund as an operator's process would.
func TestApprovalChildProcess(t *testing.T) {
	mode := os.Getenv("AGENT_APPROVAL_CHILD")
	if mode == "" {
		t.Skip("a child process of TestRefundWaitsDaysForAnApprovalFromAnotherProcess")
	}
	at, err := time.Parse(time.RFC3339Nano, os.Getenv("AGENT_APPROVAL_CLOCK"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), os.Getenv("AGENT_APPROVAL_DSN"), store.WithClock(storetest.NewClock(at).Now))
	if err != nil {
		t.Fatal(err)
	}
	switch mode {
	case "run":
		in, err := st.MessageBySeq(context.Background(), 3)
		if err != nil {
			t.Fatal(err)
		}
		box := &refundBox{log: os.Getenv("AGENT_APPROVAL_LOG")}
		r := runner(st, &refundModel{}, "w-child")
		agent.SetHook(r, func(point string) error {
			if point == "wait:0" {
				fmt.Println("paused")
				select {} // killed here
			}
			return nil
		})
		_, err = r.Reply(context.Background(), agent.Inbound{Persona: refundPersona(st, box, runtime.ApprovalRule{}), Message: in})
		fmt.Println("returned:", err)
	case "approve":
		a, out, err := st.Approve(context.Background(), os.Getenv("AGENT_APPROVAL_RUN"), "rf1", "ann@acme.example", "refund approved")
		fmt.Println("approved:", a.Status, out, err)
	}
}

// child runs TestApprovalChildProcess in mode and returns its process with its stdout lines.
func approvalChild(t *testing.T, mode string, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestApprovalChildProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), "AGENT_APPROVAL_CHILD="+mode), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, lines
}

func await(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the child exited before saying %q", prefix)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-timeout:
			t.Fatalf("the child did not say %q", prefix)
		}
	}
}

// TestRefundWaitsDaysForAnApprovalFromAnotherProcess: a worker process answers a message until
// the refund it was asked for waits for approval, and is killed (SIGKILL) while it waits. Two
// days later (a fake clock) an operator's process approves the refund; a worker that is neither
// of them resumes the run, runs the refund exactly once, and sends the request an uninterrupted
// run would have sent with the refund's result (the golden approved.json). Nothing is held while
// the run waits: the thread's later message is busy with the waiting run, and the run is not
// resumable before the decision.
func TestRefundWaitsDaysForAnApprovalFromAnotherProcess(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		approve := func(st *store.Store, key string) {
			if _, _, err := st.Approve(context.Background(), key, "rf1", "ann@acme.example", "refund approved"); err != nil {
				t.Fatal(err)
			}
		}
		want := uninterrupted(t, newDB(t, d.name), runtime.ApprovalRule{}, approve)
		golden(t, "approved.json", want)

		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newRefundBox(t)
		env := []string{"AGENT_APPROVAL_DSN=" + d.dsn, "AGENT_APPROVAL_LOG=" + box.log,
			"AGENT_APPROVAL_CLOCK=" + d.clock.Now().Format(time.RFC3339Nano)}
		worker, lines := approvalChild(t, "run", env...)
		await(t, lines, "paused")
		if err := worker.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		worker.Wait()

		key := agent.ReplyKey("support", in.Mailbox, in.MessageID)
		run, err := st.Run(ctx, key)
		if err != nil || run.Status != store.RunWaiting || run.Lease.Holder != "" {
			t.Fatalf("run after the worker was killed = %+v, %v", run, err)
		}
		// The thread waits with its run; nothing resumes it before the decision.
		next := appendNext(t, st)
		_, err = runner(st, script(), "w-next").Reply(ctx, agent.Inbound{Persona: refundPersona(st, box, runtime.ApprovalRule{}), Message: next})
		var busy *store.BusyError
		if !errors.As(err, &busy) || busy.Running.Key != key || busy.Resumable {
			t.Fatalf("Reply of the thread's next message: %v, want a *store.BusyError naming the waiting run", err)
		}
		d.clock.Advance(47 * time.Hour)
		m := &refundModel{}
		if _, err := runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: refundPersona(st, box, runtime.ApprovalRule{}), Message: in}); !errors.Is(err, store.ErrWaiting) {
			t.Fatalf("Reply before the decision: %v, want ErrWaiting", err)
		}
		if len(m.sent()) != 0 {
			t.Fatalf("a run that waits called the model %d times", len(m.sent()))
		}

		d.clock.Advance(time.Hour)
		_, lines = approvalChild(t, "approve", append(env[:len(env)-1], "AGENT_APPROVAL_RUN="+key,
			"AGENT_APPROVAL_CLOCK="+d.clock.Now().Format(time.RFC3339Nano))...)
		if line := await(t, lines, "approved:"); line != "approved: approved stored <nil>" {
			t.Fatalf("the operator's process said %q", line)
		}

		res, err := runner(d.open(t), m, "w3").Reply(ctx, agent.Inbound{Persona: refundPersona(st, box, runtime.ApprovalRule{}), Message: in})
		if err != nil || res.Run.Status != store.RunSucceeded {
			t.Fatalf("Reply after the approval: %v", err)
		}
		if n := box.refunds(t, "A-17"); n != 1 {
			t.Errorf("the refund ran %d times, want 1", n)
		}
		if reqs := m.sent(); len(reqs) != 1 || !bytes.Equal(reqs[0], want) {
			t.Errorf("the resumed run sent %d requests; the request after resuming is not the uninterrupted run's:\n got %s\nwant %s",
				len(reqs), m.last(t), want)
		}
		if !strings.Contains(res.Text, "refunded 120 EUR on A-17: RF-120") {
			t.Errorf("reply = %q", res.Text)
		}
		answerNext(t, st) // the thread is free
	})
}

// TestDeniedAndExpiredCallsGiveTheModelTheirText: a denied refund and one nobody decided for
// three days never run; the model reads the denial's reason or the timeout (pinned texts, and
// golden requests byte-equal to an uninterrupted run's). An expired call whose rule approves at
// the timeout runs once, and one whose rule reveals the approver names them.
func TestDeniedAndExpiredCallsGiveTheModelTheirText(t *testing.T) {
	deny := func(by string) func(st *store.Store, key string) {
		return func(st *store.Store, key string) {
			if _, _, err := st.Deny(context.Background(), key, "rf1", by, denyNote); err != nil {
				panic(err)
			}
		}
	}
	cases := []struct {
		name    string
		rule    runtime.ApprovalRule
		decide  func(d *db, st *store.Store, key string)
		golden  string
		read    string // what the model reads for the refund
		refunds int
	}{
		{name: "denied", decide: func(d *db, st *store.Store, key string) { deny("bob@acme.example")(st, key) },
			golden: "denied.json", read: deniedRead},
		{name: "denied, approver revealed", rule: runtime.ApprovalRule{RevealApprover: true},
			decide: func(d *db, st *store.Store, key string) { deny("bob@acme.example")(st, key) }, golden: "denied-revealed.json",
			read: strings.Replace(deniedRead, "A person", "bob@acme.example", 1)},
		{name: "expired", decide: func(d *db, st *store.Store, key string) { d.clock.Advance(72 * time.Hour) },
			golden: "expired.json", read: expiredRead},
		{name: "expired, approved at the timeout", rule: runtime.ApprovalRule{Timeout: 36 * time.Hour, OnTimeout: runtime.TimeoutApprove},
			decide: func(d *db, st *store.Store, key string) { d.clock.Advance(36 * time.Hour) }, golden: "approved.json",
			read: "refunded 120 EUR on A-17: RF-120", refunds: 1},
	}
	eachDB(t, func(t *testing.T, d *db) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d0 := newDB(t, d.name)
				want := uninterrupted(t, d0, c.rule, func(st *store.Store, key string) { c.decide(d0, st, key) })
				golden(t, c.golden, want)

				d := newDB(t, d.name)
				ctx := context.Background()
				st := d.open(t)
				box := newRefundBox(t)
				in, paused := pauseRefund(t, st, box, c.rule, &refundModel{})
				c.decide(d, st, paused.Run.Key)
				m := &refundModel{}
				res, err := runner(d.open(t), m, "w2").Reply(ctx, agent.Inbound{Persona: refundPersona(st, box, c.rule), Message: in})
				if err != nil || res.Run.Status != store.RunSucceeded {
					t.Fatalf("Reply after the decision: %v", err)
				}
				if reqs := m.sent(); len(reqs) != 1 || !bytes.Equal(reqs[0], want) {
					t.Errorf("the request after resuming is not the uninterrupted run's:\n got %s\nwant %s", m.last(t), want)
				}
				if n := box.refunds(t, ""); n != c.refunds {
					t.Errorf("the refund ran %d times, want %d", n, c.refunds)
				}
				rounds, err := st.Rounds(ctx, store.Owner{Type: store.OwnerMessage, ID: in.Seq}, res.Run.Key)
				if err != nil || len(rounds) != 1 {
					t.Fatal(rounds, err)
				}
				if got := rounds[0].Results[1]; got.Content != c.read || got.Succeeded != (c.refunds == 1) {
					t.Errorf("the refund's result = %+v\nwant %q", got, c.read)
				}
			})
		}
	})
}

// TestCallsOfOneRoundAreDecidedOneByOne: two refunds of one answer wait; deciding one leaves the
// run waiting (no model call, nothing runs); deciding the other resumes it, each with its own
// outcome.
func TestCallsOfOneRoundAreDecidedOneByOne(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		box := newRefundBox(t)
		in, paused := pauseRefund(t, st, box, runtime.ApprovalRule{}, &refundModel{two: true})
		if len(paused.Approvals) != 2 || paused.Approvals[1].CallID != "rf2" {
			t.Fatalf("waiting calls = %+v", paused.Approvals)
		}
		key := paused.Run.Key
		if _, _, err := st.Approve(ctx, key, "rf2", "ann", ""); err != nil {
			t.Fatal(err)
		}
		m := &refundModel{two: true}
		p := refundPersona(st, box, runtime.ApprovalRule{})
		res, err := runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if !errors.Is(err, store.ErrWaiting) || len(res.Approvals) != 1 || res.Approvals[0].CallID != "rf1" || len(m.sent()) != 0 || box.refunds(t, "") != 0 {
			t.Fatalf("after one decision: %v, %+v; %d model calls, %d refunds", err, res, len(m.sent()), box.refunds(t, ""))
		}
		if _, _, err := st.Deny(ctx, key, "rf1", "ann", denyNote); err != nil {
			t.Fatal(err)
		}
		if res, err = runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in}); err != nil {
			t.Fatalf("after both decisions: %v", err)
		}
		if box.refunds(t, "A-17") != 0 || box.refunds(t, "B-3") != 1 {
			t.Errorf("refunds: A-17 %d, B-3 %d; want 0 and 1", box.refunds(t, "A-17"), box.refunds(t, "B-3"))
		}
		want := "Dear Ada, order A-17: 120 EUR, paid, not delivered | " + deniedRead + " | refunded 30 EUR on B-3: RF-30"
		if res.Text != want {
			t.Errorf("reply = %q\nwant    %q", res.Text, want)
		}
	})
}

// TestRacingResumersRunTheApprovedCallOnce: after the approval, eight workers on their own
// connections answer the message at once: one resumes the run, the refund runs once, one reply.
func TestRacingResumersRunTheApprovedCallOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		box := newRefundBox(t)
		in, paused := pauseRefund(t, st, box, runtime.ApprovalRule{}, &refundModel{})
		if _, _, err := st.Approve(ctx, paused.Run.Key, "rf1", "ann", ""); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make([]error, 8)
		results := make([]*agent.Result, 8)
		m := &refundModel{}
		for i := range 8 {
			s := d.open(t)
			wg.Go(func() {
				results[i], errs[i] = runner(s, m, fmt.Sprintf("w%d", i)).Reply(ctx, agent.Inbound{Persona: refundPersona(s, box, runtime.ApprovalRule{}), Message: in})
			})
		}
		wg.Wait()
		ran := 0
		for i, err := range errs {
			switch {
			case err == nil && !results[i].AlreadyFinished:
				ran++
			case err == nil, errors.Is(err, store.ErrLeaseHeld):
			default:
				t.Errorf("worker %d: %v", i, err)
			}
		}
		if ran != 1 || box.refunds(t, "") != 1 || len(m.sent()) != 1 {
			t.Errorf("%d workers ran the run, %d refunds, %d model calls; want 1 each", ran, box.refunds(t, ""), len(m.sent()))
		}
		thread, _ := st.Thread(ctx, threadID)
		if len(thread) != 4 {
			t.Errorf("thread has %d messages, want one reply", len(thread))
		}
	})
}

// TestCrashAnywhereAfterTheApprovalRunsTheRefundAtMostOnce cuts the resumed run at every point
// it passes between the approval and the recorded round — after the resume, after the refund
// is recorded started, inside the refund after its effect, after its outcome is recorded, after
// the round, the next model call, the reply and the finish — by a panic, a cancelled context or
// a closed database connection (a killed process), then resumes it with another worker once the
// lease expired. The refund runs exactly once, except when the crash fell between its start and
// its effect: then it ran zero times; wherever the crash fell between its start and its recorded
// outcome, the model reads that its outcome is unknown and it never runs again. Every
// request after the crash is the uninterrupted run's (with the in-doubt text where the refund
// was cut off), and the thread gets one reply.
func TestCrashAnywhereAfterTheApprovalRunsTheRefundAtMostOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		approve := func(st *store.Store, key string) {
			if _, _, err := st.Approve(context.Background(), key, "rf1", "ann", ""); err != nil {
				panic(err)
			}
		}
		want := uninterrupted(t, newDB(t, d.name), runtime.ApprovalRule{}, approve)
		points := []string{"resumed", "approved:0:1", "mid-tool", "tool:0:1", "record:0", "model:1", "reply", "finish"}
		for _, point := range points {
			for _, mode := range []string{"panic", "cancel", "kill"} {
				if point == "mid-tool" && mode == "panic" {
					continue
				}
				t.Run(point+"/"+mode, func(t *testing.T) {
					d := newDB(t, d.name)
					ctx := context.Background()
					st := d.open(t)
					box := newRefundBox(t)
					in, paused := pauseRefund(t, st, box, runtime.ApprovalRule{}, &refundModel{})
					approve(st, paused.Run.Key)

					st1 := d.open(t)
					ctx1, cancel1 := context.WithCancel(ctx)
					defer cancel1()
					crash := func() {
						if mode == "cancel" {
							cancel1()
						} else {
							st1.Close()
						}
					}
					if point == "mid-tool" {
						box.during = func(ctx context.Context) error {
							crash()
							if mode == "cancel" {
								<-ctx.Done()
								return ctx.Err()
							}
							return nil
						}
					}
					r1 := runner(st1, &refundModel{}, "w1")
					agent.SetHook(r1, func(p string) error {
						if p != point {
							return nil
						}
						if mode == "panic" {
							if strings.HasPrefix(p, "tool:") || strings.HasPrefix(p, "approved:") {
								return errCrash // a tool goroutine: the attempt aborts when the round's tools returned
							}
							panic(errCrash)
						}
						crash()
						return nil
					})
					func() {
						defer func() {
							if v := recover(); v != nil && v != errCrash {
								panic(v)
							}
						}()
						r1.Reply(ctx1, agent.Inbound{Persona: refundPersona(st1, box, runtime.ApprovalRule{}), Message: in})
					}()
					box.during = nil

					d.clock.Advance(2 * time.Minute)
					st2 := d.open(t)
					m := &refundModel{}
					res, err := runner(st2, m, "w2").Reply(ctx, agent.Inbound{Persona: refundPersona(st2, box, runtime.ApprovalRule{}), Message: in})
					if err != nil || res.Run.Status != store.RunSucceeded {
						t.Fatalf("resume: %v", err)
					}
					// In doubt: a crash between the refund's start and its recorded outcome. A panic
					// at the start point aborts before the refund's effect (it never runs: 0); a
					// cancelled attempt still runs a call it marked started and records its
					// outcome (not in doubt); a closed store runs it but cannot record it.
					inDoubt := point == "mid-tool" || point == "approved:0:1" && mode != "cancel"
					wantRefunds := 1
					if point == "approved:0:1" && mode == "panic" {
						wantRefunds = 0
					}
					if n := box.refunds(t, ""); n != wantRefunds {
						t.Errorf("the refund ran %d times, want %d", n, wantRefunds)
					}
					expect := want
					if inDoubt {
						doubt, _ := json.Marshal(agent.InDoubtText("refund"))
						expect = bytes.Replace(want, []byte(`"text":"refunded 120 EUR on A-17: RF-120","tool_call_id":"rf1"}`),
							[]byte(`"text":`+string(doubt)+`,"tool_call_id":"rf1","is_error":true}`), 1)
						if res.InDoubt != 1 && !res.AlreadyFinished {
							t.Errorf("Result.InDoubt = %d, want 1", res.InDoubt)
						}
					}
					for _, req := range m.sent() {
						if !bytes.Equal(req, expect) {
							t.Errorf("a request after the crash differs from the uninterrupted run's:\n got %s\nwant %s", req, expect)
						}
					}
					thread, _ := st2.Thread(ctx, threadID)
					if len(thread) != 4 {
						t.Errorf("thread has %d messages, want one reply", len(thread))
					}
				})
			}
		}
	})
}

// TestACallThatCannotRunAsksNobody: a refund whose arguments do not match its input schema fails
// at once with the tool's input error: nothing waits, and nobody is asked.
func TestACallThatCannotRunAsksNobody(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newRefundBox(t)
		m := &refundModel{args: `{"order":"A-17","amount":-5}`}
		res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: refundPersona(st, box, runtime.ApprovalRule{}), Message: in})
		if err != nil || res.Run.Status != store.RunSucceeded {
			t.Fatalf("Reply: %v", err)
		}
		if list, err := st.Approvals(ctx, store.ApprovalQuery{}); err != nil || len(list) != 0 {
			t.Errorf("approvals = %+v, %v; want none", list, err)
		}
		want := "Dear Ada, order A-17: 120 EUR, paid, not delivered | invalid tool input for refund: the arguments do not match the input schema: at /amount: must be >= 1 but found -5"
		if res.Text != want || box.refunds(t, "") != 0 {
			t.Errorf("reply = %q (%d refunds)\nwant    %q", res.Text, box.refunds(t, ""), want)
		}
	})
}

// TestEachChainOffersOnlyItsTools: a tool limited to the reply chain is not offered to a
// scheduled run — the model does not read about it, and a call of it is refused with the
// unknown-tool result — while the reply chain offers it; a tool limited to the scheduled chain
// the other way round.
func TestEachChainOffersOnlyItsTools(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newRefundBox(t)
		p := persona(st, box.tools())
		p.ToolRules = map[string]runtime.ToolRule{
			"refund": {Chains: []runtime.ChainKind{runtime.ChainReply}},
			"lookup": {Chains: []runtime.ChainKind{runtime.ChainScheduled}},
		}
		fire := scripted.New(
			scripted.Turn{Text: "Digest: refunding.", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "refund", Input: json.RawMessage(`{"order":"A-17","amount":120}`)}}},
			scripted.Text("Digest written."),
		)
		res, err := runner(st, fire, "w1").Fire(ctx, agent.Fire{Persona: p, Responsibility: "digest", At: time.Date(2026, 3, 6, 8, 0, 0, 0, time.UTC)})
		if err != nil || res.Run.Status != store.RunSucceeded {
			t.Fatalf("Fire: %v", err)
		}
		reqs := fire.Requests()
		if got := offered(reqs[0]); !slices.Equal(got, []string{"lookup"}) {
			t.Errorf("the scheduled run offered %v, want [lookup]", got)
		}
		if got, want := reqs[1].Messages[len(reqs[1].Messages)-1].Text, `unknown tool "refund"; the tools are: lookup`; got != want {
			t.Errorf("the refused call's result = %q, want %q", got, want)
		}
		if box.refunds(t, "") != 0 {
			t.Error("a scheduled run ran a tool limited to the reply chain")
		}
		reply := scripted.New(scripted.Text("Answer."), scripted.Text("Answer."))
		if _, err := runner(st, reply, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: in}); err != nil {
			t.Fatal(err)
		}
		if got := offered(reply.Requests()[0]); !slices.Equal(got, []string{"refund"}) {
			t.Errorf("the reply run offered %v, want [refund]", got)
		}
		bad := persona(st, box.tools())
		bad.ToolRules = map[string]runtime.ToolRule{"refund": {Chains: []runtime.ChainKind{"daily"}}}
		if _, err := runner(st, reply, "w1").Reply(ctx, agent.Inbound{Persona: bad, Message: appendNext(t, st)}); !errors.Is(err, agent.ErrInvalidJob) ||
			!strings.Contains(err.Error(), `tool "refund": chain "daily"`) {
			t.Errorf("a rule of an unknown chain: %v, want ErrInvalidJob naming it", err)
		}
	})
}

// offered lists the names of the tools req offers.
func offered(req chat.Request) []string {
	var names []string
	for _, d := range req.Tools {
		names = append(names, d.Name)
	}
	return names
}

// TestAScheduledRunWaitsAndResumes: a fire the scheduler claimed pauses like a reply run (the
// Finish says waiting: nothing for the scheduler to record), and after the approval Fire without
// a claim resumes and finishes it.
func TestAScheduledRunWaitsAndResumes(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		box := newRefundBox(t)
		p := refundPersona(st, box, runtime.ApprovalRule{})
		at := time.Date(2026, 3, 6, 8, 0, 0, 0, time.UTC)
		key := "fire:support/digest/" + at.Format(time.RFC3339)
		claimed, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunScheduled, Persona: "support", Responsibility: "digest",
			FireAt: at, Holder: "sched-1", LeaseFor: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		r := runner(st, &refundModel{}, "w1")
		res, err := r.Fire(ctx, agent.Fire{Persona: p, Responsibility: "digest", At: at, Run: &claimed})
		if !errors.Is(err, store.ErrWaiting) || res.Finish.Status != store.RunWaiting || res.Run.Status != store.RunWaiting {
			t.Fatalf("claimed Fire = %+v, %v; want it waiting", res, err)
		}
		if _, _, err := st.Approve(ctx, key, "rf1", "ann", ""); err != nil {
			t.Fatal(err)
		}
		due, err := st.DueWaits(ctx, []string{"support"})
		if err != nil || len(due) != 1 || due[0].Key != key {
			t.Fatalf("DueWaits = %+v, %v", due, err)
		}
		res, err = r.Fire(ctx, agent.Fire{Persona: p, Responsibility: "digest", At: at, Key: key})
		if err != nil || res.Run.Status != store.RunSucceeded || box.refunds(t, "") != 1 {
			t.Fatalf("Fire after the approval = %v (%d refunds)", err, box.refunds(t, ""))
		}
	})
}

// TestApprovalTextsArePinned: the texts for a denial (with and without a reason, with the
// approver revealed) and a timeout (in days, hours, minutes).
func TestApprovalTextsArePinned(t *testing.T) {
	base := store.Approval{ToolName: "refund", RequestedAt: time.Date(2026, 3, 6, 0, 0, 0, 0, time.UTC)}
	with := func(f func(a *store.Approval)) store.Approval { a := base; f(&a); return a }
	for _, c := range []struct {
		name string
		a    store.Approval
		want string
	}{
		{"denied with a reason", with(func(a *store.Approval) {
			a.Status, a.DecidedBy, a.Note = store.ApprovalDenied, "bob", " "+denyNote+"\n"
		}), deniedRead},
		{"denied without a reason", with(func(a *store.Approval) { a.Status, a.DecidedBy = store.ApprovalDenied, "bob" }),
			"[denied] A person reviewed this call of refund and denied it, so it did not run. No reason was given."},
		{"denied, approver revealed", with(func(a *store.Approval) {
			a.Status, a.DecidedBy, a.RevealApprover = store.ApprovalDenied, "Bob Stone <bob@acme.example>", true
		}), "[denied] Bob Stone <bob@acme.example> reviewed this call of refund and denied it, so it did not run. No reason was given."},
		{"expired after days", with(func(a *store.Approval) {
			a.Status, a.ExpiresAt = store.ApprovalExpired, a.RequestedAt.Add(72*time.Hour)
		}), expiredRead},
		{"expired after a day", with(func(a *store.Approval) {
			a.Status, a.ExpiresAt = store.ApprovalExpired, a.RequestedAt.Add(24*time.Hour)
		}),
			"[expired] This call of refund needed a person's approval, and no decision came within 1 day, so it did not run."},
		{"expired after hours", with(func(a *store.Approval) {
			a.Status, a.ExpiresAt = store.ApprovalExpired, a.RequestedAt.Add(36*time.Hour)
		}),
			"[expired] This call of refund needed a person's approval, and no decision came within 36 hours, so it did not run."},
		{"expired after minutes", with(func(a *store.Approval) {
			a.Status, a.ExpiresAt = store.ApprovalExpired, a.RequestedAt.Add(90*time.Minute)
		}),
			"[expired] This call of refund needed a person's approval, and no decision came within 90 minutes, so it did not run."},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := agent.DecisionText(c.a); got != c.want {
				t.Errorf("text = %q\nwant   %q", got, c.want)
			}
		})
	}
}
