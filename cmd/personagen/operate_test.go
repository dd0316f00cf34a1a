package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

// seedOps is a store with two threads of the support persona — one whose run failed for good,
// one answered with a reply whose sending failed — and a responsibility whose last fire failed.
func seedOps(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "ops.db")
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	msg := func(thread, id, subject string, dir history.Direction, runKey string) int64 {
		m := store.Message{Mailbox: "support", RunKey: runKey}
		m.ThreadID, m.MessageID, m.Direction, m.Subject = thread, id, dir, subject
		m.From, m.To, m.Date, m.Text = "Ann <ann@cust.example>", []string{"support@acme.example"}, time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC), "Hello\x1b[2J\nsecond line"
		a, err := st.AppendMessage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return a.Seq
	}
	must := func(_ any, _ store.Outcome, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	q1 := msg("support/t1", "q1@cust.example", "Invoice", history.Inbound, "")
	must(st.StartRun(ctx, store.NewRun{Key: "reply:q1", Kind: store.RunReply, Persona: "support", ThreadID: "support/t1", MessageSeq: q1, Holder: "w1"}))
	if _, err := st.FinishRun(ctx, "reply:q1", "w1", store.Finish{Status: store.RunFailed, Reason: "model: status 400", Class: store.FailureRequestRefused}); err != nil {
		t.Fatal(err)
	}
	q2 := msg("support/t2", "q2@cust.example", "Login", history.Inbound, "")
	must(st.StartRun(ctx, store.NewRun{Key: "reply:q2", Kind: store.RunReply, Persona: "support", ThreadID: "support/t2", MessageSeq: q2, Holder: "w1"}))
	r2 := msg("support/t2", "r2@acme.example", "Re: Login", history.Outbound, "reply:q2")
	if _, err := st.FinishRun(ctx, "reply:q2", "w1", store.Finish{Status: store.RunSucceeded}); err != nil {
		t.Fatal(err)
	}
	for _, th := range []struct {
		id  string
		seq int64
	}{{"support/t1", q1}, {"support/t2", q2}} {
		if _, err := st.CompleteReply(ctx, "support", th.id, th.seq, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.ClaimSend(ctx, store.SendClaim{Mailboxes: []string{"support"}, Holder: "w1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SendFailed(ctx, r2, "w1", time.Time{}, "550 5.1.1 no such user"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)
	must(st.StartRun(ctx, store.NewRun{Key: schedule.RunKey("research", "daily", at), Kind: store.RunScheduled, Persona: "research", Responsibility: "daily",
		FireAt: at, Holder: "w1"}))
	if _, err := st.FinishRun(ctx, schedule.RunKey("research", "daily", at), "w1", store.Finish{Status: store.RunFailed, Reason: "boom", Class: store.FailureHostError}); err != nil {
		t.Fatal(err)
	}
	return dsn
}

func TestStoreCommands(t *testing.T) {
	dsn := seedOps(t)
	t.Setenv("PERSONAGEN_DSN", dsn)
	for _, c := range []struct {
		name      string
		args      []string
		code      int
		stdout    []string // substrings expected on stdout, in order
		stderr    string
		notStdout string
	}{
		{name: "threads", args: []string{"threads"}, stdout: []string{"LAST ACTIVITY", "STATE", "support/t2", "support/t1"}},
		{name: "threads show state", args: []string{"threads", "-persona", "support"}, stdout: []string{"answered", "Login", "failed", "Invoice"}},
		{name: "a thread's control characters are neutralised", args: []string{"thread", "support/t1"}, stdout: []string{
			"thread support/t1 of support: failed, 1 messages", "── 1 inbound 2026-03-02 10:00:00Z", "From: Ann <ann@cust.example>",
			"Subject: Invoice", "Hello [2J", "second line", "run reply:q1: failed (request_refused) model: status 400"}, notStdout: "\x1b"},
		{name: "an unknown thread", args: []string{"thread", "support/none"}, code: exitNotFound, stderr: "message not found"},
		{name: "failed runs", args: []string{"runs", "-status", "failed"}, stdout: []string{"STARTED", "research/daily", "reply:q1"}, notStdout: "reply:q2"},
		{name: "runs of a class", args: []string{"runs", "-class", "request_refused", "-since", "24h"}, stdout: []string{"reply:q1"}, notStdout: "daily"},
		{name: "a bad class", args: []string{"runs", "-class", "oops"}, code: exitUsage, stderr: "failure class \"oops\""},
		{name: "a bad since", args: []string{"runs", "-since", "yesterday"}, code: exitUsage, stderr: "neither an age"},
		{name: "a run's timeline", args: []string{"run", "reply:q2"}, stdout: []string{"run reply:q2", "reply run of support: succeeded, attempt 1",
			"answers message 2 of thread support/t2: Login", "reply 3 (r2@acme.example): failed after 1 attempts 550 5.1.1 no such user"}},
		{name: "fires", args: []string{"fires"}, stdout: []string{"research", "daily", "2026-03-01T07:00:00Z", "failed (host_error)"}},
		{name: "outbox", args: []string{"outbox"}, stdout: []string{"SEQ", "3", "failed", "550 5.1.1 no such user"}},
		{name: "retry without a reason", args: []string{"retry", "reply:q1"}, code: exitUsage, stderr: "say why with -reason"},
		{name: "retry", args: []string{"retry", "-reason", "key fixed", "reply:q1"}, stdout: []string{"run reply:q1 is reopened: a running service resumes it"}},
		{name: "retry again", args: []string{"retry", "-reason", "key fixed", "reply:q1"}, stdout: []string{"run reply:q1 already waits to be resumed"}},
		{name: "retry of a succeeded run", args: []string{"retry", "-reason", "x", "reply:q2"}, code: exitRefused, stderr: "succeeded"},
		{name: "retry of nothing", args: []string{"retry", "-reason", "x", "nope"}, code: exitNotFound, stderr: "run not found"},
		{name: "abandon", args: []string{"abandon", "-reason", "called the customer", "reply:q1"}, stdout: []string{"run reply:q1 is abandoned"}},
		{name: "abandon again", args: []string{"abandon", "-reason", "called the customer", "reply:q1"}, stdout: []string{"run reply:q1 was abandoned already"}},
		{name: "fire run", args: []string{"fire", "run", "-reason", "retry the digest", "research", "daily", "2026-03-01T07:00:00Z"},
			stdout: []string{"run fire:research/daily@2026-03-01T07:00:00Z is marked to run"}},
		{name: "fire run of a mistyped responsibility", args: []string{"fire", "run", "-reason", "x", "research", "dialy", "2026-03-01T07:00:00Z"},
			code: exitNotFound, stderr: "no run of a responsibility \"dialy\""},
		{name: "fire run with a bad instant", args: []string{"fire", "run", "-reason", "x", "research", "daily", "8am"}, code: exitUsage, stderr: "not an RFC 3339 time"},
		{name: "resend", args: []string{"resend", "-reason", "address fixed", "3"}, stdout: []string{"reply 3 is back in the outbox"}},
		{name: "resend again", args: []string{"resend", "-reason", "address fixed", "3"}, stdout: []string{"reply 3 already waits to be sent"}},
		{name: "resend of nothing", args: []string{"resend", "-reason", "x", "99"}, code: exitNotFound, stderr: "not a reply in the outbox"},
		{name: "prune needs a selection", args: []string{"prune", "-reason", "x"}, code: exitUsage, stderr: "-older-than AGE, -from ADDRESS"},
		{name: "prune a dry run", args: []string{"prune", "-dry-run", "-from", "ann@cust.example"}, stdout: []string{"would delete thread support/t1",
			"would delete thread support/t2", "would delete 2 threads; kept 0"}},
		{name: "prune by age keeps the new", args: []string{"prune", "-older-than", "90d", "-reason", "retention"}, stdout: []string{"deleted 0 threads; kept 0"}},
		{name: "prune a bad age", args: []string{"prune", "-older-than", "ninety", "-reason", "x"}, code: exitUsage, stderr: "not an age"},
		{name: "no database", args: []string{"threads", "-dsn", ""}, code: exitUsage, stderr: "pass -dsn or set PERSONAGEN_DSN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), c.args, &stdout, &stderr)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr: %s\nstdout: %s", code, c.code, stderr.String(), stdout.String())
			}
			out := stdout.String()
			for _, want := range c.stdout {
				i := strings.Index(out, want)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in this order):\n%s", want, stdout.String())
				}
				out = out[i+len(want):]
			}
			if !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), c.stderr)
			}
			if c.notStdout != "" && strings.Contains(stdout.String(), c.notStdout) {
				t.Errorf("stdout holds %q:\n%s", c.notStdout, stdout.String())
			}
		})
	}
	// Every listing has -json; the JSON is the store's values.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"runs", "-json", "-status", "abandoned"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("runs -json: exit %d: %s", code, stderr.String())
	}
	var runs []store.Run
	if err := json.Unmarshal(stdout.Bytes(), &runs); err != nil || len(runs) != 1 || runs[0].Key != "reply:q1" || runs[0].Reason != "called the customer" {
		t.Errorf("runs -json = %+v, %v", runs, err)
	}
	for _, args := range [][]string{{"threads", "-json"}, {"thread", "-json", "support/t2"}, {"run", "-json", "reply:q2"}, {"fires", "-json"}, {"outbox", "-json"}, {"outbox", "-json", "-status", "bounced"}} {
		stdout.Reset()
		if code := run(context.Background(), args, &stdout, &stderr); code != exitOK || !json.Valid(stdout.Bytes()) {
			t.Errorf("%v: exit %d, valid JSON %v: %s", args, code, json.Valid(stdout.Bytes()), stderr.String())
		}
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"prune", "-json", "-from", "ann@cust.example", "-by", "cli:dpo", "-reason", "erasure"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("prune: exit %d: %s", code, stderr.String())
	}
	var rep store.PruneReport
	// t1's run was reopened by the retry, then abandoned: finished, so both threads go.
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Deleted) != 2 || rep.Deleted[0].ThreadID != "support/t1" ||
		rep.Deleted[1].ThreadID != "support/t2" || len(rep.Kept) != 0 {
		t.Errorf("prune -json = %+v, %v", rep, err)
	}
}
