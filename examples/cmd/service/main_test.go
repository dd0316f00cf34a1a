package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/smtp"
	"net/textproto"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// The example service end to end, as a host runs it: the binary built once, run as a child
// process on a SQLite file and on MariaDB, mail dropped into its -maildir, replies read from its
// -sent directory, its JSON logs read back.

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// serviceBinary builds the example service once per test run.
func serviceBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "personagen-service-*")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "service")
		out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// testHost is one test's service directories and store.
type testHost struct {
	t                    *testing.T
	dsn                  string
	dir, in, out, ticket string
}

func newTestHost(t *testing.T, dsn string) *testHost {
	dir := t.TempDir()
	h := &testHost{t: t, dsn: dsn, dir: dir, in: filepath.Join(dir, "in"), out: filepath.Join(dir, "out"), ticket: filepath.Join(dir, "tickets")}
	for _, d := range []string{h.in, h.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// proc is a running service process.
type proc struct {
	cmd  *exec.Cmd
	logs *bytes.Buffer
	mu   *sync.Mutex
	done chan struct{}
}

// start runs the service with the host's flags and extra ones.
func (h *testHost) start(extra ...string) *proc {
	h.t.Helper()
	// The example personas' daily digest would fire at its hour (08:00 in Berlin) and take model
	// calls the tests count: these replicas fire nothing.
	args := append([]string{"-dsn", h.dsn, "-maildir", h.in, "-sent", h.out, "-tickets", h.ticket, "-log", "json", "-holder", "replica-1", "-no-schedule"}, extra...)
	cmd := exec.Command(serviceBinary(h.t), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	p := &proc{cmd: cmd, logs: &bytes.Buffer{}, mu: &sync.Mutex{}, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.logs.Write(append(sc.Bytes(), '\n'))
			p.mu.Unlock()
		}
		cmd.Wait()
	}()
	h.t.Cleanup(func() { p.kill() })
	return p
}

func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM and waits for the process to exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the service did not stop within 60 s of SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM\n%s", code, p.text())
	}
}

func (p *proc) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logs.String()
}

// records returns the process's JSON log records.
func (p *proc) records(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(p.text()), "\n") {
		if line == "" {
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// drop puts an email into the maildir the way a writer should: under another name, then
// renamed in.
func (h *testHost) drop(name string, raw []byte) {
	h.t.Helper()
	tmp := filepath.Join(h.dir, name+".tmp")
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		h.t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(h.in, name)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *testHost) files(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func (h *testHost) tickets() int {
	b, _ := os.ReadFile(h.ticket)
	return bytes.Count(b, []byte("\n"))
}

func waitFor(t *testing.T, what string, p *proc, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; the service logged:\n%s", what, p.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func email(id, subject, body string) []byte {
	return []byte(fmt.Sprintf("From: Jonas Brandt <jonas.brandt@brightline.io>\r\nTo: support@acme.example\r\nSubject: %s\r\nMessage-ID: <%s>\r\nDate: Mon, 02 Mar 2026 10:00:00 +0000\r\n\r\n%s\r\n", subject, id, body))
}

func eachDB(t *testing.T, f func(t *testing.T, dsn string)) {
	if testing.Short() {
		t.Skip("builds and runs the example service")
	}
	for _, name := range []string{"sqlite", "mysql"} {
		t.Run(name, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "store.db")
			if name == "mysql" {
				dsn = storetest.MySQL(t)
			}
			f(t, dsn)
		})
	}
}

// replyRuns reads the reply runs from the store the service used.
func replyRuns(t *testing.T, dsn string) []store.Run {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.Runs(context.Background(), store.RunQuery{Kind: store.RunReply})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// A message answered, then delivered again: no second run, no second reply; every state change
// is logged with its persona, thread and run.
func TestRedeliveredMessageMakesNoSecondRun(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		h := newTestHost(t, dsn)
		p := h.start()
		msg := email("q1@brightline.io", "Invoice INV-2025-0117", "Is invoice INV-2025-0117 paid?")
		h.drop("a.eml", msg)
		waitFor(t, "the reply", p, func() bool { return len(h.files(h.out)) == 1 })
		h.drop("b.eml", msg)
		waitFor(t, "the second copy ingested", p, func() bool { return len(h.files(filepath.Join(h.in, ".done"))) == 2 })
		time.Sleep(500 * time.Millisecond) // a second run, if there were one, would start now
		p.stop(t)
		if got := h.files(h.out); len(got) != 1 {
			t.Errorf("sent %v, want one reply", got)
		}
		reply, _ := os.ReadFile(filepath.Join(h.out, h.files(h.out)[0]))
		if !bytes.Contains(reply, []byte("Invoice INV-2025-0117 is paid.")) || !bytes.Contains(reply, []byte("In-Reply-To: <q1@brightline.io>")) {
			t.Errorf("reply:\n%s", reply)
		}
		if runs := replyRuns(t, dsn); len(runs) != 1 || runs[0].Status != store.RunSucceeded {
			t.Errorf("runs: %+v", runs)
		}
		states := map[string]bool{}
		for _, r := range p.records(t) {
			msg, _ := r["msg"].(string)
			switch msg {
			case "message stored; pending answer", "message received again; already stored", "run started", "reply stored", "run finished",
				"reply run finished", "reply sent":
				states[msg] = true
				if r["persona"] != "support-agent" || r["thread"] == nil || r["thread"] == "" {
					t.Errorf("%q lacks persona or thread: %v", msg, r)
				}
				if !strings.HasPrefix(msg, "message") && (r["run"] == nil || r["run"] == "") {
					t.Errorf("%q lacks the run key: %v", msg, r)
				}
			}
		}
		if len(states) != 7 {
			t.Errorf("logged state changes %v, want all 7", states)
		}
	})
}

// The escalation needs a person's approval: the run pauses; `personagen approve`, another
// process, resumes it; kill -9 after the non-idempotent escalation ran but before its result
// was recorded: the restarted service answers the message, and the escalation has run exactly
// once.
func TestApprovedEscalationSurvivesAKillAndRunsOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		h := newTestHost(t, dsn)
		p := h.start("-tool-latency", "30s")
		h.drop("a.eml", email("q1@brightline.io", "Refund", "Please refund the duplicate charge on INV-2025-0117."))
		var waiting []struct {
			RunKey string `json:"run_key"`
			CallID string `json:"call_id"`
		}
		waitFor(t, "the escalation waiting for approval", p, func() bool {
			out, err := exec.Command(cliBinary(t), "approvals", "-dsn", dsn, "-format", "json").Output()
			return err == nil && json.Unmarshal(out, &waiting) == nil && len(waiting) == 1
		})
		if n := h.tickets(); n != 0 {
			t.Fatalf("%d tickets opened before the approval", n)
		}
		if out, err := exec.Command(cliBinary(t), "approve", "-dsn", dsn, "-by", "ops@acme.example", "-note", "duplicate charge confirmed",
			waiting[0].RunKey, waiting[0].CallID).CombinedOutput(); err != nil {
			t.Fatalf("personagen approve: %v\n%s", err, out)
		}
		waitFor(t, "the ticket opened", p, func() bool { return h.tickets() == 1 })
		p.kill()
		p = h.start()
		waitFor(t, "the reply", p, func() bool { return len(h.files(h.out)) == 1 })
		p.stop(t)
		if n := h.tickets(); n != 1 {
			t.Errorf("%d tickets opened, want 1", n)
		}
		runs := replyRuns(t, dsn)
		if len(runs) != 1 || runs[0].Status != store.RunSucceeded {
			t.Errorf("runs: %+v", runs)
		}
	})
}

var (
	cliOnce sync.Once
	cli     string
	cliErr  error
)

// cliBinary builds the personagen command once per test run.
func cliBinary(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "personagen-cli-*")
		if err != nil {
			cliErr = err
			return
		}
		cli = filepath.Join(dir, "personagen")
		if out, err := exec.Command("go", "build", "-o", cli, "../../../cmd/personagen").CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cli
}

// A model outage: the first calls fail transiently, the message is answered after it, with one
// model call per retry and no more.
func TestModelOutageEndsAnswered(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		h := newTestHost(t, dsn)
		p := h.start("-model-outage", "2")
		h.drop("a.eml", email("q1@brightline.io", "Hello", "Just saying hello."))
		waitFor(t, "the reply", p, func() bool { return len(h.files(h.out)) == 1 })
		p.stop(t)
		stops := 0
		for _, r := range p.records(t) {
			if r["msg"] == "reply run stopped; will retry" {
				stops++
				if r["failure_class"] != "model_unavailable" {
					t.Errorf("retry record: %v", r)
				}
			}
		}
		if stops != 2 {
			t.Errorf("%d transient stops, want 2\n%s", stops, p.text())
		}
		if runs := replyRuns(t, dsn); len(runs) != 1 || runs[0].Status != store.RunSucceeded || runs[0].Attempt != 3 {
			t.Errorf("runs: %+v", runs)
		}
	})
}

// The health endpoints answer, and /metrics counts the run.
func TestHealthEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example service")
	}
	h := newTestHost(t, filepath.Join(t.TempDir(), "store.db"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := h.start("-health", addr)
	h.drop("a.eml", email("q1@brightline.io", "Hello", "Hi."))
	waitFor(t, "the reply", p, func() bool { return len(h.files(h.out)) == 1 })
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, b)
	}
	if got := get("/readyz"); got != "200 {\"ready\":true}\n" {
		t.Errorf("/readyz: %q", got)
	}
	if got := get("/metrics"); !strings.Contains(got, `outcome="succeeded",persona="support-agent"`) {
		t.Errorf("/metrics lacks the run:\n%s", got)
	}
	p.stop(t)
}

// The SMTP listener flag: a message sent over SMTP to the support persona is answered, and a
// recipient that is no persona is refused at RCPT TO.
func TestSMTPListenerFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example service")
	}
	h := newTestHost(t, filepath.Join(t.TempDir(), "store.db"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := h.start("-smtp", addr)
	var c *smtp.Client
	waitFor(t, "the SMTP listener", p, func() bool {
		c, err = smtp.Dial(addr)
		return err == nil
	})
	defer c.Close()
	if err := c.Mail("jonas.brandt@brightline.io"); err != nil {
		t.Fatal(err)
	}
	var refusal *textproto.Error
	if err := c.Rcpt("someone@elsewhere.example"); !errors.As(err, &refusal) || refusal.Code != 550 || !strings.HasPrefix(refusal.Msg, "5.1.1 ") {
		t.Errorf("RCPT TO a stranger = %v; want 550 5.1.1", err)
	}
	if err := c.Rcpt("support@acme.example"); err != nil {
		t.Fatal(err)
	}
	w, err := c.Data()
	if err != nil {
		t.Fatal(err)
	}
	w.Write(email("smtp-1@brightline.io", "Invoice INV-2025-0117", "Is invoice INV-2025-0117 paid?"))
	if err := w.Close(); err != nil {
		t.Fatalf("DATA: %v", err)
	}
	c.Quit()
	waitFor(t, "the reply", p, func() bool { return len(h.files(h.out)) == 1 })
	p.stop(t)
}

func TestTransportFlagsRefuseHalfConfigurations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example service")
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-webhook", "127.0.0.1:0"}, "-webhook: set PERSONAGEN_WEBHOOK_SECRET and/or MAILGUN_WEBHOOK_SIGNING_KEY"},
		{[]string{"-dkim-domain", "acme.example"}, "-dkim-*: DKIM signs what -relay or -sent sends; name one"},
		{[]string{"-relay", "127.0.0.1:25", "-relay-tls", "maybe"}, `-relay-tls \"maybe\": want starttls, tls, opportunistic or none`},
	} {
		out, err := exec.Command(serviceBinary(t), tc.args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: %v\n%s\nwant the error %q", tc.args, err, out, tc.want)
		}
	}
}

// -max-conns bounds the MySQL pool: a service on two connections answers a batch of messages,
// and fewer than two is refused before anything starts.
func TestMaxConnsFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example service")
	}
	out, err := exec.Command(serviceBinary(t), "-max-conns", "1").CombinedOutput()
	want := "store: invalid value: max open connections 1 (want at least 2: Migrate holds a lock on one connection while it migrates on another)"
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("-max-conns 1: %v\n%s\nwant the error %q", err, out, want)
	}
	h := newTestHost(t, storetest.MySQL(t))
	p := h.start("-max-conns", "2")
	const n = 6
	for i := range n {
		h.drop(fmt.Sprintf("m%d.eml", i), email(fmt.Sprintf("pool-%d@brightline.io", i), fmt.Sprintf("Question %d", i), "Is invoice INV-2025-0117 paid?"))
	}
	waitFor(t, "the replies", p, func() bool { return len(h.files(h.out)) == n })
	p.stop(t)
	if got := len(h.files(h.out)); got != n {
		t.Errorf("%d replies, want %d", got, n)
	}
}

// -console serves the web console: it asks for the credentials of the environment and lists
// the thread the service answered.
func TestConsoleFlag(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the example service")
	}
	h := newTestHost(t, filepath.Join(t.TempDir(), "store.db"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("PERSONAGEN_CONSOLE_TOKEN", "an-example-console-token")
	p := h.start("-console", addr)
	h.drop("a.eml", email("q1@brightline.io", "Hello console", "Hi."))
	waitFor(t, "the reply", p, func() bool { return len(h.files(h.out)) == 1 })
	get := func(token string) (int, string) {
		req, _ := http.NewRequest("GET", "http://"+addr+"/threads", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code, body := get("an-example-console-token"); code != http.StatusOK || !strings.Contains(body, "Hello console") {
		t.Errorf("with the token: %d\n%s", code, body)
	}
	p.stop(t)
}
