package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// hostileArgs are a refund call's arguments as a model might write them: an ANSI escape, a
// right-to-left override and a line separator inside a string, and spacing between tokens.
const hostileArgs = `{ "order": "A-17",` + "\n" + ` "note": "\u001b[31mred\u001b[0m ` + "\u202e" + `gnp.exe ` + "\u2028" + `end" }`

// waitingRun stores a message of thread and a run of persona "support" answering it that waits
// for approval of its refund call "c2" (the lookup "c1" needs none), and returns the run's key.
func waitingRun(t *testing.T, st *store.Store, thread string) string {
	t.Helper()
	ctx := context.Background()
	a, err := st.AppendMessage(ctx, store.Message{Mailbox: "support", Message: history.Message{ThreadID: thread, MessageID: thread + "@cust.example",
		Direction: history.Inbound, From: "ann@cust.example", To: []string{"support@acme.example"}, Subject: "Refund",
		Date: time.Date(2026, 3, 6, 9, 0, 0, 0, time.UTC), Text: "Refund me."}})
	if err != nil {
		t.Fatal(err)
	}
	key := "reply:support/" + thread
	run, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunReply, Persona: "support", ThreadID: thread, MessageSeq: a.Seq, Holder: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	turn := store.Turn{RunID: run.ID, Text: "Checking, then refunding.", StopReason: "tool_use",
		ToolCalls: []chat.ToolCall{{ID: "c1", Name: "lookup", Input: json.RawMessage(`{"q":"A-17"}`)},
			{ID: "c2", Name: "refund", Input: json.RawMessage(hostileArgs)}},
		ApprovalRequests: []store.ApprovalRequest{{Position: 1, Input: json.RawMessage(`{"order":"A-17","note":"red"}`), Timeout: 48 * time.Hour}}}
	if _, err := st.StartTurn(ctx, "w1", turn); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WaitRun(ctx, key, "w1"); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestApprovalCommandsListApproveAndDeny drives `personagen approvals`, `approve` and `deny` on
// SQLite and MariaDB: the waiting call is listed with its run, deadline, arguments (escaped:
// no control or bidi character reaches the terminal) and decoded input; approving prints what
// happens next, approving again changes nothing, denying it then fails naming the approval;
// the lists by status show who decided when; JSON lists the same.
func TestApprovalCommandsListApproveAndDeny(t *testing.T) {
	for _, name := range []string{"sqlite", "mysql"} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
			if name == "mysql" {
				dsn = storetest.MySQL(t)
			}
			st, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if err := st.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			first, second := waitingRun(t, st, "t1"), waitingRun(t, st, "t2")
			t.Setenv(dsnEnv, dsn)
			list, err := st.Approvals(ctx, store.ApprovalQuery{Status: store.ApprovalWaiting})
			if err != nil || len(list) != 2 {
				t.Fatal(list, err)
			}
			block := func(a store.Approval, decision string) string {
				return fmt.Sprintf("%s refund  run %s  call c2\n", a.Status, a.RunKey) +
					fmt.Sprintf("  persona support, reply run answering message seq %d of thread %s (run %s)\n", a.MessageSeq, a.ThreadID, a.RunStatus) +
					fmt.Sprintf("  requested %s, expires %s (then: deny)\n", a.RequestedAt.Format(time.RFC3339), a.ExpiresAt.Format(time.RFC3339)) +
					decision +
					`  arguments {"order":"A-17","note":"\u001b[31mred\u001b[0m \u202egnp.exe \u2028end"}` + "\n" +
					`  decoded   {"order":"A-17","note":"red"}` + "\n"
			}
			code, stdout, stderr := runCLI(t, "runs", "-status", "waiting", "-json")
			var runs []store.Run
			if err := json.Unmarshal(stdout, &runs); code != exitOK || err != nil || len(runs) != 2 || runs[0].Status != store.RunWaiting ||
				runs[0].Key != second || runs[1].Key != first {
				t.Errorf("runs -status waiting: exit %d, %v, stderr %s\n%s", code, err, stderr, stdout)
			}
			code, stdout, stderr = runCLI(t, "approvals")
			if want := block(list[0], "") + "\n" + block(list[1], ""); code != exitOK || string(stdout) != want {
				t.Fatalf("approvals: exit %d, stderr %s\n got:\n%s\nwant:\n%s", code, stderr, stdout, want)
			}
			if bytes.ContainsAny(stdout, "\x1b\u202e\u2028") {
				t.Error("a control or bidi character reached the output")
			}

			code, stdout, stderr = runCLI(t, "approve", "-by", "ann@acme.example", "-note", "within the limit", first, "c2")
			if want := "approved call c2 (refund) of run " + first + " as ann@acme.example: it runs when the run resumes\n"; code != exitOK || string(stdout) != want {
				t.Errorf("approve: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, want)
			}
			code, stdout, _ = runCLI(t, "approve", "-by", "bob", first, "c2")
			if code != exitOK || !strings.HasPrefix(string(stdout), "call c2 (refund) of run "+first+" was already approved by ann@acme.example at ") ||
				!strings.HasSuffix(string(stdout), "; nothing changed\n") {
				t.Errorf("approve again: exit %d, stdout %q", code, stdout)
			}
			code, _, stderr = runCLI(t, "deny", "-by", "bob", first, "c2")
			if code != exitRefused || !strings.Contains(string(stderr), `it was approved by "ann@acme.example" at `) {
				t.Errorf("deny after the approval: exit %d, stderr %q", code, stderr)
			}
			code, stdout, _ = runCLI(t, "deny", "-by", "bob", "-note", "not eligible", second, "c2")
			if want := "denied call c2 (refund) of run " + second + " as bob: it does not run; the model reads that it was denied, and why\n"; code != exitOK || string(stdout) != want {
				t.Errorf("deny: exit %d, stdout %q", code, stdout)
			}

			decided, err := st.Approvals(ctx, store.ApprovalQuery{Status: store.ApprovalApproved})
			if err != nil || len(decided) != 1 {
				t.Fatal(decided, err)
			}
			code, stdout, _ = runCLI(t, "approvals", "-status", "approved")
			if want := block(decided[0], "  approved by ann@acme.example at "+decided[0].DecidedAt.Format(time.RFC3339)+": within the limit\n"); code != exitOK || string(stdout) != want {
				t.Errorf("approvals -status approved:\n got:\n%s\nwant:\n%s", stdout, want)
			}
			if code, stdout, _ = runCLI(t, "approvals"); code != exitOK || string(stdout) != "no calls wait for approval\n" {
				t.Errorf("approvals after the decisions: exit %d, %q", code, stdout)
			}
			code, stdout, _ = runCLI(t, "approvals", "-status", "all", "-format", "json", "-persona", "support")
			var all []approvalJSON
			if err := json.Unmarshal(stdout, &all); err != nil || code != exitOK || len(all) != 2 {
				t.Fatalf("approvals -format json: exit %d, %v, %s", code, err, stdout)
			}
			if j := all[1]; j.RunKey != second || j.Status != "denied" || j.DecidedBy != "bob" || j.Note != "not eligible" ||
				j.Arguments != hostileArgs || j.Input != `{"order":"A-17","note":"red"}` || j.Tool != "refund" || j.CallID != "c2" ||
				!j.ExpiresAt.Equal(list[1].ExpiresAt) {
				t.Errorf("json approval = %+v", j)
			}
		})
	}
}

// TestApprovalCommandsRefuseBadCommandLines names the problem, with exit 2 for the command line,
// 3 for a run or call the store does not hold and 1 for a store that cannot be reached.
func TestApprovalCommandsRefuseBadCommandLines(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "p.db")
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	key := waitingRun(t, st, "t1")
	for _, c := range []struct {
		name   string
		env    string
		args   []string
		code   int
		stderr string
	}{
		{"no DSN", "", []string{"approvals"}, exitUsage, "personagen approvals: no database: pass -dsn or set PERSONAGEN_DSN"},
		{"an unknown status", dsn, []string{"approvals", "-status", "pending"}, exitUsage, `-status "pending": want waiting, approved, denied, expired or all`},
		{"an unknown format", dsn, []string{"approvals", "-format", "yaml"}, exitUsage, `-format "yaml": want text or json`},
		{"arguments to approvals", dsn, []string{"approvals", "x"}, exitUsage, `unexpected arguments ["x"]`},
		{"approve without the call", dsn, []string{"approve", key}, exitUsage, "want RUN_KEY and CALL_ID (see personagen approvals), got 1 arguments"},
		{"an unknown run", dsn, []string{"approve", "-by", "ann", "reply:nope", "c2"}, exitNotFound, `run not found: key "reply:nope"`},
		{"a call that needs no approval", dsn, []string{"deny", "-by", "ann", key, "c1"}, exitNotFound, "no call of the run waits or waited for approval under that id"},
		{"a note too long", dsn, []string{"deny", "-by", "ann", "-note", strings.Repeat("x", store.MaxApprovalNoteBytes+1), key, "c2"}, exitUsage, "note has 4097 bytes (at most 4096)"},
		{"an unreachable store", "", []string{"approve", "-dsn", "root@tcp(127.0.0.1:1)/x?timeout=1s", key, "c2"}, exitFail, "connect to mysql database"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(dsnEnv, c.env)
			code, _, stderr := runCLI(t, c.args...)
			if code != c.code || !strings.Contains(string(stderr), c.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.stderr)
			}
		})
	}
	if list, _ := st.Approvals(ctx, store.ApprovalQuery{Status: store.ApprovalWaiting}); len(list) != 1 {
		t.Errorf("a refused command changed the approvals: %+v", list)
	}
}
