package console

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// waitingRun stores a message of thread and a run of persona "support" answering it that waits
// for approval of its refund call "c2" with the arguments args (the lookup "c1" needs none),
// and returns the run's key.
func waitingRun(t *testing.T, st *store.Store, thread, args string) string {
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
			{ID: "c2", Name: "refund", Input: json.RawMessage(args)}},
		ApprovalRequests: []store.ApprovalRequest{{Position: 1, Input: json.RawMessage(`{"order":"A-17","note":"red"}`), Timeout: 48 * time.Hour}}}
	if _, err := st.StartTurn(ctx, "w1", turn); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WaitRun(ctx, key, "w1"); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestDecideRecordsOnceAndRefusesWhatDoesNotApply drives Decide on the store alone: a
// decision is Done, the same decision again Already (the first decider and note kept), the
// other decision and a decision after the deadline are refused naming what stands, a run or
// call that is not there is not found, a note too long is invalid; a waiting run is not
// retried or abandoned (decide its calls instead).
func TestDecideRecordsOnceAndRefusesWhatDoesNotApply(t *testing.T) {
	eachDSN(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		clock := storetest.NewClock(time.Now())
		st := openStore(t, dsn, store.WithClock(clock.Now))
		first, second, third := waitingRun(t, st, "t1", `{"order":"A-17"}`), waitingRun(t, st, "t2", `{"order":"A-18"}`), waitingRun(t, st, "t3", `{"order":"A-19"}`)
		ann, bob := Actor{By: "ann", Reason: "within the limit"}, Actor{By: "bob", Reason: "changed my mind"}
		a, out, err := Decide(ctx, st, first, "c2", store.ApprovalApproved, ann)
		if err != nil || out != Done || a.Status != store.ApprovalApproved || a.DecidedBy != "ann" || a.Note != "within the limit" {
			t.Fatalf("approve = %+v, %v, %v", a, out, err)
		}
		a, out, err = Decide(ctx, st, first, "c2", store.ApprovalApproved, bob)
		if err != nil || out != Already || a.DecidedBy != "ann" || a.Note != "within the limit" {
			t.Errorf("approve again = %+v, %v, %v; want Already, ann's decision kept", a, out, err)
		}
		_, _, err = Decide(ctx, st, first, "c2", store.ApprovalDenied, bob)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), `it was approved by "ann" at `) {
			t.Errorf("deny after the approval = %v, want ErrRefused naming ann's approval", err)
		}
		if _, out, err := Decide(ctx, st, second, "c2", store.ApprovalDenied, bob); err != nil || out != Done {
			t.Errorf("deny = %v, %v", out, err)
		}
		for _, c := range []struct {
			name      string
			key, call string
			status    store.ApprovalStatus
			a         Actor
			want      error
		}{
			{"an unknown run", "reply:nope", "c2", store.ApprovalApproved, ann, ErrNotFound},
			{"a call that needs no approval", third, "c1", store.ApprovalApproved, ann, ErrNotFound},
			{"an unknown call", third, "c9", store.ApprovalDenied, ann, ErrNotFound},
			{"a note too long", third, "c2", store.ApprovalDenied, Actor{By: "ann", Reason: strings.Repeat("x", store.MaxApprovalNoteBytes+1)}, store.ErrInvalid},
			{"no decider", third, "c2", store.ApprovalApproved, Actor{}, store.ErrInvalid},
			{"a status that is no decision", third, "c2", store.ApprovalExpired, ann, store.ErrInvalid},
		} {
			if _, _, err := Decide(ctx, st, c.key, c.call, c.status, c.a); !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		if _, err := Retry(ctx, st, third, ann); !errors.Is(err, ErrRefused) ||
			err.Error() != `console: refused: run "reply:support/t3" waits for approval: decide its calls (the approvals page, personagen approve or deny); a service resumes it then` {
			t.Errorf("retry of a waiting run = %v", err)
		}
		if _, err := Abandon(ctx, st, third, ann); !errors.Is(err, ErrRefused) {
			t.Errorf("abandon of a waiting run = %v, want ErrRefused", err)
		}
		clock.Advance(48 * time.Hour)
		_, _, err = Decide(ctx, st, third, "c2", store.ApprovalApproved, ann)
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "no decision came within 48h0m0s") {
			t.Errorf("approve after the deadline = %v, want ErrRefused saying it expired", err)
		}
		list, err := st.Approvals(ctx, store.ApprovalQuery{})
		if err != nil || len(list) != 3 || list[0].Status != store.ApprovalApproved || list[1].Status != store.ApprovalDenied ||
			list[1].DecidedBy != "bob" || list[2].Status != store.ApprovalExpired {
			t.Errorf("approvals = %+v, %v", list, err)
		}
	})
}

// TestApproveAndDenyFromTheConsoleResumeTheRun: two refunds wait for approval under a running
// service; the overview counts them, the runs page lists their runs as waiting, the approvals
// page shows each call (persona, run, thread, tool, arguments and decoded input, deadline and
// what it does) with its buttons. Approving one from the approvals page and denying the other
// from its run page resumes each run in the service: the approved refund runs once, the
// denied one never, and the model reads the denial with its reason. Deciding again the same
// way says so; the other way is refused with the decision that stands. The decisions are
// listed with who (the console user) decided when and the note.
func TestApproveAndDenyFromTheConsoleResumeTheRun(t *testing.T) {
	eachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		d := newDesk()
		sender := &memSender{}
		svc := startService(t, st, d, sender)
		for _, m := range []struct{ id, subject, body string }{
			{"r1@cust.example", "Order A-17", "Please refund order A-17."},
			{"r2@cust.example", "Money back", "I want a refund for A-17 too."},
		} {
			if _, err := svc.Deliver(ctx, bytes.NewReader(email(m.id, m.subject, m.body)), service.Envelope{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "both runs to wait for approval", func() bool {
			runs, _ := st.ListRuns(ctx, store.RunFilter{Status: store.RunWaiting})
			return len(runs) == 2
		})
		waiting, err := st.Approvals(ctx, store.ApprovalQuery{Status: store.ApprovalWaiting})
		if err != nil || len(waiting) != 2 {
			t.Fatalf("waiting approvals = %+v, %v", waiting, err)
		}
		approve, deny := waiting[0], waiting[1]
		if m, _ := st.MessageBySeq(ctx, approve.MessageSeq); m.MessageID != "r1@cust.example" {
			approve, deny = deny, approve
		}
		_, srv := newConsole(t, st)
		c := client{t, srv}

		if page := c.get("/"); !strings.Contains(page, `<a class="card warn" href="/approvals"><span class="n">2</span> calls waiting for approval</a>`) {
			t.Errorf("the overview lacks the approvals card:\n%s", page)
		}
		runs := c.get("/runs?status=waiting")
		for _, a := range waiting {
			if !strings.Contains(runs, `href="/run?key=`+queryEscape(a.RunKey)+`"`) {
				t.Errorf("the waiting runs page does not link to %s", a.RunKey)
			}
		}
		if n := strings.Count(runs, `<span class="badge waiting">waiting</span>`); n != 2 {
			t.Errorf("the waiting runs page shows %d waiting badges, want 2", n)
		}
		page := c.get("/approvals")
		for _, a := range waiting {
			for _, want := range []string{
				`<article class="approval waiting" id="approval-` + itoa(a.ID) + `">`,
				`<span class="tool">refund</span> <span class="badge waiting">waiting</span> <span class="quiet">call ` + a.CallID + `</span>`,
				`<dt>Persona</dt><dd>support</dd>`,
				`<a href="/run?key=` + queryEscape(a.RunKey) + `">` + html.EscapeString(a.RunKey) + `</a> <span class="badge waiting">waiting</span> · model call 0`,
				`<a href="/thread?id=` + queryEscape(a.ThreadID) + `#m` + itoa(a.MessageSeq) + `">`,
				`<dt>Deadline</dt><dd>` + a.ExpiresAt.Format("2006-01-02 15:04:05Z") + ` (in `,
				`): the call is denied: it does not run</dd>`,
				`<input type="hidden" name="key" value="` + html.EscapeString(a.RunKey) + `"><input type="hidden" name="call" value="` + a.CallID + `">`,
			} {
				if !strings.Contains(page, want) {
					t.Errorf("the approvals page lacks %q", want)
				}
			}
		}
		if n := strings.Count(page, "<pre class=\"args\">{\n  &#34;order&#34;: &#34;A-17&#34;\n}</pre>"); n != 4 {
			t.Errorf("the approvals page shows the arguments and input %d times, want 4 (two calls):\n%s", n, page)
		}
		if n := strings.Count(page, `<button type="submit">Approve</button>`); n != 2 {
			t.Errorf("%d Approve buttons, want 2", n)
		}
		thread := c.get("/thread?id=" + url.QueryEscape(deny.ThreadID))
		if want := ` · <a href="/approvals?run=` + queryEscape(deny.RunKey) + `">decide its calls</a>`; !strings.Contains(thread, want) {
			t.Errorf("the waiting run's thread lacks %q", want)
		}
		if page := c.get("/approvals?run=" + url.QueryEscape(deny.RunKey)); strings.Count(page, "<article") != 1 || !strings.Contains(page, `id="approval-`+itoa(deny.ID)+`"`) {
			t.Errorf("the approvals of one run:\n%s", page)
		}

		loc := c.post("/approvals", "/approvals/approve", url.Values{"key": {approve.RunKey}, "call": {approve.CallID}, "note": {"within the limit"}})
		if loc != "/approvals?done=approved" {
			t.Errorf("approve redirects to %q", loc)
		}
		waitFor(t, "the approved run to finish and its reply to be sent", func() bool {
			r, _ := st.Run(ctx, approve.RunKey)
			return r.Status == store.RunSucceeded && sender.count() == 1 && replySent(st, approve.RunKey)
		})
		if rep, err := st.ReplyOf(ctx, approve.RunKey); err != nil || rep.Text != "Done: refunded A-17" {
			t.Errorf("the approved run's reply = %q, %v", rep.Text, err)
		}
		if n := d.refunds.Load(); n != 1 {
			t.Errorf("%d refunds after the approval, want 1", n)
		}
		if loc := c.post("/approvals", "/approvals/approve", url.Values{"key": {approve.RunKey}, "call": {approve.CallID}}); loc != "/approvals?done=already" {
			t.Errorf("approving again redirects to %q, want the already flash", loc)
		}
		form := url.Values{"key": {approve.RunKey}, "call": {approve.CallID}, "note": {"no"}, "csrf": {testAuth.csrfToken("ada")}}
		res, body := c.do("POST", "/approvals/deny", form, true)
		if res.StatusCode != http.StatusConflict || !strings.Contains(body, `it was approved by &#34;ada&#34; at `) {
			t.Errorf("denying an approved call: %s\n%s", res.Status, body)
		}

		runPage := "/run?key=" + url.QueryEscape(deny.RunKey)
		rp := c.get(runPage)
		for _, want := range []string{
			`<summary>refund <span class="badge waiting for approval">waiting for approval</span></summary>`,
			`<p class="note">Not run: the call waits for a person's decision (Approvals, above).</p>`,
			`<input type="hidden" name="back" value="run">`,
			`<dt>Waiting</dt>`,
		} {
			if !strings.Contains(rp, want) {
				t.Errorf("the waiting run's page lacks %q", want)
			}
		}
		note := "Over the refund limit; offer store credit."
		loc = c.post(runPage, "/approvals/deny", url.Values{"key": {deny.RunKey}, "call": {deny.CallID}, "note": {note}, "back": {"run"}})
		if want := "/run?done=denied&key=" + url.QueryEscape(deny.RunKey); loc != want {
			t.Errorf("deny from the run page redirects to %q, want %q", loc, want)
		}
		waitFor(t, "the denied run to finish and its reply to be sent", func() bool {
			r, _ := st.Run(ctx, deny.RunKey)
			return r.Status == store.RunSucceeded && sender.count() == 2
		})
		want := "Done: [denied] A person reviewed this call of refund and denied it, so it did not run. The reason given: " + note
		if rep, err := st.ReplyOf(ctx, deny.RunKey); err != nil || rep.Text != want {
			t.Errorf("the denied run's reply = %q, %v; want %q", rep.Text, err, want)
		}
		if n := d.refunds.Load(); n != 1 {
			t.Errorf("%d refunds after the denial, want 1", n)
		}

		if page := c.get("/approvals"); !strings.Contains(page, `<p class="quiet">No call waits for approval.</p>`) || strings.Contains(page, "<article") {
			t.Errorf("the waiting approvals after the decisions:\n%s", page)
		}
		if page := c.get("/"); !strings.Contains(page, `<a class="card" href="/approvals"><span class="n">0</span> calls waiting for approval</a>`) {
			t.Errorf("the overview's approvals card after the decisions is not 0")
		}
		decided, err := st.Approvals(ctx, store.ApprovalQuery{})
		if err != nil || len(decided) != 2 {
			t.Fatal(decided, err)
		}
		for _, a := range decided {
			if a.DecidedBy != "ada" {
				t.Errorf("call %s of %s decided by %q, want the console user ada", a.CallID, a.RunKey, a.DecidedBy)
			}
		}
		all := c.get("/approvals?status=all")
		for _, a := range decided {
			noteHTML := `<span class="quiet">none</span>`
			if a.Note != "" {
				noteHTML = `<pre class="notetext">` + html.EscapeString(a.Note) + `</pre>`
			}
			for _, want := range []string{
				`<article class="approval ` + string(a.Status) + `" id="approval-` + itoa(a.ID) + `">`,
				`<dt>Decided</dt><dd>` + string(a.Status) + ` by <span class="by">ada</span> at ` + a.DecidedAt.Format("2006-01-02 15:04:05Z") + `</dd>`,
				`<dt>Note</dt><dd>` + noteHTML + `</dd>`,
			} {
				if !strings.Contains(all, want) {
					t.Errorf("the decided approvals page lacks %q", want)
				}
			}
		}
		if strings.Contains(all, "<form method=\"post\"") {
			t.Error("a decided call still has a form")
		}
		if page := c.get("/approvals?status=denied"); strings.Count(page, "<article") != 1 || !strings.Contains(page, html.EscapeString(note)) {
			t.Errorf("the denied approvals page:\n%s", page)
		}
		if page := c.get("/run?key=" + url.QueryEscape(approve.RunKey)); !strings.Contains(page, `<summary>refund <span class="badge ok">ok</span></summary>`) ||
			!strings.Contains(page, `<dt>Ran</dt><dd>started `) {
			t.Errorf("the approved run's page does not show the call run:\n%s", page)
		}
	})
}

// TestDecisionRequestsThatDoNotApply: a POST without a run or call is 400, one naming a call
// that is not there 404, a note too long 400, an unknown status filter 400; nothing is
// decided.
func TestDecisionRequestsThatDoNotApply(t *testing.T) {
	st := openStore(t, "sqlite:"+t.TempDir()+"/store.db")
	key := waitingRun(t, st, "t1", hostileArgs)
	_, srv := newConsole(t, st)
	c := client{t, srv}
	tok := testAuth.csrfToken("ada")
	for _, r := range []struct {
		name   string
		path   string
		form   url.Values
		status int
		says   string
	}{
		{"no call", "/approvals/approve", url.Values{"key": {key}}, 400, "a decision names the run (key) and the call (call)"},
		{"an unknown call", "/approvals/deny", url.Values{"key": {key}, "call": {"c9"}}, 404, "no call of the run waits or waited for approval under that id"},
		{"an unknown run", "/approvals/deny", url.Values{"key": {"reply:nope"}, "call": {"c2"}}, 404, "run not found"},
		{"a note too long", "/approvals/deny", url.Values{"key": {key}, "call": {"c2"}, "note": {strings.Repeat("x", store.MaxApprovalNoteBytes+1)}}, 400, "note has 4097 bytes (at most 4096)"},
	} {
		r.form.Set("csrf", tok)
		res, body := c.do("POST", r.path, r.form, true)
		if res.StatusCode != r.status || !strings.Contains(body, html.EscapeString(r.says)) {
			t.Errorf("%s: %s, want %d saying %q\n%s", r.name, res.Status, r.status, r.says, body)
		}
	}
	if res, body := c.do("GET", "/approvals?status=pending", nil, true); res.StatusCode != 400 ||
		!strings.Contains(body, "status=&#34;pending&#34; (want waiting, approved, denied, expired or all)") {
		t.Errorf("an unknown status filter: %s\n%s", res.Status, body)
	}
	if list, _ := st.Approvals(context.Background(), store.ApprovalQuery{Status: store.ApprovalWaiting}); len(list) != 1 {
		t.Errorf("a refused request decided: %+v", list)
	}
}

// TestTheApprovalsPageShowsHiddenCharactersAsEscapes: a call's arguments with a terminal escape,
// a right-to-left override and a line separator are shown indented, each of those characters as
// its escape in a marked span, nothing of them raw.
func TestTheApprovalsPageShowsHiddenCharactersAsEscapes(t *testing.T) {
	st := openStore(t, "sqlite:"+t.TempDir()+"/store.db")
	waitingRun(t, st, "t1", hostileArgs)
	_, srv := newConsole(t, st)
	page := client{t, srv}.get("/approvals")
	want := "<pre class=\"args\">{\n  &#34;order&#34;: &#34;A-17&#34;,\n  &#34;note&#34;: &#34;\\u001b[31mred\\u001b[0m " +
		`<span class="ctl" title="a hidden character, shown as its escape">\u202e</span>gnp.exe ` +
		`<span class="ctl" title="a hidden character, shown as its escape">\u2028</span>end&#34;` + "\n}</pre>"
	if !strings.Contains(page, want) {
		t.Errorf("the approvals page lacks\n%s\nin\n%s", want, page)
	}
	if strings.ContainsAny(page, "\x1b\u202e\u2028") {
		t.Error("a control or bidi character reached the page")
	}
}

// queryEscape is s as html/template writes it into a URL's query: percent-escaped, the hex in
// lower case.
func queryEscape(s string) string {
	return regexp.MustCompile(`%[0-9A-F]{2}`).ReplaceAllStringFunc(url.QueryEscape(s), strings.ToLower)
}

func TestSpanAndUntilWordADuration(t *testing.T) {
	for _, c := range []struct {
		d           time.Duration
		span, until string
	}{
		{72 * time.Hour, "3 days", "in 3 days"},
		{71*time.Hour + 59*time.Minute + 30*time.Second, "2 days 23 hours", "in 2 days 23 hours"},
		{25 * time.Hour, "1 day 1 hour", "in 1 day 1 hour"},
		{36 * time.Hour, "1 day 12 hours", "in 1 day 12 hours"},
		{90 * time.Minute, "1 hour 30 minutes", "in 1 hour 30 minutes"},
		{2 * time.Hour, "2 hours", "in 2 hours"},
		{time.Minute, "1 minute", "in 1 minute"},
		{30 * time.Second, "0 minutes", "in less than a minute"},
		{0, "0 minutes", "passed"},
		{-time.Hour, "0 minutes", "passed"},
	} {
		if got := span(c.d); got != c.span && c.d >= 0 {
			t.Errorf("span(%v) = %q, want %q", c.d, got, c.span)
		}
		if got := until(c.d); got != c.until {
			t.Errorf("until(%v) = %q, want %q", c.d, got, c.until)
		}
	}
}

// TestTheDeciderIsWhoSignedIn: with a token, the decider is the user name the browser signed in
// with (the token as its password), and "token" for a bearer token; a name is cut to the
// store's limit and loses its surrounding spaces.
func TestTheDeciderIsWhoSignedIn(t *testing.T) {
	st := openStore(t, "sqlite:"+t.TempDir()+"/store.db")
	auth := Auth{Token: "a-long-enough-token"}
	c, err := New(Config{Store: st, Auth: auth, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", store.MaxNameChars+10)
	for i, sign := range []struct{ header, who, want string }{
		{"Basic " + basic("grace@acme.example", auth.Token), "grace@acme.example", "grace@acme.example"},
		{"Bearer " + auth.Token, "token", "token"},
		{"Basic " + basic("  Ada Lovelace ", auth.Token), "  Ada Lovelace ", "Ada Lovelace"},
		{"Basic " + basic(long, auth.Token), long, strings.Repeat("é", store.MaxNameChars-12) + "…[truncated]"},
	} {
		key := waitingRun(t, st, "t"+itoa(int64(i)), `{"order":"A-17"}`)
		form := url.Values{"key": {key}, "call": {"c2"}, "csrf": {auth.csrfToken(sign.who)}}
		req := httptest.NewRequest("POST", "/approvals/approve", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", sign.header)
		rec := httptest.NewRecorder()
		c.ServeHTTP(rec, req)
		if rec.Code != http.StatusSeeOther {
			t.Fatalf("%s: %d\n%s", sign.header, rec.Code, rec.Body)
		}
		list, err := st.Approvals(context.Background(), store.ApprovalQuery{RunKey: key})
		if err != nil || len(list) != 1 || list[0].DecidedBy != sign.want {
			t.Errorf("signed in with %q: decided by %q, %v; want %q", sign.who, list[0].DecidedBy, err, sign.want)
		}
	}
}

// TestTheApprovalsPageListsEveryWaitingCall: every waiting call is listed, the longest waiting
// first, however many wait; a list of every status stops at the 100 most recently requested,
// the latest first, and says so.
func TestTheApprovalsPageListsEveryWaitingCall(t *testing.T) {
	st := openStore(t, "sqlite:"+t.TempDir()+"/store.db")
	var keys []string
	for i := range approvalsLimit + 1 {
		keys = append(keys, waitingRun(t, st, fmt.Sprintf("t%03d", i), `{"order":"A-17"}`))
	}
	_, srv := newConsole(t, st)
	c := client{t, srv}
	runLink := regexp.MustCompile(`<dt>Run</dt><dd><a href="/run\?key=([^"]+)">`)
	links := func(page string) []string {
		var out []string
		for _, m := range runLink.FindAllStringSubmatch(page, -1) {
			out = append(out, m[1])
		}
		return out
	}
	page := c.get("/approvals")
	if got := links(page); len(got) != approvalsLimit+1 || got[0] != queryEscape(keys[0]) || got[approvalsLimit] != queryEscape(keys[approvalsLimit]) {
		t.Errorf("the waiting list links %d runs, from %s to %s", len(got), got[0], got[len(got)-1])
	}
	if strings.Contains(page, "most recently requested are shown") {
		t.Error("the waiting list says it is cut")
	}
	page = c.get("/approvals?status=all")
	if got := links(page); len(got) != approvalsLimit || got[0] != queryEscape(keys[approvalsLimit]) || got[approvalsLimit-1] != queryEscape(keys[1]) {
		t.Errorf("the list of all links %d runs, from %s to %s", len(got), got[0], got[len(got)-1])
	}
	if !strings.Contains(page, `<p class="quiet">The 100 most recently requested are shown; narrow the list by persona to see older ones.</p>`) {
		t.Error("the list of all does not say it is cut")
	}
}
