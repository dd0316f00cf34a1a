package agent

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
	"github.com/personagen/personagen/runtime/tool"
)

// Rounds and Calls shape every run: Rounds tool rounds of Calls parallel calls, then a final
// answer. Each round calls lookup and search (idempotent) and act (not idempotent).
const (
	Rounds = 3
	Calls  = 3
)

// Persona is the name every side records its runs under.
const Persona = "bench-agent"

// System is the system prompt of every side.
const System = "You answer customer email for Acme. Look things up before answering."

// names are the tools of a round, in call order.
var names = [Calls]string{"lookup", "search", "act"}

// idempotent says which tools may run twice.
var idempotent = map[string]bool{"lookup": true, "search": true}

// Tools runs the three tools' work and counts each call, for every side alike: the result of
// a call depends on its tool and query only.
type Tools struct {
	mu   sync.Mutex
	runs map[string]int
}

// NewTools returns the tools with no call counted.
func NewTools() *Tools { return &Tools{runs: map[string]int{}} }

// Run runs tool name for query q and returns its result.
func (t *Tools) Run(name, q string) (string, error) {
	t.mu.Lock()
	t.runs[name+"/"+q]++
	t.mu.Unlock()
	switch name {
	case "lookup":
		return `{"order":"` + q + `","status":"shipped","carrier":"DHL","eta":"2025-03-08"}`, nil
	case "search":
		return `[{"title":"Where is my parcel?","url":"https://help.acme.example/` + q + `"}]`, nil
	case "act":
		return `{"ticket":"T-` + q + `","status":"open"}`, nil
	}
	return "", fmt.Errorf("no tool %q", name)
}

// Ran returns how often tool name ran for query q.
func (t *Tools) Ran(name, q string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.runs[name+"/"+q]
}

// Query is the query of the call of tool name in round n of the run answering thread.
func Query(thread string, n int, name string) string {
	return fmt.Sprintf("%s-r%d-%s", thread, n, name)
}

// CallID is the id of that call.
func CallID(n int, name string) string { return fmt.Sprintf("call_%d_%s", n, name) }

// Answer is the final answer of a run that read results.
func Answer(results []string) string {
	return "Dear customer, here is what I found: " + strings.Join(results, "; ")
}

type query struct {
	Q string `json:"q"`
}

const schemaQ = `{"type":"object","properties":{"q":{"type":"string"}},"required":["q"],"additionalProperties":false}`

// RuntimeTools are the tools as runtime.Tools (tool.New).
func (t *Tools) RuntimeTools() []runtime.Tool {
	out := make([]runtime.Tool, len(names))
	for i, name := range names {
		out[i] = tool.Must(tool.New(tool.Def{Name: name, Description: "The " + name + " tool.", InputSchema: json.RawMessage(schemaQ),
			Idempotent: idempotent[name]},
			func(ctx context.Context, inv *runtime.Invocation, in query) (json.RawMessage, error) {
				s, err := t.Run(name, in.Q)
				return json.RawMessage(s), err
			}))
	}
	return out
}

// Trips counts the database round trips of the stores opened with OpenStore, as
// storetest.CountTrips counts them.
type Trips struct{ n atomic.Int64 }

// Load returns the count.
func (t *Trips) Load() int64 { return t.n.Load() }

// OpenStore opens a migrated store on dsn whose round trips trips counts.
func OpenStore(ctx context.Context, dsn string, trips *Trips, opts ...store.Option) (*store.Store, error) {
	opts = append(opts, store.WithConnector(func(c driver.Connector) driver.Connector { return storetest.CountTrips(c, &trips.n, nil) }))
	st, err := store.Open(ctx, dsn, opts...)
	if err != nil {
		return nil, err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, err
	}
	if err := createMessageLog(ctx, st); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// Seed stores a thread of an earlier exchange and the message to answer, and returns it.
func Seed(ctx context.Context, st *store.Store, thread string) (store.Message, error) {
	at := time.Date(2025, 3, 6, 9, 0, 0, 0, time.UTC)
	msgs := []history.Message{
		{MessageID: thread + "-1", Direction: history.Inbound, From: "Ada <ada@example.com>", To: []string{"support@acme.example"},
			Subject: "Order A-17", Date: at, Text: "Where is my order A-17?"},
		{MessageID: thread + "-2", Direction: history.Outbound, From: "support@acme.example", To: []string{"Ada <ada@example.com>"},
			Subject: "Re: Order A-17", Date: at.Add(time.Hour), Text: "It ships tomorrow."},
		{MessageID: thread + "-3", Direction: history.Inbound, From: "Ada <ada@example.com>", To: []string{"support@acme.example"},
			Subject: "Re: Order A-17", Date: at.Add(5 * time.Hour), Text: "It has not arrived. Please open a ticket."},
	}
	var last store.Message
	for _, m := range msgs {
		m.ThreadID = thread
		sm := store.Message{Message: m, Mailbox: "support@acme.example"}
		a, err := st.AppendMessage(ctx, sm)
		if err != nil {
			return store.Message{}, err
		}
		sm.Seq = a.Seq
		last = sm
	}
	return last, nil
}

// Persona returns the personagen persona: the system prompt, the thread's summary and history,
// and the tools.
func NewPersona(st *store.Store, tools *Tools) *runtime.Persona {
	p := &runtime.Persona{
		Name:  Persona,
		Model: chat.ModelSettings{Name: "bench-model", MaxTokens: 1024},
		Tools: tools.RuntimeTools(),
		MessageChain: runtime.NewChain(
			runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: System}},
			runtime.Step{Kind: "thread_summary", Resolver: &runtime.ThreadSummary{Source: st}},
			runtime.Step{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: st}},
		),
	}
	p.Mailbox.Address = "support@acme.example"
	return p
}

// Model is the personagen side's fake model: round n of a request asks for the round's three
// calls; after Rounds rounds it answers with the results it read. failAt, when not negative,
// fails the call of that round once (a model error: the run stops and resumes later). Marks
// records the round-trip count at each call, for the budget.
type Model struct {
	Thread string
	FailAt int
	Trips  *Trips
	Marks  []int64
	failed bool
}

// ErrModelDown is the error a Model fails with: a transient failure (the provider unavailable),
// after which the run is resumable.
var ErrModelDown = &chat.CallError{Provider: "bench", StatusCode: 503, Transient: true, Err: errors.New("bench model: unavailable")}

// Generate answers req (see Model).
func (m *Model) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if m.Trips != nil {
		m.Marks = append(m.Marks, m.Trips.Load())
	}
	n := 0
	var results []string
	for i := len(req.Messages) - 1; i >= 0; i-- { // this run's rounds follow the inbound turn
		msg := req.Messages[i]
		if msg.Role == chat.RoleUser {
			break
		}
		if len(msg.ToolCalls) > 0 {
			n++
		}
	}
	for _, msg := range req.Messages[len(req.Messages)-n*(Calls+1):] {
		if msg.Role == chat.RoleTool {
			results = append(results, msg.Text)
		}
	}
	if n == m.FailAt && !m.failed {
		m.failed = true
		return nil, ErrModelDown
	}
	usage := chat.Usage{InputTokens: int64(900 + 100*n), OutputTokens: 30}
	if n == Rounds {
		return &chat.Response{Message: chat.AssistantMessage(Answer(results)), StopReason: chat.StopEndTurn, Usage: usage}, nil
	}
	calls := make([]chat.ToolCall, Calls)
	for j, name := range names {
		calls[j] = chat.ToolCall{ID: CallID(n, name), Name: name, Input: json.RawMessage(`{"q":"` + Query(m.Thread, n, name) + `"}`)}
	}
	return &chat.Response{Message: chat.AssistantMessage("", calls...), StopReason: chat.StopToolUse, Usage: usage}, nil
}

// Runner returns the personagen runner over st with model m.
func Runner(st *store.Store, m chat.Model) *agent.Runner {
	return &agent.Runner{Store: st, Model: m, Holder: "bench", Logger: slog.New(slog.DiscardHandler)}
}

// history returns the thread's messages before the answered one, as the peers' prompts show
// them: one text per message, inbound as the user's, outbound as the assistant's.
func threadHistory(ctx context.Context, st *store.Store, in store.Message) ([]history.Message, error) {
	w, err := st.History(ctx, history.Query{ThreadID: in.ThreadID, ExcludeMessageID: in.MessageID, UpToSeq: in.Seq - 1, ToolUses: true})
	if err != nil {
		return nil, err
	}
	return w.Messages, nil
}

// recorder records a peer's run. With perMessage unset it records what personagen's rounds
// hold with the same store calls: one RecordRound per round, one AppendMessage for the reply.
// With perMessage set it records the way the peer's own persistence works — langchaingo's
// schema.ChatMessageHistory (one AddMessage per message), eino's message state written as it
// grows: one INSERT of each new message into bench_messages as the peer produces it, and the
// reply appended to the thread.
type recorder struct {
	st         *store.Store
	in         store.Message
	runID      string
	perMessage bool
	turn       int
	err        error
}

// logMessage is one message of a peer's conversation as bench_messages holds it.
type logMessage struct {
	Role, Content, ToolCalls, ToolCallID string
}

// messages records msgs one INSERT each (perMessage).
func (r *recorder) messages(ctx context.Context, msgs []logMessage) {
	for _, m := range msgs {
		if r.err != nil {
			return
		}
		_, r.err = r.st.DB().ExecContext(ctx, `INSERT INTO bench_messages (run_id, role, content, tool_calls, tool_call_id)
			VALUES (?, ?, ?, ?, ?)`, r.runID, m.Role, m.Content, m.ToolCalls, m.ToolCallID)
	}
}

// createMessageLog creates bench_messages, the table of the peers' per-message persistence.
func createMessageLog(ctx context.Context, st *store.Store) error {
	ddl := `CREATE TABLE IF NOT EXISTS bench_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL,
		role TEXT NOT NULL, content TEXT NOT NULL, tool_calls TEXT NOT NULL, tool_call_id TEXT NOT NULL)`
	if st.Dialect() == store.DialectMySQL {
		ddl = `CREATE TABLE IF NOT EXISTS bench_messages (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
			run_id VARCHAR(191) NOT NULL, role VARCHAR(16) NOT NULL, content MEDIUMTEXT NOT NULL, tool_calls MEDIUMTEXT NOT NULL,
			tool_call_id VARCHAR(255) NOT NULL, KEY bench_messages_run (run_id, id)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`
	}
	_, err := st.DB().ExecContext(ctx, ddl)
	return err
}

func (r *recorder) round(ctx context.Context, calls []chat.ToolCall, results []store.Result) {
	if r.err != nil || len(calls) == 0 {
		return
	}
	_, r.err = r.st.RecordRound(ctx, store.Round{Owner: store.Owner{Type: store.OwnerMessage, ID: r.in.Seq}, Persona: Persona,
		RunID: r.runID, TurnIndex: r.turn, Calls: calls, Results: results})
	r.turn++
}

func (r *recorder) reply(ctx context.Context, text string) error {
	if r.err != nil {
		return r.err
	}
	m := history.Message{ThreadID: r.in.ThreadID, MessageID: r.runID + "@acme.example", InReplyTo: r.in.MessageID,
		Direction: history.Outbound, From: "support@acme.example", To: []string{r.in.From}, Subject: "Re: " + r.in.Subject,
		Date: r.in.Date, Text: text}
	_, err := r.st.AppendMessage(ctx, store.Message{Message: m, Mailbox: r.in.Mailbox, RunKey: r.runID})
	return err
}
