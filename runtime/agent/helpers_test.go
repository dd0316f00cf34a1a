package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/provider/scripted"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
	"github.com/personagen/personagen/runtime/tool"
)

// db is one test database: open returns a new store (a new connection pool) on it, so a test
// can close one store as a crash would and resume on another.
type db struct {
	name  string
	dsn   string
	clock *storetest.Clock
}

// eachDB runs f on SQLite (a file) and on MariaDB (a scratch database), each fresh and migrated.
// An unreachable MariaDB skips its half, or fails it under CI=true.
func eachDB(t *testing.T, f func(t *testing.T, d *db)) {
	t.Helper()
	for _, name := range []string{"sqlite", "mysql"} {
		t.Run(name, func(t *testing.T) { f(t, newDB(t, name)) })
	}
}

func newDB(t testing.TB, name string) *db {
	t.Helper()
	d := &db{name: name, clock: storetest.NewClock(time.Date(2026, 3, 6, 14, 50, 0, 0, time.UTC))}
	if name == "sqlite" {
		d.dsn = "sqlite:" + filepath.Join(t.TempDir(), "agent.db")
	} else {
		d.dsn = storetest.MySQL(t)
	}
	st := d.open(t)
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *db) open(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), d.dsn, store.WithClock(d.clock.Now), store.WithRedact(redact))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// redact keeps the lookup tool's token out of the store, and so out of the model's requests.
func redact(tool string, kind store.PayloadKind, p string) string {
	return strings.ReplaceAll(p, "sk-secret-123", "[redacted]")
}

// longText makes search results longer than the store keeps, so they are clipped.
var longText = strings.Repeat("help ", 3500)

const (
	threadID = "t-1"
	mailbox  = "support@acme.test"
)

// seed stores a thread of an earlier exchange and the message to answer, and returns it as
// stored.
func seed(t testing.TB, st *store.Store) store.Message {
	t.Helper()
	ctx := context.Background()
	at := time.Date(2026, 3, 6, 9, 0, 0, 0, time.UTC)
	msgs := []history.Message{
		{MessageID: "m1@example.com", Direction: history.Inbound, From: "Ada <ada@example.com>", To: []string{mailbox},
			Subject: "Order A-17", Date: at, Text: "Where is my order A-17?"},
		{MessageID: "r1@acme.test", Direction: history.Outbound, From: mailbox, To: []string{"Ada <ada@example.com>"},
			Subject: "Re: Order A-17", Date: at.Add(time.Hour), Text: "It ships tomorrow."},
		{MessageID: "m2@example.com", Direction: history.Inbound, From: "Ada <ada@example.com>", To: []string{mailbox},
			Subject: "Re: Order A-17", Date: at.Add(5 * time.Hour), InReplyTo: "r1@acme.test",
			Text: "It has not arrived. Please refund me and close my account."},
	}
	var last store.Message
	for _, m := range msgs {
		m.ThreadID = threadID
		sm := store.Message{Message: m, Mailbox: mailbox}
		a, err := st.AppendMessage(ctx, sm)
		if err != nil {
			t.Fatal(err)
		}
		sm.Seq = a.Seq
		last = sm
	}
	return last
}

// toolbox holds the test tools and counts how often each call ran.
type toolbox struct {
	mu   sync.Mutex
	runs map[string]int // "tool/call id" -> executions
	// during, when set, runs inside a call of act after its effect (a crash mid-tool).
	during func(ctx context.Context, callID string) error
}

func newToolbox() *toolbox { return &toolbox{runs: map[string]int{}} }

func (b *toolbox) count(name, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs[name+"/"+id]++
}

func (b *toolbox) ran(name, id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs[name+"/"+id]
}

type query struct {
	Q string `json:"q"`
}

// callID is the id a tool reads from its context: the test tools key their counts by input.
func (b *toolbox) tools() []runtime.Tool {
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`)
	lookup := tool.Must(tool.New(tool.Def{Name: "lookup", Description: "Look a thing up.", InputSchema: schema, Idempotent: true},
		func(ctx context.Context, inv *runtime.Invocation, in query) (map[string]string, error) {
			b.count("lookup", in.Q)
			return map[string]string{"found": in.Q, "status": "shipped <on time>", "token": "sk-secret-123"}, nil
		}))
	search := tool.Must(tool.New(tool.Def{Name: "search", Description: "Search the help center.", InputSchema: schema, Idempotent: true},
		func(ctx context.Context, inv *runtime.Invocation, in query) (string, error) {
			b.count("search", in.Q)
			return "article about " + in.Q + ": " + longText, nil
		}))
	act := tool.Must(tool.New(tool.Def{Name: "act", Description: "Refund; not idempotent.", InputSchema: schema},
		func(ctx context.Context, inv *runtime.Invocation, in query) (string, error) {
			b.count("act", in.Q)
			if b.during != nil {
				if err := b.during(ctx, in.Q); err != nil {
					return "", err
				}
			}
			return "done: " + in.Q, nil
		}))
	return []runtime.Tool{lookup, search, act}
}

// persona returns the test persona: a system prompt, the thread (summary, history with tool
// rounds), and the three tools.
func persona(st *store.Store, tools []runtime.Tool) *runtime.Persona {
	p := &runtime.Persona{
		Name: "support", Description: "Test support agent.",
		Model: chat.ModelSettings{Name: "test-model", MaxTokens: 1024},
		Tools: tools,
		MessageChain: runtime.NewChain(
			runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "You answer Ada's email."}},
			runtime.Step{Kind: "thread_summary", Resolver: &runtime.ThreadSummary{Source: st}},
			runtime.Step{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: st}},
		),
		ResponsibilityChain: runtime.NewChain(
			runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "Write the morning digest.", Role: chat.RoleUser}},
		),
		Responsibilities: []runtime.Responsibility{{Name: "digest", Schedule: "0 8 * * *", Enabled: true}},
	}
	p.Mailbox.Address, p.Mailbox.Name = mailbox, "Acme Support"
	return p
}

// rounds is how many tool rounds the test model asks for before its final answer.
const rounds = 3

// model is a deterministic test model: for a request holding n rounds it asks for three
// parallel calls (lookup, search, act) of turn n, and after `rounds` rounds answers with a text
// naming the results it read. It records every request, encoded as JSON.
type model struct {
	mu       sync.Mutex
	requests [][]byte
	// fail, when set, may fail the call for a request holding n rounds.
	fail func(n int) error
}

func (m *model) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := chat.Validate(req.Messages); err != nil {
		return nil, err
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.requests = append(m.requests, b)
	m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(req.Messages) > 0 && strings.HasPrefix(req.Messages[0].Text, "You condense") {
		return &chat.Response{Message: chat.AssistantMessage("Summary: Ada ordered A-17, which was to ship."),
			StopReason: chat.StopEndTurn, Usage: chat.Usage{InputTokens: 300, OutputTokens: 12}}, nil
	}
	n := 0
	var results []string
	for _, msg := range req.Messages {
		switch msg.Role {
		case chat.RoleAssistant:
			if len(msg.ToolCalls) > 0 {
				n++
			}
		case chat.RoleTool:
			results = append(results, msg.Text)
		}
	}
	if m.fail != nil {
		if err := m.fail(n); err != nil {
			return nil, err
		}
	}
	usage := chat.Usage{InputTokens: int64(1000 + 100*n), OutputTokens: int64(20 + n), CacheReadTokens: 500}
	if n < rounds {
		calls := make([]chat.ToolCall, 3)
		for j, name := range []string{"lookup", "search", "act"} {
			id := fmt.Sprintf("t%d-%s", n, name)
			calls[j] = chat.ToolCall{ID: id, Name: name, Input: json.RawMessage(fmt.Sprintf(`{"q": "%s"}`, id))}
		}
		return &chat.Response{Message: chat.AssistantMessage(fmt.Sprintf("Round %d: checking.", n), calls...),
			StopReason: chat.StopToolUse, Usage: usage, Model: "test-model-1", ResponseID: fmt.Sprintf("resp-%d", n)}, nil
	}
	return &chat.Response{Message: chat.AssistantMessage("Dear Ada, I read: " + strings.Join(results, " | ")),
		StopReason: chat.StopEndTurn, Usage: usage, Model: "test-model-1", ResponseID: "resp-final"}, nil
}

func (m *model) sent() [][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.requests...)
}

var quiet = slog.New(slog.DiscardHandler)

// runner returns a Runner over st with the test model, a one-minute lease and holder name.
func runner(st *store.Store, m chat.Model, holder string) *agent.Runner {
	return &agent.Runner{Store: st, Model: m, Holder: holder, LeaseFor: time.Minute, Logger: quiet,
		Now: func() time.Time { return time.Date(2026, 3, 6, 15, 0, 0, 0, time.UTC) }}
}

// counting is a chat.Model that counts the calls it passes on to m.
type counting struct {
	m chat.Model
	n atomic.Int64
}

func (c *counting) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	c.n.Add(1)
	return c.m.Generate(ctx, req)
}

// calls is how many model calls c passed on.
func (c *counting) calls() int64 { return c.n.Load() }

// script is a counting scripted model.
func script(turns ...scripted.Turn) *counting { return &counting{m: scripted.New(turns...)} }

// act is a call of the test tool that is not idempotent; the toolbox counts its executions by q.
func act(id, q string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: "act", Input: json.RawMessage(fmt.Sprintf(`{"q":%q}`, q))}
}

// appendNext stores the thread's next inbound message, after everything stored in it, and
// returns it as stored.
func appendNext(t testing.TB, st *store.Store) store.Message {
	t.Helper()
	ctx := context.Background()
	thread, err := st.Thread(ctx, threadID)
	if err != nil {
		t.Fatal(err)
	}
	m := store.Message{Message: history.Message{ThreadID: threadID, MessageID: fmt.Sprintf("m%d@example.com", len(thread)+1),
		Direction: history.Inbound, From: "Ada <ada@example.com>", To: []string{mailbox}, Subject: "Re: Order A-17",
		Date: time.Date(2026, 3, 6, 16, 0, 0, 0, time.UTC), Text: "Any news?"}, Mailbox: mailbox}
	ap, err := st.AppendMessage(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	m.Seq = ap.Seq
	return m
}

// answerNext stores the thread's next message and answers it with a fresh runner and persona:
// the thread is free for it.
func answerNext(t *testing.T, st *store.Store) {
	t.Helper()
	next := appendNext(t, st)
	res, err := runner(st, script(scripted.Text("Next answer.")), "w-next").Reply(context.Background(),
		agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: next})
	if err != nil || res.Run.Status != store.RunSucceeded || res.Reply == nil || res.Reply.Text != "Next answer." {
		t.Errorf("the thread's next message is not answered: %v", err)
	}
}
