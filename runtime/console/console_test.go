package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
)

// TestRetryOfAFailedReplyRunIsAnsweredByTheService: a message whose run failed for good (the
// provider refused the request) is retried from the console; the running service claims it
// again, resumes the same run and answers; the thread then shows the reply. The retry is a run
// event with who and why; a second retry of the now succeeded run is refused.
func TestRetryOfAFailedReplyRunIsAnsweredByTheService(t *testing.T) {
	eachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		d := newDesk()
		d.refusing.Store(true)
		sender := &memSender{}
		svc := startService(t, st, d, sender)
		if _, err := svc.Deliver(ctx, bytes.NewReader(email("q1@cust.example", "Invoice INV-2025-0117", "Is it paid?")), service.Envelope{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the run to fail", func() bool {
			runs, _ := st.ListRuns(ctx, store.RunFilter{Status: store.RunFailed})
			return len(runs) == 1
		})
		failed := onlyRun(t, st)
		if failed.FailureClass != store.FailureRequestRefused {
			t.Fatalf("failed run = %+v", failed)
		}
		_, srv := newConsole(t, st)
		c := client{t, srv}
		if page := c.get("/runs?status=failed"); !strings.Contains(strings.ToLower(page), strings.ToLower(url.QueryEscape(failed.Key))) {
			t.Fatalf("the failed runs page does not link to %s:\n%s", failed.Key, page)
		}
		d.refusing.Store(false)
		runPage := "/run?key=" + url.QueryEscape(failed.Key)
		loc := c.post(runPage, "/run/retry", url.Values{"key": {failed.Key}, "reason": {"the API key is fixed"}})
		if want := "/run?done=retried&key=" + url.QueryEscape(failed.Key); loc != want {
			t.Errorf("redirect to %q, want %q", loc, want)
		}
		waitFor(t, "the retried run to succeed and its reply to be sent", func() bool {
			r, _ := st.Run(ctx, failed.Key)
			return r.Status == store.RunSucceeded && sender.count() == 1 && replySent(st, failed.Key)
		})
		done := onlyRun(t, st)
		if done.Key != failed.Key || done.Attempt != failed.Attempt+1 || done.FailureClass != "" && done.FailureClass != failed.FailureClass {
			t.Errorf("the retried run = %+v, was %+v", done, failed)
		}
		evs, err := st.RunEvents(ctx, failed.Key)
		if err != nil || len(evs) != 1 || evs[0].Kind != store.RunReopened || evs[0].By != "console:ada" || evs[0].Reason != "the API key is fixed" ||
			evs[0].PriorStatus != store.RunFailed {
			t.Errorf("events = %+v, %v", evs, err)
		}
		thread := c.get("/thread?id=" + url.QueryEscape(done.ThreadID))
		for _, want := range []string{"Is it paid?", "Your invoice INV-2025-0117 is paid.", `<span class="badge sent">sent</span>`,
			`<span class="badge succeeded">succeeded</span>`} {
			if !strings.Contains(thread, want) {
				t.Errorf("the thread page lacks %q", want)
			}
		}
		if _, err := Retry(ctx, st, failed.Key, Actor{By: "cli:ops"}); !errors.Is(err, ErrRefused) {
			t.Errorf("retry of a succeeded run = %v, want ErrRefused", err)
		}
	})
}

// TestActionsAreIdempotentAndRefuseWhatDoesNotApply drives Retry, Abandon, Resend and RunFire
// on the store alone (no service): each records once, a repeat is Already, and a request that
// does not apply is refused or not found.
func TestActionsAreIdempotentAndRefuseWhatDoesNotApply(t *testing.T) {
	eachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		ops := Actor{By: "cli:ops", Reason: "test"}
		seq, err := st.AppendMessage(ctx, inbound("support/t1", "q1@cust.example"))
		if err != nil {
			t.Fatal(err)
		}
		run, _, err := st.StartRun(ctx, store.NewRun{Key: "reply:support/q1", Kind: store.RunReply, Persona: "support", ThreadID: "support/t1",
			MessageSeq: seq.Seq, Holder: "w1"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Abandon(ctx, st, run.Key, ops); !errors.Is(err, ErrRefused) {
			t.Errorf("abandon under a live lease = %v, want ErrRefused", err)
		}
		if _, err := Retry(ctx, st, run.Key, ops); !errors.Is(err, ErrRefused) {
			t.Errorf("retry of a running run = %v, want ErrRefused", err)
		}
		if _, err := st.FinishRun(ctx, run.Key, "w1", store.Finish{Status: store.RunFailed, Reason: "boom", Class: store.FailureHostError}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CompleteReply(ctx, "support", "support/t1", seq.Seq, ""); err != nil {
			t.Fatal(err)
		}
		for i, want := range []Outcome{Done, Already} {
			if out, err := Retry(ctx, st, run.Key, ops); err != nil || out != want {
				t.Errorf("retry %d = %v, %v; want %v", i+1, out, err, want)
			}
		}
		pending, err := st.PendingReplies(ctx, "support", 10)
		if err != nil || len(pending) != 1 || pending[0].ThreadID != "support/t1" || pending[0].LastSeq != seq.Seq {
			t.Errorf("pending after the retry = %+v, %v", pending, err)
		}
		for i, want := range []Outcome{Done, Already} {
			if out, err := Abandon(ctx, st, run.Key, ops); err != nil || out != want {
				t.Errorf("abandon %d = %v, %v; want %v", i+1, out, err, want)
			}
		}
		evs, _ := st.RunEvents(ctx, run.Key)
		if len(evs) != 2 || evs[0].Kind != store.RunReopened || evs[1].Kind != store.RunGivenUp {
			t.Errorf("events = %+v", evs)
		}
		for _, err := range []error{
			second(Retry(ctx, st, "nope", ops)), second(Abandon(ctx, st, "nope", ops)), second(Resend(ctx, st, 99999, ops)),
		} {
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("an action on nothing = %v, want ErrNotFound", err)
			}
		}
		// A fire: one of a responsibility with a trail is recorded missed, then reopened.
		at := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
		if _, _, err := st.StartRun(ctx, store.NewRun{Key: "daily-1", Kind: store.RunScheduled, Persona: "research", Responsibility: "daily-digest",
			FireAt: at.Add(-24 * time.Hour), Status: store.RunSkipped, Reason: "missed"}); err != nil {
			t.Fatal(err)
		}
		key, out, err := RunFire(ctx, st, "research", "daily-digest", at, ops)
		if err != nil || out != Done {
			t.Fatalf("RunFire = %v, %v", out, err)
		}
		if fr, err := st.Run(ctx, key); err != nil || fr.Status != store.RunRunning || fr.Lease.Holder != "" || !fr.FireAt.Equal(at) {
			t.Errorf("the fire's run = %+v, %v", fr, err)
		}
		if _, out, err := RunFire(ctx, st, "research", "daily-digest", at, ops); err != nil || out != Already {
			t.Errorf("second RunFire = %v, %v; want Already", out, err)
		}
		if _, _, err := RunFire(ctx, st, "research", "dialy-digest", at, ops); !errors.Is(err, ErrNotFound) {
			t.Errorf("RunFire of a mistyped responsibility = %v, want ErrNotFound", err)
		}
		if _, _, err := RunFire(ctx, st, "research", "daily-digest", time.Now().Add(time.Hour), ops); !errors.Is(err, ErrRefused) {
			t.Errorf("RunFire of a fire to come = %v, want ErrRefused", err)
		}
	})
}

func second[T any](_ T, err error) error { return err }

func inbound(thread, id string) store.Message {
	m := store.Message{Mailbox: "support"}
	m.ThreadID, m.MessageID, m.Direction = thread, id, "inbound"
	m.From, m.To, m.Subject, m.Text = "Ann <ann@cust.example>", []string{"support@acme.example"}, "Invoice", "Is it paid?"
	m.Date = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	return m
}

// TestTheConsoleIsLockedDown: no credentials, wrong ones → 401 with a Basic challenge; a POST
// without the CSRF token, with another user's, or from another origin → 403 and nothing done;
// every response carries the exact Content-Security-Policy; New refuses to serve without
// credentials.
func TestTheConsoleIsLockedDown(t *testing.T) {
	st := openStore(t, "sqlite:"+t.TempDir()+"/store.db")
	_, srv := newConsole(t, st)
	c := client{t, srv}
	res, _ := c.do("GET", "/", nil, false)
	if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Basic realm="personagen console", charset="UTF-8"` {
		t.Errorf("without credentials: %s %q", res.Status, res.Header.Get("WWW-Authenticate"))
	}
	if got := res.Header.Get("Content-Security-Policy"); got != ContentSecurityPolicy {
		t.Errorf("the 401's CSP = %q", got)
	}
	for _, h := range []string{"Basic " + basic("ada", "wrong password!!"), "Basic " + basic("eve", testAuth.Password), "Bearer " + testAuth.Password} {
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Header.Set("Authorization", h)
		if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %v, %v; want 401", h, res.Status, err)
		}
	}
	res, _ = c.do("GET", "/", nil, true)
	want := map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options":  "nosniff", "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
	}
	for k, v := range want {
		if got := res.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	seq := mustReply(t, st)
	form := url.Values{"seq": {itoa(seq)}, "reason": {"again"}}
	if res, _ := c.do("POST", "/outbox/resend", form, true); res.StatusCode != http.StatusForbidden {
		t.Errorf("POST without a CSRF token: %s, want 403", res.Status)
	}
	form.Set("csrf", testAuth.csrfToken("eve"))
	if res, _ := c.do("POST", "/outbox/resend", form, true); res.StatusCode != http.StatusForbidden {
		t.Errorf("POST with another user's token: %s, want 403", res.Status)
	}
	form.Set("csrf", testAuth.csrfToken("ada"))
	req, _ := http.NewRequest("POST", srv.URL+"/outbox/resend", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.SetBasicAuth(testAuth.User, testAuth.Password)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST: %v, %v; want 403", res.Status, err)
	}
	if acts, _ := st.OperatorActions(context.Background(), "", 0); len(acts) != 0 {
		t.Errorf("a refused POST acted: %+v", acts)
	}
	key := waitingRun(t, st, "t1", `{"order":"A-17"}`)
	for _, path := range []string{"/approvals/approve", "/approvals/deny"} {
		decision := url.Values{"key": {key}, "call": {"c2"}, "note": {"ok"}}
		if res, _ := c.do("POST", path, decision, true); res.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s without a CSRF token: %s, want 403", path, res.Status)
		}
		decision.Set("csrf", testAuth.csrfToken("eve"))
		if res, _ := c.do("POST", path, decision, true); res.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s with another user's token: %s, want 403", path, res.Status)
		}
		decision.Set("csrf", testAuth.csrfToken("ada"))
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(decision.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		req.SetBasicAuth(testAuth.User, testAuth.Password)
		if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("a cross-site POST %s: %v, %v; want 403", path, res.Status, err)
		}
		if res, _ := c.do("POST", path, decision, false); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without credentials: %s, want 401", path, res.Status)
		}
	}
	if list, _ := st.Approvals(context.Background(), store.ApprovalQuery{Status: store.ApprovalWaiting}); len(list) != 1 {
		t.Errorf("a refused POST decided: %+v", list)
	}
	// The right token acts (the reply is waiting already, so nothing is recorded).
	if res, _ := c.do("POST", "/outbox/resend", form, true); res.StatusCode != http.StatusSeeOther {
		t.Errorf("POST with the token: %s, want 303", res.Status)
	}
	for _, a := range []Auth{{}, {User: "ada"}, {Token: "short"}, {User: "ada", Password: "short"}} {
		if _, err := New(Config{Store: st, Auth: a}); err == nil {
			t.Errorf("New with %+v served", a)
		}
	}
	if _, err := New(Config{Store: st}); !errors.Is(err, ErrNoAuth) {
		t.Errorf("New without credentials = %v, want ErrNoAuth", err)
	}
	t.Setenv(EnvToken, "a-long-enough-token")
	t.Setenv(EnvUser, "")
	t.Setenv(EnvPassword, "")
	if a, err := AuthFromEnv(); err != nil || a.Token != "a-long-enough-token" {
		t.Errorf("AuthFromEnv = %+v, %v", a, err)
	}
	tok, err := New(Config{Store: st, Auth: Auth{Token: "a-long-enough-token"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"Bearer a-long-enough-token", "Basic " + basic("ops", "a-long-enough-token")} {
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("Authorization", h)
		rec := httptest.NewRecorder()
		tok.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("token auth %q: %d, want 200", h, rec.Code)
		}
	}
}

func basic(user, pass string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// mustReply stores an inbound message and a reply to it (in the outbox, unsent) and returns
// the reply's seq.
func mustReply(t *testing.T, st *store.Store) int64 {
	t.Helper()
	ctx := context.Background()
	if _, err := st.AppendMessage(ctx, inbound("support/t9", "q9@cust.example")); err != nil {
		t.Fatal(err)
	}
	r := inbound("support/t9", "r9@acme.example")
	r.Direction, r.RunKey, r.From = "outbound", "reply:support/q9", "Acme Support <support@acme.example>"
	a, err := st.AppendMessage(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	return a.Seq
}
