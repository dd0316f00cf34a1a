package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
	"github.com/personagen/personagen/runtime/tool"
)

// testAuth is the credentials of the test consoles.
var testAuth = Auth{User: "ada", Password: "correct horse battery"}

// eachDB runs f on a fresh migrated store of each database.
func eachDB(t *testing.T, f func(t *testing.T, st *store.Store)) {
	t.Helper()
	eachDSN(t, func(t *testing.T, dsn string) { f(t, openStore(t, dsn)) })
}

// eachDSN runs f with the DSN of a fresh database of each kind (migrated once openStore opened
// it).
func eachDSN(t *testing.T, f func(t *testing.T, dsn string)) {
	t.Helper()
	for _, name := range []string{"sqlite", "mysql"} {
		t.Run(name, func(t *testing.T) {
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
			if name == "mysql" {
				dsn = storetest.MySQL(t)
			}
			f(t, dsn)
		})
	}
}

func openStore(t testing.TB, dsn string, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st
}

// desk is the test host's support persona and its model: the model answers every message,
// except that while refusing is set it refuses the request (status 400: the run fails for
// good, class request_refused). A message that asks for a refund gets a call of the refund
// tool (which needs a person's approval) for order A-17 instead, and the model's answer to a
// tool's result is "Done: " and the result.
type desk struct {
	persona  *runtime.Persona
	refusing atomic.Bool
	calls    atomic.Int64
	refunds  atomic.Int64
}

// refundInput is the refund tool's input.
type refundInput struct {
	Order string `json:"order"`
}

func newDesk() *desk {
	d := &desk{}
	refund := tool.Must(tool.New(tool.Def{
		Name: "refund", Description: "Refund an order.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"}},"required":["order"]}`),
	}, func(ctx context.Context, inv *runtime.Invocation, in refundInput) (string, error) {
		d.refunds.Add(1)
		return "refunded " + in.Order, nil
	}))
	p := &runtime.Persona{Name: "support", Description: "Answers customer email.", Tools: []runtime.Tool{refund},
		ToolRules:    map[string]runtime.ToolRule{"refund": {Approval: &runtime.ApprovalRule{}}},
		MessageChain: runtime.NewChain(runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "You answer customer email.", Role: chat.RoleSystem}})}
	p.Mailbox.Address, p.Mailbox.Name = "support@acme.example", "Acme Support"
	d.persona = p
	return d
}

func (d *desk) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	n := d.calls.Add(1)
	if d.refusing.Load() {
		return nil, &chat.CallError{Provider: "test", StatusCode: 400, Err: errors.New("invalid x-api-key")}
	}
	switch last := req.Messages[len(req.Messages)-1]; {
	case last.Role == chat.RoleTool:
		return &chat.Response{Message: chat.AssistantMessage("Done: " + last.Text), StopReason: chat.StopEndTurn,
			Usage: chat.Usage{InputTokens: 1300, OutputTokens: 20}}, nil
	case strings.Contains(strings.ToLower(last.Text), "refund"):
		call, err := chat.NewToolCall(fmt.Sprintf("c%d", n), "refund", map[string]string{"order": "A-17"})
		if err != nil {
			return nil, err
		}
		return &chat.Response{Message: chat.AssistantMessage("", call), StopReason: chat.StopToolUse,
			Usage: chat.Usage{InputTokens: 1250, OutputTokens: 15}}, nil
	}
	return &chat.Response{Message: chat.AssistantMessage("Your invoice INV-2025-0117 is paid.\n\nAcme Support"), StopReason: chat.StopEndTurn,
		Usage: chat.Usage{InputTokens: 1200, OutputTokens: 40, CacheReadTokens: 800}}, nil
}

// memSender records the replies it sent.
type memSender struct {
	mu   sync.Mutex
	sent []string
	fail atomic.Bool
}

func (s *memSender) Send(ctx context.Context, m service.Outgoing) error {
	if s.fail.Load() {
		return service.Permanent(errors.New("550 5.1.1 <ann@cust.example>: Recipient address rejected"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, m.MessageID)
	return nil
}

func (s *memSender) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// startService runs a service of d on st until the test ends.
func startService(t *testing.T, st *store.Store, d *desk, sender service.Sender) *service.Service {
	t.Helper()
	svc, err := service.New(service.Config{Store: st, Personas: []*runtime.Persona{d.persona}, Models: service.Models{Default: d},
		Sender: sender, Holder: "svc-" + t.Name(), PollInterval: 20 * time.Millisecond, NoSchedule: true,
		Logger: slog.New(slog.DiscardHandler), Retry: service.RetryPolicy{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 6}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("service: %v", err)
		}
	})
	return svc
}

// email is a raw message from ann to the support persona.
func email(id, subject, body string) []byte {
	return []byte(fmt.Sprintf("From: Ann <ann@cust.example>\r\nTo: support@acme.example\r\nSubject: %s\r\nMessage-ID: <%s>\r\n"+
		"Date: Mon, 02 Mar 2026 10:00:00 +0000\r\n\r\n%s\r\n", subject, id, body))
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

// onlyRun returns the one reply run of the store.
func onlyRun(t *testing.T, st *store.Store) store.Run {
	t.Helper()
	runs, err := st.ListRuns(context.Background(), store.RunFilter{Kind: store.RunReply})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 {
		t.Fatalf("%d reply runs, want 1", len(runs))
	}
	return runs[0]
}

// newConsole serves a console of st on a test server.
func newConsole(t *testing.T, st *store.Store) (*Console, *httptest.Server) {
	t.Helper()
	c, err := New(Config{Store: st, Auth: testAuth, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

// client makes requests to a console server as ada.
type client struct {
	t   *testing.T
	srv *httptest.Server
}

func (c client) do(method, path string, form url.Values, auth bool) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.srv.URL+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if auth {
		req.SetBasicAuth(testAuth.User, testAuth.Password)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noRedirect.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(res.Body)
	return res, b.String()
}

func (c client) get(path string) string {
	c.t.Helper()
	res, body := c.do("GET", path, nil, true)
	if res.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %s\n%s", path, res.Status, body)
	}
	return body
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// post submits a form of the page at page (its CSRF token) to path, expecting a redirect.
func (c client) post(page, path string, form url.Values) string {
	c.t.Helper()
	m := csrfRE.FindStringSubmatch(c.get(page))
	if m == nil {
		c.t.Fatalf("the page %s has no form with a CSRF token", page)
	}
	form.Set("csrf", m[1])
	res, body := c.do("POST", path, form, true)
	if res.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("POST %s: %s\n%s", path, res.Status, body)
	}
	return res.Header.Get("Location")
}

// replySent reports whether the store records the reply of the run of key sent: the Sender's
// call returns before the service records it, so a test that reads the send state waits for this.
func replySent(st *store.Store, key string) bool {
	ctx := context.Background()
	m, err := st.ReplyOf(ctx, key)
	if err != nil {
		return false
	}
	s, err := st.ReplyState(ctx, m.Seq)
	return err == nil && s.Status == "sent"
}
