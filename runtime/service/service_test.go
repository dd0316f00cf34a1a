package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

func TestNewRefusesConfigsItCannotRun(t *testing.T) {
	st := openStore(t, "sqlite::memory:")
	d := newDesk()
	withProvider := *d.persona
	withProvider.Name, withProvider.Model.Provider = "sales", "anthropic"
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no store", Config{Personas: []*runtime.Persona{d.persona}, Models: Models{Default: d}}, "Config.Store is nil"},
		{"no personas", Config{Store: st, Models: Models{Default: d}}, "Config.Personas is empty"},
		{"no default model", Config{Store: st, Personas: []*runtime.Persona{d.persona}}, `persona "support" names no model provider and Models.Default is nil`},
		{"no adapter", Config{Store: st, Personas: []*runtime.Persona{&withProvider}, Models: Models{Default: d}}, `persona "sales" uses provider "anthropic", which Models.ByProvider does not serve`},
		{"two of a name", Config{Store: st, Personas: []*runtime.Persona{d.persona, d.persona}, Models: Models{Default: d}}, `two personas are named "support"`},
		{"each message of no persona", Config{Store: st, Personas: []*runtime.Persona{d.persona}, Models: Models{Default: d}, EachMessage: []string{"sales"}}, `Config.EachMessage names "sales"`},
		{"negative workers", Config{Store: st, Personas: []*runtime.Persona{d.persona}, Models: Models{Default: d}, Workers: -1}, "negative Workers"},
		{"negative limit", Config{Store: st, Personas: []*runtime.Persona{d.persona}, Models: Models{Default: d, Limits: map[string]Limit{"m": {Concurrent: -1}}}}, `Models.Limits["m"] is negative`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v; want ErrConfig saying %q", err, tc.want)
			}
		})
	}
}

// Messages of several threads arrive while the service runs: every thread is answered, each
// reply is sent once, and a thread that got several messages at once is answered by one run
// that sees them all (never by two runs at the same time).
func TestServiceAnswersArrivingMailOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		sender := &memSender{}
		svc, _ := start(t, config(st, d, sender, "w1", nil))
		var wg sync.WaitGroup
		for th := range 8 {
			wg.Go(func() {
				root := fmt.Sprintf("t%d@cust.example", th)
				if _, err := svc.Deliver(ctx, bytes.NewReader(email(root, "", "Question", "Where is my order?")), Envelope{Source: "test"}); err != nil {
					t.Error(err)
				}
				for k := range 2 {
					id := fmt.Sprintf("t%d-%d@cust.example", th, k)
					if _, err := svc.Deliver(ctx, bytes.NewReader(email(id, root, "Re: Question", "And also this.")), Envelope{Source: "test"}); err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		waitFor(t, "all work done", func() bool { return settled(t, st) })
		runs, err := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
		if err != nil {
			t.Fatal(err)
		}
		threads := map[string][]store.Run{}
		for _, r := range runs {
			if r.Status != store.RunSucceeded {
				t.Errorf("run %s is %s (%s)", r.Key, r.Status, r.Reason)
			}
			threads[r.ThreadID] = append(threads[r.ThreadID], r)
		}
		if len(threads) != 8 {
			t.Fatalf("%d threads answered, want 8", len(threads))
		}
		for th, rs := range threads {
			if len(rs) > 3 {
				t.Errorf("thread %s: %d runs for 3 messages", th, len(rs))
			}
			// The thread's last message is answered by its last run.
			last, err := st.Thread(ctx, th)
			if err != nil {
				t.Fatal(err)
			}
			if m := last[len(last)-1]; m.Direction != "outbound" {
				t.Errorf("thread %s ends with an unanswered message %s", th, m.MessageID)
			}
		}
		for id, n := range sender.counts() {
			if n != 1 {
				t.Errorf("reply %s sent %d times", id, n)
			}
		}
		if n := len(sender.counts()); n != len(runs) {
			t.Errorf("%d replies sent for %d runs", n, len(runs))
		}
	})
}

// A message delivered again after its thread was answered makes no second run.
func TestRedeliveryMakesNoSecondRun(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		sender := &memSender{}
		svc, _ := start(t, config(st, d, sender, "w1", nil))
		raw := email("q1@cust.example", "", "Refund", "Please refund my order.")
		for range 3 {
			if _, err := svc.Deliver(ctx, bytes.NewReader(raw), Envelope{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "work done", func() bool { return settled(t, st) })
		}
		if n := d.refunds.Load(); n != 1 {
			t.Errorf("refund ran %d times", n)
		}
		if n := d.calls.Load(); n != 2 {
			t.Errorf("%d model calls, want 2", n)
		}
		if got := replies(t, st); got["q1@cust.example"] != 1 || len(got) != 1 {
			t.Errorf("replies: %v", got)
		}
	})
}

// A model outage: the first calls fail transiently; the message is answered after it, and the
// model is called exactly as often as the retries say.
func TestModelOutageIsRetriedUntilItEnds(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		d.fail = func(n int64) error {
			if n <= 3 {
				return &chat.CallError{Provider: "test", StatusCode: 529, Transient: true, Err: errors.New("overloaded")}
			}
			return nil
		}
		sender := &memSender{}
		logs := &logBuffer{}
		svc, _ := start(t, config(st, d, sender, "w1", logs))
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Hello", "Hi there.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the message answered", func() bool { return settled(t, st) })
		if n := d.calls.Load(); n != 4 {
			t.Errorf("%d model calls, want 4 (3 failed, 1 answered)", n)
		}
		if got := replies(t, st); got["q1@cust.example"] != 1 {
			t.Errorf("replies: %v", got)
		}
		retries := 0
		for _, r := range logs.records(t) {
			if r["msg"] == "reply run stopped; will retry" {
				retries++
				if r["persona"] != "support" || r["thread"] == "" || r["run"] == "" || r["failure_class"] != "model_unavailable" {
					t.Errorf("retry record lacks persona, thread, run or class: %v", r)
				}
			}
		}
		if retries != 3 {
			t.Errorf("%d retry records, want 3", retries)
		}
	})
}

// A permanent failure ends the message's work at once (no retry, no more model calls), and the
// thread's next message is answered.
func TestPermanentFailureEndsTheWorkAndTheThreadGoesOn(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		d.fail = func(n int64) error {
			if n == 1 {
				return &chat.CallError{Provider: "test", StatusCode: 400, Err: errors.New("bad request")}
			}
			return nil
		}
		svc, _ := start(t, config(st, d, &memSender{}, "w1", nil))
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Hello", "Hi.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the first message's work ended", func() bool { return settled(t, st) })
		if n := d.calls.Load(); n != 1 {
			t.Errorf("%d model calls after a permanent failure, want 1", n)
		}
		runs, _ := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
		if len(runs) != 1 || runs[0].Status != store.RunFailed || runs[0].FailureClass != store.FailureRequestRefused {
			t.Fatalf("runs: %+v", runs)
		}
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q2@cust.example", "q1@cust.example", "Re: Hello", "Hello again.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the second message answered", func() bool { return settled(t, st) })
		if got := replies(t, st); got["q2@cust.example"] != 1 || got["q1@cust.example"] != 0 {
			t.Errorf("replies: %v", got)
		}
	})
}

// A graceful stop with a run in flight gives the run back; a second service resumes it at once
// (not after the lease), and the refund it ran is not run again.
func TestGracefulStopReleasesRunsInFlight(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		d.hold = make(chan struct{})
		cfg := config(st, d, &memSender{}, "w1", nil)
		cfg.ShutdownGrace = 50 * time.Millisecond
		cfg.Runner = nil
		svc, stop := start(t, cfg)
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Refund", "Please refund.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the model call in flight", func() bool { return d.calls.Load() == 1 })
		stop()
		runs, _ := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
		if len(runs) != 1 || runs[0].Status != store.RunRunning || runs[0].Lease.Holder != "" || runs[0].FailureClass != store.FailureShutdown {
			t.Fatalf("after the stop: %+v", runs)
		}
		pending, _ := st.PendingReplies(ctx, "", 10)
		if len(pending) != 1 || pending[0].Holder != "" || !pending[0].AvailableAt.IsZero() {
			t.Fatalf("pending after the stop: %+v", pending)
		}
		close(d.hold)
		start(t, config(st, d, &memSender{}, "w2", nil))
		waitFor(t, "the second service answers", func() bool { return settled(t, st) })
		if n := d.refunds.Load(); n != 1 {
			t.Errorf("refund ran %d times", n)
		}
		if got := replies(t, st); got["q1@cust.example"] != 1 {
			t.Errorf("replies: %v", got)
		}
	})
}

// Sends: a transient failure is retried with the same Message-ID; a permanent one is recorded on
// the reply and not retried.
func TestSendsRetryTransientAndRecordPermanentFailures(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		var mu sync.Mutex
		attempts := map[string][]int{}
		sender := &memSender{fail: func(m Outgoing) error {
			mu.Lock()
			defer mu.Unlock()
			attempts[m.MessageID] = append(attempts[m.MessageID], m.Attempt)
			switch {
			case strings.Contains(string(m.Raw), "Subject: Re: Bounce"):
				return Permanent(errors.New("550 5.1.1 no such user"))
			case len(attempts[m.MessageID]) < 3:
				return errors.New("451 4.3.0 try again")
			}
			return nil
		}}
		svc, _ := start(t, config(st, d, sender, "w1", nil))
		for _, m := range [][]byte{email("q1@cust.example", "", "Hello", "Hi."), email("q2@cust.example", "", "Bounce", "Hi.")} {
			if _, err := svc.Deliver(ctx, bytes.NewReader(m), Envelope{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "sends done", func() bool { return settled(t, st) })
		mu.Lock()
		defer mu.Unlock()
		if len(attempts) != 2 {
			t.Fatalf("attempts: %v", attempts)
		}
		for id, a := range attempts {
			want := "[1 2 3]"
			if strings.Contains(string(sender.raw[id]), "Bounce") || len(a) == 1 {
				want = "[1]"
			}
			if fmt.Sprint(a) != want {
				t.Errorf("reply %s: attempts %v, want %s", id, a, want)
			}
		}
		runs, _ := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
		states := map[string]string{}
		for _, r := range runs {
			rep, err := st.ReplyOf(ctx, r.Key)
			if err != nil {
				t.Fatal(err)
			}
			s, err := st.ReplyState(ctx, rep.Seq)
			if err != nil {
				t.Fatal(err)
			}
			states[rep.InReplyTo] = s.Status + " " + s.LastError
		}
		if states["q1@cust.example"] != "sent 451 4.3.0 try again" || states["q2@cust.example"] != "failed 550 5.1.1 no such user" {
			t.Errorf("states: %q", states)
		}
	})
}

func TestHandlerServesHealthReadinessAndMetrics(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "sqlite::memory:")
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d := newDesk()
	svc, stop := start(t, config(st, d, &memSender{}, "w1", nil))
	if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Refund", "Please refund.")), Envelope{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the message answered", func() bool { return settled(t, st) })
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q", code, body)
	}
	if code, body := get("/readyz"); code != 200 || strings.TrimSpace(body) != `{"ready":true}` {
		t.Errorf("/readyz = %d %q", code, body)
	}
	code, body := get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`personagen_runs_total{failure_class="",kind="reply",otel_scope_name="github.com/personagen/personagen/runtime/service"`,
		`outcome="succeeded",persona="support"`,
		`personagen_tool_calls_total{otel_scope_name="github.com/personagen/personagen/runtime/service",otel_scope_schema_url="",otel_scope_version="",outcome="ok",persona="support",tool="refund"} 1`,
		`personagen_model_tokens_total{gen_ai_provider_name="",gen_ai_request_model="",otel_scope_name="github.com/personagen/personagen/runtime/service",otel_scope_schema_url="",otel_scope_version="",type="input"} 10`,
		`personagen_outbox_sends_total{otel_scope_name="github.com/personagen/personagen/runtime/service",otel_scope_schema_url="",otel_scope_version="",outcome="sent",persona="support"} 1`,
		`personagen_messages_delivered_total{otel_scope_name="github.com/personagen/personagen/runtime/service",otel_scope_schema_url="",otel_scope_version="",outcome="pending",persona="support"} 1`,
		`personagen_work_pending{kind="reply"`,
		`gen_ai_client_operation_duration_seconds_count{gen_ai_provider_name="",gen_ai_request_model="",otel_scope_name="github.com/personagen/personagen/runtime/service",otel_scope_schema_url="",otel_scope_version=""} 2`,
		`personagen_claim_duration_seconds_count{kind="reply"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, h := range []struct{ series, want string }{
		{`gen_ai_client_operation_duration_seconds_bucket{gen_ai_provider_name="",gen_ai_request_model="",`,
			"0.01 0.02 0.04 0.08 0.16 0.32 0.64 1.28 2.56 5.12 10.24 20.48 40.96 81.92 +Inf"},
		{`personagen_claim_duration_seconds_bucket{kind="reply",`,
			"0.0005 0.001 0.0025 0.005 0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 +Inf"},
	} {
		if got := bucketBounds(body, h.series); got != h.want {
			t.Errorf("%s… le bounds = %s\nwant %s", h.series, got, h.want)
		}
	}
	stop()
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, "stopping") {
		t.Errorf("/readyz after the stop = %d %q", code, body)
	}
}

// bucketBounds returns the le labels of the first histogram series in a Prometheus exposition
// whose lines start with prefix, in order, space-separated.
func bucketBounds(exposition, prefix string) string {
	var les []string
	var series string
	for _, line := range strings.Split(exposition, "\n") {
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		before, after, ok := strings.Cut(line, `le="`)
		if !ok {
			continue
		}
		v, rest, _ := strings.Cut(after, `"`)
		labels, _, _ := strings.Cut(rest, "}")
		if series == "" {
			series = before + labels
		}
		if before+labels == series {
			les = append(les, v)
		}
	}
	return strings.Join(les, " ")
}

// A persona's responsibility fires while the service runs; the host's OnFire hook gets the
// run's output, and the log records it.
func TestServiceFiresResponsibilities(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "sqlite:"+t.TempDir()+"/store.db")
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	d := newDesk()
	d.persona.ResponsibilityChain = runtime.NewChain(runtime.Step{Kind: "load_text",
		Resolver: &runtime.LoadText{Text: "Write the digest.", Role: chat.RoleUser}})
	d.persona.Responsibilities = []runtime.Responsibility{{Name: "digest", Schedule: "@every 1s", Enabled: true}}
	cfg := config(st, d, &memSender{}, "w1", &logBuffer{})
	cfg.NoSchedule = false
	reports := make(chan schedule.Report, 10)
	cfg.OnFire = func(r schedule.Report) { reports <- r }
	start(t, cfg)
	select {
	case r := <-reports:
		if r.Recorded.Status != store.RunSucceeded || r.Result.Text != "Thanks for writing." || r.Fire.Responsibility.Name != "digest" {
			t.Errorf("report: %+v", r)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no fire within 60 s")
	}
}

// A delivery report for a sent reply, delivered like any mail, marks the reply bounced.
func TestDeliveredBounceMarksTheReply(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		sender := &memSender{}
		svc, _ := start(t, config(st, d, sender, "w1", nil))
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Hello", "Hi.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the reply sent", func() bool { return settled(t, st) && len(sender.counts()) == 1 })
		var replyID string
		for id := range sender.counts() {
			replyID = id
		}
		dsnMail := "From: Mail Delivery System <MAILER-DAEMON@mx.cust.example>\r\nTo: support@acme.example\r\n" +
			"Subject: Undelivered Mail Returned to Sender\r\nMessage-ID: <bounce-1@mx.cust.example>\r\nDate: Mon, 02 Mar 2026 11:00:00 +0000\r\n" +
			"MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n" +
			"--b\r\nContent-Type: text/plain\r\n\r\nYour message could not be delivered.\r\n" +
			"--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.cust.example\r\n\r\n" +
			"Final-Recipient: rfc822; ann@cust.example\r\nAction: failed\r\nStatus: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 <ann@cust.example>: Recipient address rejected\r\n" +
			"--b\r\nContent-Type: text/rfc822-headers\r\n\r\nMessage-ID: <" + replyID + ">\r\nSubject: Re: Hello\r\n--b--\r\n"
		if _, err := svc.Deliver(ctx, strings.NewReader(dsnMail), Envelope{Source: "test"}); err != nil {
			t.Fatal(err)
		}
		runs, _ := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
		rep, err := st.ReplyOf(ctx, runs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		state, err := st.ReplyState(ctx, rep.Seq)
		if err != nil || state.Status != "bounced" || state.BounceStatus != "5.1.1" || !strings.Contains(state.BounceDiagnostic, "Recipient address rejected") {
			t.Errorf("reply state = %+v, %v", state, err)
		}
		if n := d.calls.Load(); n != 1 {
			t.Errorf("%d model calls: the bounce must not be answered", n)
		}
	})
}

// A thread whose earlier message's run was cut off (it stopped transiently, nobody resumes it)
// and that got a later message: the claim of the later message resumes the earlier run first,
// then answers the later message in the same claim — no second claim, no wait for the thread.
func TestClaimResumesTheThreadsUnfinishedRunFirst(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		d.fail = func(n int64) error {
			if n == 1 {
				return &chat.CallError{Provider: "test", StatusCode: 529, Transient: true, Err: errors.New("overloaded")}
			}
			return nil
		}
		logs := &logBuffer{}
		cfg := config(st, d, &memSender{}, "w1", logs)
		deliverer, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		in, err := deliverer.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Hello", "Hi.")), Envelope{})
		if err != nil {
			t.Fatal(err)
		}
		// The first run stops at its model's outage and stays running, its lease released.
		first := &agent.Runner{Store: st, Model: d, Holder: "w0", Logger: slog.New(slog.DiscardHandler)}
		if _, err := first.Reply(ctx, agent.Inbound{Persona: d.persona, Message: store.Message{Message: history.Message{Seq: in.Deliveries[0].Message.Seq}}}); err == nil {
			t.Fatal("the first run did not stop")
		}
		later, err := deliverer.Deliver(ctx, bytes.NewReader(email("q2@cust.example", "q1@cust.example", "Re: Hello", "Hello again.")), Envelope{})
		if err != nil {
			t.Fatal(err)
		}
		start(t, cfg)
		waitFor(t, "both messages answered", func() bool { return settled(t, st) })
		if got := replies(t, st); got["q1@cust.example"] != 1 || got["q2@cust.example"] != 1 {
			t.Errorf("replies: %v", got)
		}
		if n := d.calls.Load(); n != 3 {
			t.Errorf("%d model calls, want 3 (the outage, the resumed run, the later message's run)", n)
		}
		var got []string
		for _, r := range logs.records(t) {
			switch r["msg"] {
			case "resuming the thread's unfinished run first", "thread busy with another run; waiting for it", "reply run finished":
				got = append(got, fmt.Sprintf("%s seq=%v already_finished=%v", r["msg"], r["seq"], r["already_finished"]))
			}
		}
		seq := later.Deliveries[0].Message.Seq
		want := []string{
			fmt.Sprintf("resuming the thread's unfinished run first seq=%d already_finished=<nil>", seq),
			fmt.Sprintf("reply run finished seq=%d already_finished=false", seq),
		}
		if !slices.Equal(got, want) {
			t.Errorf("log records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// The same thread during a model outage that does not end: the earlier run is retried with
// backoff until RetryPolicy.Attempts, then abandoned, and the later message is answered after it
// — tried, retried and abandoned in turn — so the work ends and the model calls are bounded.
func TestUnfinishedRunFirstIsRetriedWithinThePolicy(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		d.fail = func(n int64) error {
			return &chat.CallError{Provider: "test", StatusCode: 529, Transient: true, Err: errors.New("overloaded")}
		}
		cfg := config(st, d, &memSender{}, "w1", nil)
		deliverer, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		in, err := deliverer.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Hello", "Hi.")), Envelope{})
		if err != nil {
			t.Fatal(err)
		}
		first := &agent.Runner{Store: st, Model: d, Holder: "w0", Logger: slog.New(slog.DiscardHandler)}
		if _, err := first.Reply(ctx, agent.Inbound{Persona: d.persona, Message: store.Message{Message: history.Message{Seq: in.Deliveries[0].Message.Seq}}}); err == nil {
			t.Fatal("the first run did not stop")
		}
		if _, err := deliverer.Deliver(ctx, bytes.NewReader(email("q2@cust.example", "q1@cust.example", "Re: Hello", "Hello again.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		start(t, cfg)
		waitFor(t, "the work ended", func() bool { return settled(t, st) })
		runs, err := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range runs {
			got = append(got, fmt.Sprintf("%s attempt %d: %.34s", r.Status, r.Attempt, r.Reason))
		}
		// Attempts counts each run's attempts: the first run's stop in w0 is its first.
		want := []string{"abandoned attempt 6: retries exhausted after 6 attempts", "abandoned attempt 6: retries exhausted after 6 attempts"}
		if !slices.Equal(got, want) {
			t.Errorf("runs: %q, want %q", got, want)
		}
		if n := d.calls.Load(); n != 12 {
			t.Errorf("%d model calls, want 12 (6 attempts of each run)", n)
		}
	})
}

// A stop that begins while a claim's statement is on its way: the claim is made in the database
// all the same, and the stopping service gives it back at once instead of leaving it to its
// lease — reply work and send work alike.
func TestAClaimMadeAsTheServiceStopsIsGivenBack(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		// run runs a service on a store whose claim statement (match) ends the service's context
		// while it runs, and returns when the service stopped.
		run := func(match string, sender Sender) {
			t.Helper()
			svcCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			cut, err := store.Open(ctx, dsn, store.WithConnector(cutAt(match, cancel)))
			if err != nil {
				t.Fatal(err)
			}
			defer cut.Close()
			svc, err := New(config(cut, d, sender, "w1", nil))
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- svc.Run(svcCtx) }()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the service did not stop")
			}
		}
		deliverer, err := New(config(st, d, nil, "w0", nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := deliverer.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Hello", "Hi.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		run("claim_seq = ", nil)
		pending, err := st.PendingReplies(ctx, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(pending) != 1 || pending[0].Holder != "" || !pending[0].AvailableAt.IsZero() || pending[0].ClaimSeq != 1 {
			t.Fatalf("reply work after the stop: %+v; want it claimed (claim seq 1) and given back", pending)
		}
		if n := d.calls.Load(); n != 0 {
			t.Errorf("%d model calls by the stopping service", n)
		}

		// The reply is answered (no sender: it waits in the outbox), then a stopping service
		// claims it to send.
		_, stop := start(t, config(st, d, nil, "w2", nil))
		waitFor(t, "the message answered", func() bool {
			c, err := st.CountPending(ctx)
			return err == nil && c.Replies == 0 && c.Sends == 1
		})
		stop()
		sender := &memSender{}
		run("attempts = attempts + 1", sender)
		runs, err := st.Runs(ctx, store.RunQuery{Kind: store.RunReply})
		if err != nil || len(runs) != 1 {
			t.Fatalf("runs: %v, %v", runs, err)
		}
		rep, err := st.ReplyOf(ctx, runs[0].Key)
		if err != nil {
			t.Fatal(err)
		}
		state, err := st.ReplyState(ctx, rep.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if state.Status != "unsent" || state.Attempts != 1 || state.NextAt.After(time.Now()) {
			t.Errorf("the reply after the stop: %+v; want it claimed once and given back", state)
		}
		if n := len(sender.counts()); n != 0 {
			t.Errorf("the stopping service sent %d replies", n)
		}
	})
}

// A worker restarted under its holder name takes its earlier process's claims back at once:
// here claims an hour long (of a thread and of a reply to send) that a crash left behind.
func TestARestartUnderTheSameHolderResumesItsClaimsAtOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st := openStore(t, dsn)
		d := newDesk()
		// A reply waiting to be sent (answered by a service without a sender).
		svc, stop := start(t, config(st, d, nil, "w0", nil))
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "", "Hello", "Hi.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the first message answered", func() bool {
			c, err := st.CountPending(ctx)
			return err == nil && c.Replies == 0 && c.Sends == 1
		})
		stop()
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q2@cust.example", "", "Again", "Hi again.")), Envelope{}); err != nil {
			t.Fatal(err)
		}
		// The crashed process "w1" had claimed both, for an hour.
		if _, ok, err := st.ClaimReply(ctx, store.ReplyClaim{Mailboxes: []string{"support"}, Holder: "w1", LeaseFor: time.Hour}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		if _, ok, err := st.ClaimSend(ctx, store.SendClaim{Mailboxes: []string{"support"}, Holder: "w1", LeaseFor: time.Hour}); err != nil || !ok {
			t.Fatal(ok, err)
		}
		sender, logs := &memSender{}, &logBuffer{}
		start(t, config(st, d, sender, "w1", logs))
		waitFor(t, "the work of the crashed process done", func() bool { return settled(t, st) })
		if got := replies(t, st); got["q1@cust.example"] != 1 || got["q2@cust.example"] != 1 {
			t.Errorf("replies: %v", got)
		}
		if n := len(sender.counts()); n != 2 {
			t.Errorf("%d replies sent, want 2", n)
		}
		found := false
		for _, r := range logs.records(t) {
			if r["msg"] == "claims of this holder's earlier process given back" {
				found = r["replies"] == 1.0 && r["sends"] == 1.0
			}
		}
		if !found {
			t.Error("no log record of the 1 reply claim and 1 send claim given back")
		}
	})
}

// Mail for none of the service's personas is not stored, and the log says so with its
// addresses, so a mistyped address does not vanish without a trace.
func TestMailForNoPersonaIsLogged(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	st := openStore(t, dsn)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	svc, err := New(config(st, newDesk(), &memSender{}, "w1", logs))
	if err != nil {
		t.Fatal(err)
	}
	raw := bytes.Replace(email("lost@cust.example", "", "Hello", "Anyone?"), []byte("To: support@acme.example"), []byte("To: sales@acme.example"), 1)
	in, err := svc.Deliver(ctx, bytes.NewReader(raw), Envelope{Recipients: []string{"sales@acme.example"}, Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Deliveries) != 0 {
		t.Fatalf("delivered to %d personas, want none", len(in.Deliveries))
	}
	var got []string
	for _, r := range logs.records(t) {
		if r["msg"] == "message for no persona; not stored" {
			got = append(got, fmt.Sprint(r["message_id"], " ", r["to"], " ", r["recipients"], " ", r["source"]))
		}
	}
	if want := []string{"lost@cust.example [sales@acme.example] [sales@acme.example] test"}; !slices.Equal(got, want) {
		t.Errorf("log records:\n got %q\nwant %q", got, want)
	}
}
