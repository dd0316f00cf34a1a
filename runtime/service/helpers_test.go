package service

import (
	"bytes"
	"context"
	"database/sql/driver"
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
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
	"github.com/personagen/personagen/runtime/tool"
)

// eachDB runs f on a fresh migrated store of each database.
func eachDB(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	for _, name := range []string{"sqlite", "mysql"} {
		t.Run(name, func(t *testing.T) {
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
			if name == "mysql" {
				dsn = storetest.MySQL(t)
			}
			st := openStore(t, dsn)
			if err := st.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			f(t, dsn)
		})
	}
}

func openStore(t testing.TB, dsn string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// desk is the test host: a support persona with a non-idempotent refund tool whose executions
// it counts, and a model that asks for a refund when the message says "refund" and answers
// otherwise, counting its calls.
type desk struct {
	refunds atomic.Int64
	calls   atomic.Int64
	persona *runtime.Persona
	// fail, when set, is asked before each model call; a non-nil error is the call's.
	fail func(n int64) error
	// hold, when set, blocks each model call until it is closed (or ctx ends).
	hold chan struct{}
}

type refundInput struct {
	Order string `json:"order"`
}

func newDesk() *desk {
	d := &desk{}
	refund := tool.Must(tool.New(tool.Def{
		Name: "refund", Description: "Refund an order.", Idempotent: false,
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`),
	}, func(ctx context.Context, inv *runtime.Invocation, in refundInput) (string, error) {
		d.refunds.Add(1)
		return "refunded " + in.Order, nil
	}))
	p := &runtime.Persona{Name: "support", Description: "Answers customer email.", Tools: []runtime.Tool{refund},
		MessageChain: runtime.NewChain(runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "You answer customer email.", Role: chat.RoleSystem}})}
	p.Mailbox.Address, p.Mailbox.Name = "support@acme.example", "Acme Support"
	d.persona = p
	return d
}

// Generate is the desk's model.
func (d *desk) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	n := d.calls.Add(1)
	if d.hold != nil {
		select {
		case <-d.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d.fail != nil {
		if err := d.fail(n); err != nil {
			return nil, err
		}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == chat.RoleTool {
		return &chat.Response{Message: chat.AssistantMessage("Done: " + last.Text), StopReason: chat.StopEndTurn,
			Usage: chat.Usage{InputTokens: 10, OutputTokens: 3}}, nil
	}
	text := last.Text
	if strings.Contains(text, "refund") {
		call, _ := chat.NewToolCall(fmt.Sprintf("c%d", n), "refund", map[string]string{"order": "A-17"})
		return &chat.Response{Message: chat.AssistantMessage("", call), StopReason: chat.StopToolUse}, nil
	}
	return &chat.Response{Message: chat.AssistantMessage("Thanks for writing."), StopReason: chat.StopEndTurn,
		Usage: chat.Usage{InputTokens: 10, OutputTokens: 3}}, nil
}

// memSender records the replies it was given, by Message-ID.
type memSender struct {
	mu   sync.Mutex
	sent map[string]int
	raw  map[string][]byte
	fail func(m Outgoing) error
}

func (s *memSender) Send(ctx context.Context, m Outgoing) error {
	if s.fail != nil {
		if err := s.fail(m); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent == nil {
		s.sent, s.raw = map[string]int{}, map[string][]byte{}
	}
	s.sent[m.MessageID]++
	s.raw[m.MessageID] = m.Raw
	return nil
}

func (s *memSender) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.sent {
		out[k] = v
	}
	return out
}

// logBuffer is a slog handler's output, safe for the service's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// records returns the JSON log records written so far.
func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b.buf.Bytes()), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// config is the test service's config on st for d.
func config(st *store.Store, d *desk, sender Sender, holder string, logs *logBuffer) Config {
	log := slog.New(slog.DiscardHandler)
	if logs != nil {
		log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return Config{Store: st, Personas: []*runtime.Persona{d.persona}, Models: Models{Default: d}, Sender: sender,
		Holder: holder, PollInterval: 20 * time.Millisecond, NoSchedule: true, Logger: log,
		Retry: RetryPolicy{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 6}}
}

// start runs a service of cfg until the test ends (or stop is called) and returns stop.
func start(t *testing.T, cfg Config) (svc *Service, stop func()) {
	t.Helper()
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return svc, stop
}

// email is a raw message from ann to the support persona; inReplyTo "" starts a thread.
func email(id, inReplyTo, subject, body string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: Ann <ann@cust.example>\r\nTo: support@acme.example\r\nSubject: %s\r\nMessage-ID: <%s>\r\n", subject, id)
	if inReplyTo != "" {
		fmt.Fprintf(&b, "In-Reply-To: <%s>\r\nReferences: <%s>\r\n", inReplyTo, inReplyTo)
	}
	fmt.Fprintf(&b, "Date: Mon, 02 Mar 2026 10:00:00 +0000\r\n\r\n%s\r\n", body)
	return []byte(b.String())
}

// waitFor polls cond until it holds, failing t after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled reports whether the store holds no pending work.
func settled(t *testing.T, st *store.Store) bool {
	t.Helper()
	c, err := st.CountPending(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c.Replies == 0 && c.Sends == 0
}

// replies counts the outbound replies stored per answered Message-ID.
func replies(t *testing.T, st *store.Store) map[string]int {
	t.Helper()
	runs, err := st.Runs(context.Background(), store.RunQuery{Kind: store.RunReply})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range runs {
		if rep, err := st.ReplyOf(context.Background(), r.Key); err == nil {
			out[rep.InReplyTo]++
		}
	}
	return out
}

// cutConnector wraps a store's connections so that a context ending in the middle of a statement
// can be staged: before the first statement whose text contains match runs, hook is called (it
// cancels a context, say); when the statement's ctx has ended by then, the statement still runs
// to its end on the server, as one already sent does, and the caller gets ctx's error — what a
// client sees when its context ends while the server carries out its statement.
type cutConnector struct {
	driver.Connector
	match string
	hook  func()
	once  *sync.Once
}

func cutAt(match string, hook func()) func(driver.Connector) driver.Connector {
	return func(c driver.Connector) driver.Connector {
		return cutConnector{Connector: c, match: match, hook: hook, once: &sync.Once{}}
	}
}

func (c cutConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &cutConn{Conn: conn, c: c}, nil
}

type cutConn struct {
	driver.Conn
	c cutConnector
}

// cut reports whether query is the one to cut off, calling the hook if so.
func (c *cutConn) cut(ctx context.Context, query string) bool {
	if !strings.Contains(query, c.c.match) {
		return false
	}
	hit := false
	c.c.once.Do(func() {
		hit = true
		c.c.hook()
	})
	return hit && ctx.Err() != nil
}

func (c *cutConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if c.cut(ctx, query) {
		if _, err := c.Conn.(driver.ExecerContext).ExecContext(context.WithoutCancel(ctx), query, args); err != nil {
			return nil, err
		}
		return nil, ctx.Err()
	}
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *cutConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.cut(ctx, query) {
		rows, err := c.Conn.(driver.QueryerContext).QueryContext(context.WithoutCancel(ctx), query, args)
		if err != nil {
			return nil, err
		}
		dest := make([]driver.Value, len(rows.Columns()))
		rows.Next(dest) // an UPDATE … RETURNING writes at its first row
		rows.Close()
		return nil, ctx.Err()
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *cutConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *cutConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *cutConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

func (c *cutConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *cutConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *cutConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
