package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/service"
	"github.com/personagen/personagen/runtime/store"
)

// The console in a real browser: headless Chromium (Debian's chromium package), driven by
// chromedp, one browser shared by the tests. Without Chromium the tests skip, except under
// CI=true, where they fail. Screenshots of the main pages go to testdata/artifacts (ignored by
// git): test artifacts to look at, not goldens.

var (
	browserOnce   sync.Once
	browserCtx    context.Context
	browserCancel context.CancelFunc
	browserErr    error
)

// chromiumPath finds the browser: $PERSONAGEN_CHROMIUM, or chromium on PATH.
func chromiumPath() string {
	if p := os.Getenv("PERSONAGEN_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestMain(m *testing.M) {
	code := m.Run()
	if browserCancel != nil {
		browserCancel()
	}
	os.Exit(code)
}

// tab opens a new tab of the shared browser that sends ada's credentials with every request
// and records every request it makes and the headers of every document it loads.
func tab(t *testing.T) (context.Context, *traffic) {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium (install Debian's chromium package, or set PERSONAGEN_CHROMIUM); CI=true does not skip")
		}
		t.Skip("no Chromium on PATH (apt-get install chromium): skipping the browser tests")
	}
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
			chromedp.WindowSize(1280, 900),
			// Every host name but the console's address resolves to nothing, so that a payload
			// that got through could reach no other machine; the test sees the attempt.
			chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"))
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(alloc)
		browserErr = chromedp.Do(ctx) // starts the browser
		browserCtx = ctx
		browserCancel = func() { cancel(); cancelAlloc() }
	})
	if browserErr != nil {
		t.Fatalf("starting Chromium: %v", browserErr)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	tr := &traffic{docs: map[string]network.Headers{}, status: map[string]int64{}}
	if err := chromedp.Listen(ctx, tr.record); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(testAuth.User+":"+testAuth.Password))
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatal(err)
	}
	return ctx, tr
}

// traffic is what a tab asked the network for.
type traffic struct {
	mu       sync.Mutex
	requests []string
	docs     map[string]network.Headers // by URL: the headers of each document response
	status   map[string]int64           // by URL: the status of each document response
}

func (tr *traffic) record(ev any) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		tr.requests = append(tr.requests, ev.Request.URL)
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument {
			tr.docs[ev.Response.URL] = ev.Response.Headers
			tr.status[ev.Response.URL] = ev.Response.Status
		}
	}
}

// foreign returns the requests to anything but base (the console's own origin).
func (tr *traffic) foreign(base string) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for _, u := range tr.requests {
		if !strings.HasPrefix(u, base+"/") {
			out = append(out, u)
		}
	}
	return out
}

// header returns the header name of the document at u ("" when it was not loaded).
func (tr *traffic) header(u, name string) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for k, v := range tr.docs[u] {
		if strings.EqualFold(k, name) {
			return fmt.Sprint(v)
		}
	}
	return ""
}

// screenshot saves the tab's page as testdata/artifacts/name.png.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}

// actionTimeout bounds one browser action of a test, so that a page that never shows what a
// test waits for (a payload navigated it away, say) fails the test instead of hanging it.
const actionTimeout = 30 * time.Second

func run[T any](t *testing.T, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, actionTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// TestBrowserFindReadRetryAFailedRun: from the overview to the failed run, its timeline, the
// retry button, and the thread with the reply the service wrote after the retry; the pages as
// screenshots, the thread also at 360 px, where nothing is wider than the screen.
func TestBrowserFindReadRetryAFailedRun(t *testing.T) {
	ctx, tr := tab(t)
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	d := newDesk()
	d.refusing.Store(true)
	sender := &memSender{}
	svc := startService(t, st, d, sender)
	bg := context.Background()
	for i, m := range []struct{ id, subject, body string }{
		{"q1@cust.example", "Invoice INV-2025-0117", "Hello,\n\nis invoice INV-2025-0117 paid? Our accounts team asks.\n\nAnn"},
		{"q2@cust.example", "Cannot log in", "Since this morning the login page says my password is wrong."},
	} {
		if _, err := svc.Deliver(bg, bytes.NewReader(email(m.id, m.subject, m.body)), service.Envelope{}); err != nil {
			t.Fatal(err)
		}
		want := i + 1
		waitFor(t, "the runs to fail", func() bool {
			runs, _ := st.ListRuns(bg, store.RunFilter{Status: store.RunFailed})
			return len(runs) == want
		})
	}
	seedFire(t, st)
	_, srv := newConsole(t, st)
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("h1")))
	screenshot(t, ctx, "overview")
	if got := tr.header(srv.URL+"/", "Content-Security-Policy"); got != ContentSecurityPolicy {
		t.Errorf("the overview's CSP = %q, want %q", got, ContentSecurityPolicy)
	}
	d.refusing.Store(false)
	// Retry the invoice question's run.
	runs, err := st.ListRuns(bg, store.RunFilter{Status: store.RunFailed})
	if err != nil {
		t.Fatal(err)
	}
	var failed store.Run
	for _, r := range runs {
		if m, err := st.MessageBySeq(bg, r.MessageSeq); err == nil && m.MessageID == "q1@cust.example" {
			failed = r
		}
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`table.list a[href$="`+strings.ToLower(url.QueryEscape(failed.Key))+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("h1.key")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("h1.key"))); got != "Run "+failed.Key {
		t.Fatalf("the run page's heading = %q", got)
	}
	if got := run(t, ctx, chromedp.Text(chromedp.CSS(".badge"))); got != "failed · request_refused" {
		t.Errorf("the run's badge = %q", got)
	}
	screenshot(t, ctx, "run-failed")
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`form[action$="/run/retry"] input[name=reason]`), "the API key is rotated"),
		chromedp.Click(chromedp.CSS(`form[action$="/run/retry"] button`)), chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("p.flash"))); got != flashes["retried"] {
		t.Errorf("after the retry the page says %q", got)
	}
	waitFor(t, "the service to answer the retried run", func() bool {
		r, _ := st.Run(bg, failed.Key)
		return r.Status == store.RunSucceeded && sender.count() == 1 && replySent(st, failed.Key)
	})
	do(t, ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("h1.key")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS(".badge"))); got != "succeeded" {
		t.Errorf("after the service answered, the run's badge = %q", got)
	}
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("table.list tbody tr"))); !strings.Contains(got, "console:ada") || !strings.Contains(got, "the API key is rotated") {
		t.Errorf("the run's events = %q", got)
	}
	screenshot(t, ctx, "run-retried")
	do(t, ctx, chromedp.Click(chromedp.CSS(`dl.facts a[href*="/thread?id="]`)), chromedp.WaitVisible(chromedp.CSS("ol.conversation")))
	convo := run(t, ctx, chromedp.Text(chromedp.CSS("ol.conversation")))
	for _, want := range []string{"is invoice INV-2025-0117 paid?", "Your invoice INV-2025-0117 is paid.", "sent"} {
		if !strings.Contains(convo, want) {
			t.Errorf("the thread lacks %q:\n%s", want, convo)
		}
	}
	screenshot(t, ctx, "thread")
	do(t, ctx, chromedp.EmulateViewport(360, 800), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("ol.conversation")))
	if w := run(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
		t.Errorf("at 360 px the thread page is %d px wide", w)
	}
	screenshot(t, ctx, "thread-360")
	for _, p := range []struct{ path, name string }{{"/threads", "threads"}, {"/runs?status=failed", "runs-failed"}, {"/fires", "fires"}, {"/outbox", "outbox"}} {
		do(t, ctx, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS("h1")))
		if w := run(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
			t.Errorf("at 360 px %s is %d px wide", p.path, w)
		}
		screenshot(t, ctx, p.name+"-360")
	}
	do(t, ctx, chromedp.EmulateViewport(1280, 900))
	for _, p := range []struct{ path, name string }{{"/threads", "threads"}, {"/runs", "runs"}, {"/fires", "fires"}, {"/outbox", "outbox"}} {
		do(t, ctx, chromedp.Navigate(srv.URL+p.path), chromedp.WaitVisible(chromedp.CSS("h1")))
		screenshot(t, ctx, p.name)
	}
	if f := tr.foreign(srv.URL); len(f) > 0 {
		t.Errorf("the browser asked other hosts for %q", f)
	}
}

// TestBrowserApproveAWaitingRefund: a refund waits for approval under a running service; from
// the overview's card to the approvals page, a note and the Approve button; the service resumes
// the run and runs the refund once; the run page then shows the call run and the decision.
// The approvals page as screenshots, also at 360 px, where nothing is wider than the screen.
func TestBrowserApproveAWaitingRefund(t *testing.T) {
	ctx, tr := tab(t)
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	d := newDesk()
	sender := &memSender{}
	svc := startService(t, st, d, sender)
	bg := context.Background()
	if _, err := svc.Deliver(bg, bytes.NewReader(email("r1@cust.example", "Order A-17 arrived broken", "Hello,\n\nplease refund order A-17.\n\nAnn")), service.Envelope{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run to wait for approval", func() bool {
		runs, _ := st.ListRuns(bg, store.RunFilter{Status: store.RunWaiting})
		return len(runs) == 1
	})
	_, srv := newConsole(t, st)
	do(t, ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(chromedp.CSS("h1")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS(`a.card[href$="/approvals"]`))); got != "1\ncall waiting for approval" {
		t.Errorf("the approvals card reads %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(`a.card[href$="/approvals"]`)), chromedp.WaitVisible(chromedp.CSS("article.approval")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("article.approval .head"))); got != "refund waiting call c1" {
		t.Errorf("the approval's head reads %q", got)
	}
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("article.approval pre.args"))); got != "{\n  \"order\": \"A-17\"\n}" {
		t.Errorf("the arguments read %q", got)
	}
	screenshot(t, ctx, "approvals")
	do(t, ctx, chromedp.EmulateViewport(360, 800), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("article.approval")))
	if w := run(t, ctx, chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
		t.Errorf("at 360 px the approvals page is %d px wide", w)
	}
	screenshot(t, ctx, "approvals-360")
	do(t, ctx, chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("article.approval")))
	do(t, ctx, chromedp.SendKeys(chromedp.CSS(`form[action$="/approvals/approve"] input[name=note]`), "within the refund limit"),
		chromedp.Click(chromedp.CSS(`form[action$="/approvals/approve"] button`)), chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("p.flash"))); got != flashes["approved"] {
		t.Errorf("after the approval the page says %q", got)
	}
	key := onlyRun(t, st).Key
	waitFor(t, "the service to resume the run and send its reply", func() bool {
		r, _ := st.Run(bg, key)
		return r.Status == store.RunSucceeded && sender.count() == 1 && replySent(st, key)
	})
	if n := d.refunds.Load(); n != 1 {
		t.Errorf("%d refunds, want 1", n)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/run?key="+url.QueryEscape(key)), chromedp.WaitVisible(chromedp.CSS("h1.key")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("article.approval dl.facts"))); !strings.Contains(got, "approved by ada at ") ||
		!strings.Contains(got, "within the refund limit") {
		t.Errorf("the run page's approval reads %q", got)
	}
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("details.call summary"))); got != "refund ok" {
		t.Errorf("the run page's call reads %q", got)
	}
	screenshot(t, ctx, "run-approved")
	if f := tr.foreign(srv.URL); len(f) > 0 {
		t.Errorf("the browser asked other hosts for %q", f)
	}
}

// seedFire records a responsibility's trail: one fire succeeded, one failed, one missed.
func seedFire(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	day := time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC)
	for i, f := range []store.Finish{{Status: store.RunSucceeded}, {Status: store.RunFailed, Reason: "model: status 401: invalid x-api-key", Class: store.FailureRequestRefused}} {
		key := fmt.Sprintf("scheduled:research/daily-digest@%s", day.Add(time.Duration(i)*24*time.Hour).Format(time.RFC3339))
		if _, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunScheduled, Persona: "research", Responsibility: "daily-digest",
			FireAt: day.Add(time.Duration(i) * 24 * time.Hour), Holder: "w1"}); err != nil {
			t.Fatal(err)
		}
		f.Usage = chat.Usage{InputTokens: 5200, OutputTokens: 300, CacheReadTokens: 4000}
		if _, err := st.FinishRun(ctx, key, "w1", f); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := st.StartRun(ctx, store.NewRun{Key: "scheduled:research/daily-digest@missed", Kind: store.RunScheduled, Persona: "research",
		Responsibility: "daily-digest", FireAt: day.Add(48 * time.Hour), Status: store.RunSkipped, Reason: "missed"}); err != nil {
		t.Fatal(err)
	}
}

// The hostile payloads: each would set its own window flag if the browser ran it, or load
// from another host if the browser fetched it. They go into subjects, display names, text and
// HTML bodies, attachment names, tool arguments and results, run reasons and send errors.
var payloads = []string{
	`<script>window.__pwned_script=1</script>`,
	`<img src=x onerror="window.__pwned_onerror=1">`,
	`<a href="javascript:window.__pwned_js=1">click me</a>`,
	`<a href="data:text/html,<script>parent.__pwned_data=1</script>">open</a>`,
	`<svg onload="window.__pwned_svg=1"><script>window.__pwned_svgscript=1</script></svg>`,
	`<iframe src="javascript:parent.__pwned_iframe=1"></iframe>`,
	`<style>body{background:url(http://evil.example/css.png)}</style>`,
	`<div style="background-image:url(http://evil.example/inline.png)">styled</div>`,
	`<link rel="stylesheet" href="http://evil.example/s.css">`,
	`<img src="http://evil.example/track.png" width=1 height=1>`,
	`<meta http-equiv="refresh" content="0;url=http://evil.example/">`,
	`<base href="http://evil.example/">`,
	`<body onload="window.__pwned_body=1">`,
	`"><script>window.__pwned_attr=1</script>`,
	`'><img src=x onerror=window.__pwned_quote=1>`,
	`<math><mtext><table><mglyph><style><img src=x onerror=window.__pwned_mxss=1>`,
	`javascript:window.__pwned_bare=1`,
}

// hostileEmail is a multipart message whose every field carries the payloads.
func hostileEmail(id string) []byte {
	all := strings.Join(payloads, " ")
	var b strings.Builder
	fmt.Fprintf(&b, "From: \"%s\" <mallory@evil.example>\r\n", strings.ReplaceAll(payloads[1], `"`, `'`))
	fmt.Fprintf(&b, "To: support@acme.example\r\nSubject: %s\r\nMessage-ID: <%s>\r\nDate: Mon, 02 Mar 2026 10:00:00 +0000\r\n", payloads[0]+" "+payloads[4], id)
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n")
	b.WriteString("--b1\r\nContent-Type: multipart/alternative; boundary=\"b2\"\r\n\r\n")
	b.WriteString("--b2\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + all + "\r\n")
	b.WriteString("--b2\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<html><head>" + payloads[6] + payloads[8] + payloads[11] +
		"</head><body>" + all + "</body></html>\r\n--b2--\r\n")
	fmt.Fprintf(&b, "--b1\r\nContent-Type: application/pdf\r\nContent-Disposition: attachment; filename=\"%s.pdf\"\r\n"+
		"Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--b1--\r\n", strings.ReplaceAll(payloads[13], `"`, `'`))
	return []byte(b.String())
}

// TestBrowserRunsNoHostileContent: a thread whose every field is hostile, and a run, tool
// round, reply and send error made of the payloads, on every page of the console: no payload's
// window flag is set, no element a payload would add is in the DOM, the browser asks no host
// but the console for anything, and every page carries the exact Content-Security-Policy.
func TestBrowserRunsNoHostileContent(t *testing.T) {
	ctx, tr := tab(t)
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	bg := context.Background()
	d := newDesk()
	svc := newIdleService(t, st, d)
	in, err := svc.Deliver(bg, bytes.NewReader(hostileEmail("evil1@evil.example")), service.Envelope{})
	if err != nil || len(in.Deliveries) != 1 {
		t.Fatalf("deliver = %+v, %v", in, err)
	}
	m := in.Deliveries[0].Message
	seedHostileRun(t, st, m.ThreadID, m.Seq)
	approvalsRun := seedHostileApprovals(t, st)
	_, srv := newConsole(t, st)
	summary, err := st.ThreadSummaryOf(bg, m.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	runKey := "reply:support/" + m.MessageID
	pages := []string{"/", "/threads", "/thread?id=" + url.QueryEscape(summary.ThreadID), "/run?key=" + url.QueryEscape(runKey),
		"/runs", "/runs?status=failed", "/runs?status=waiting", "/outbox", "/actions", "/fires", "/approvals", "/approvals?status=all",
		"/run?key=" + url.QueryEscape(approvalsRun)}
	for _, p := range pages {
		do(t, ctx, chromedp.Navigate(srv.URL+p), chromedp.WaitVisible(chromedp.CSS("main h1")))
		// Open every fold, so that folded content is rendered too.
		do(t, ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('details').forEach(d => d.open = true)`))
		time.Sleep(50 * time.Millisecond)
		flags := run(t, ctx, chromedp.Evaluate[[]string](`Object.keys(window).filter(k => k.startsWith('__pwned'))`))
		if len(flags) > 0 {
			t.Errorf("%s: payloads ran: %v", p, flags)
		}
		added := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('script, iframe, object, embed, img, base, meta[http-equiv], `+
			`style, [style], [onload], [onerror], a[href^="javascript:"], a[href^="data:"], link:not([href$="/static/console.css"])').length`))
		if added != 0 {
			t.Errorf("%s: %d elements of the payloads are in the page", p, added)
		}
		if got := tr.header(srv.URL+p, "Content-Security-Policy"); got != ContentSecurityPolicy {
			t.Errorf("%s: CSP = %q, want %q", p, got, ContentSecurityPolicy)
		}
	}
	do(t, ctx, chromedp.Navigate(srv.URL+pages[2]), chromedp.WaitVisible(chromedp.CSS("ol.conversation")))
	shown := run(t, ctx, chromedp.Text(chromedp.CSS("ol.conversation")))
	for _, p := range []string{payloads[0], `javascript:window.__pwned_bare=1`} {
		if !strings.Contains(shown, p) {
			t.Errorf("the payload %q is not shown as text in the thread", p)
		}
	}
	screenshot(t, ctx, "hostile-thread")

	// The arguments and the notes on the approvals page are text, their hidden characters
	// marked escapes; the Deny button of the call whose id is a payload decides that call, with
	// a note made of the payloads, which then reads as text too.
	do(t, ctx, chromedp.Navigate(srv.URL+"/approvals"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	shown = run(t, ctx, chromedp.Text(chromedp.CSS("div.approvals")))
	for _, p := range []string{payloads[0], payloads[13], `javascript:window.__pwned_bare=1`, `\u202e`, `\u2066`, `\u001b[31m`} {
		if !strings.Contains(shown, p) {
			t.Errorf("the approvals page does not show %q as text", p)
		}
	}
	if strings.ContainsAny(shown, "\u202e\u2066\x1b") {
		t.Error("a bidi or control character reached the approvals page")
	}
	if n := run(t, ctx, chromedp.Evaluate[int](`document.querySelectorAll('div.approvals .ctl').length`)); n != 8 {
		t.Errorf("%d hidden characters are marked on the approvals page, want 8", n)
	}
	screenshot(t, ctx, "hostile-approvals")
	note := all(payloads) + " \u202e"
	deny := `form[action$="/approvals/deny"]:has(input[name=call][value="` + strings.ReplaceAll(payloads[13], `"`, `\"`) + `"])`
	do(t, ctx, chromedp.SetValue(chromedp.CSS(deny+` textarea[name=note]`), note),
		chromedp.Click(chromedp.CSS(deny+` button`)), chromedp.WaitVisible(chromedp.CSS("p.flash")))
	if got := run(t, ctx, chromedp.Text(chromedp.CSS("p.flash"))); got != flashes["denied"] {
		t.Errorf("after the denial the page says %q", got)
	}
	decided, err := st.Approvals(bg, store.ApprovalQuery{Status: store.ApprovalDenied, RunKey: approvalsRun})
	if err != nil || len(decided) != 2 {
		t.Fatalf("denied approvals = %+v, %v", decided, err)
	}
	if a := decided[1]; a.CallID != payloads[13] || a.DecidedBy != "ada" || a.Note != note {
		t.Errorf("the denial = call %q by %q, note %q", a.CallID, a.DecidedBy, a.Note)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/approvals?status=denied"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	if flags := run(t, ctx, chromedp.Evaluate[[]string](`Object.keys(window).filter(k => k.startsWith('__pwned'))`)); len(flags) > 0 {
		t.Errorf("the denied approvals: payloads ran: %v", flags)
	}
	notes := run(t, ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('pre.notetext')].map(p => p.textContent)`))
	// The latest requested first: the call denied here, then the one denied before.
	if len(notes) != 2 || notes[0] != strings.ReplaceAll(note, "\u202e", `\u202e`) {
		t.Errorf("the notes read %q", notes)
	}
	if f := tr.foreign(srv.URL); len(f) > 0 {
		t.Errorf("the browser asked other hosts for %q", f)
	}
}

// rawJSON is v as JSON with <, > and & as they are (as a model writes them), not escaped.
func rawJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSpace(b.Bytes())
}

// all is the payloads joined by spaces.
func all(list []string) string { return strings.Join(list, " ") }

// seedHostileApprovals records a scheduled run of a persona and a responsibility named by
// payloads, waiting for approval of three calls whose arguments and decoded inputs are made of
// the payloads and hidden characters (a right-to-left override, an isolate, a terminal
// escape): one already denied by a decider named by a payload, with a note of the payloads and
// hidden characters; one whose call id is a payload; one whose tool name is. It returns the
// run's key.
func seedHostileApprovals(t *testing.T, st *store.Store) string {
	t.Helper()
	ctx := context.Background()
	hostile := all(payloads) + " \u202eexe.pdf\u2066 \x1b[31mred"
	key := "scheduled:" + payloads[0]
	r, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunScheduled, Persona: payloads[4], Responsibility: payloads[2],
		FireAt: time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC), Holder: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	args, input := rawJSON(t, map[string]string{"query": hostile}), rawJSON(t, map[string]any{"query": hostile, "names": payloads})
	calls := []chat.ToolCall{{ID: "call-1", Name: "issue_refund", Input: args}, {ID: payloads[13], Name: "issue_refund", Input: args},
		{ID: "call-3", Name: payloads[5], Input: args}}
	var reqs []store.ApprovalRequest
	for i := range calls {
		reqs = append(reqs, store.ApprovalRequest{Position: i, Input: input})
	}
	if _, err := st.StartTurn(ctx, "w1", store.Turn{RunID: r.ID, Text: hostile, ToolCalls: calls, StopReason: "tool_use", Model: "m",
		ApprovalRequests: reqs}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Deny(ctx, key, "call-1", payloads[1], hostile); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WaitRun(ctx, key, "w1"); err != nil {
		t.Fatal(err)
	}
	return key
}

// TestBrowserNeedsCredentialsAndTheCSRFToken: a tab without credentials gets 401; a form
// posted without its token gets 403.
func TestBrowserNeedsCredentialsAndTheCSRFToken(t *testing.T) {
	ctx, tr := tab(t)
	st := openStore(t, "sqlite:"+filepath.Join(t.TempDir(), "store.db"))
	seq := mustReply(t, st)
	_, srv := newConsole(t, st)
	do(t, ctx, chromedp.Navigate(srv.URL+"/outbox"), chromedp.WaitVisible(chromedp.CSS("h1")))
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{}}); err != nil {
		t.Fatal(err)
	}
	// Chromium answers a 401 with a challenge as a failed load; the response is 401 all the same.
	_ = chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/threads"))
	tr.mu.Lock()
	code := tr.status[srv.URL+"/threads"]
	tr.mu.Unlock()
	if code != 401 {
		t.Errorf("a page without credentials: %d, want 401", code)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(testAuth.User+":"+testAuth.Password))
	if _, err := chromedp.Call(ctx, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(srv.URL+"/outbox"), chromedp.WaitVisible(chromedp.CSS("h1")))
	// A form whose token an attacker could not know: the page's own form, its token removed.
	do(t, ctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => {
		const f = document.createElement('form'); f.method = 'post'; f.action = '/outbox/resend';
		const s = document.createElement('input'); s.name = 'seq'; s.value = '%d'; f.appendChild(s);
		document.body.appendChild(f); return 0; })()`, seq)))
	res, err := chromedp.RunResponse(ctx, chromedp.Evaluate[chromedp.Void](`document.forms[document.forms.length-1].submit()`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 403 {
		t.Errorf("POST without the CSRF token: %d, want 403", res.Status)
	}
	if acts, _ := st.OperatorActions(context.Background(), "", 0); len(acts) != 0 {
		t.Errorf("the refused POST acted: %+v", acts)
	}
}

// newIdleService is a service of d on st that is not running: its Deliver stores mail, and
// nothing answers it.
func newIdleService(t *testing.T, st *store.Store, d *desk) *service.Service {
	t.Helper()
	svc, err := service.New(service.Config{Store: st, Personas: []*runtime.Persona{d.persona}, Models: service.Models{Default: d},
		NoSchedule: true, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// seedHostileRun records, for the message seq of thread, a failed reply run made of the
// payloads: its reason, a model call's text, a tool round's arguments and results, a reply
// whose sending failed with a payload as the error, and a fire of a responsibility named by one.
func seedHostileRun(t *testing.T, st *store.Store, thread string, seq int64) {
	t.Helper()
	ctx := context.Background()
	all := strings.Join(payloads, " ")
	m, err := st.MessageBySeq(ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	key := "reply:support/" + m.MessageID
	r, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunReply, Persona: "support", ThreadID: thread, MessageSeq: seq, Holder: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	args := rawJSON(t, map[string]string{"query": all})
	call := chat.ToolCall{ID: "call-1", Name: "lookup_order", Input: args}
	if _, err := st.StartTurn(ctx, "w1", store.Turn{RunID: r.ID, TurnIndex: 0, Text: all, ToolCalls: []chat.ToolCall{call}, StopReason: "tool_use", Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RecordRound(ctx, store.Round{Owner: store.Owner{Type: store.OwnerMessage, ID: seq}, Persona: "support", RunID: key,
		Calls: []chat.ToolCall{call}, Results: []store.Result{{Content: all, Succeeded: false}}}); err != nil {
		t.Fatal(err)
	}
	reply := m
	reply.MessageID, reply.Direction, reply.RunKey, reply.Text, reply.HTML = "r-evil@acme.example", "outbound", key, all, all
	reply.Attachments, reply.InReplyTo = nil, m.MessageID
	a, err := st.AppendMessage(ctx, reply)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.FinishRun(ctx, key, "w1", store.Finish{Status: store.RunFailed, Reason: all, Class: store.FailureHostError}); err != nil {
		t.Fatal(err)
	}
	claimed, ok, err := st.ClaimSend(ctx, store.SendClaim{Mailboxes: []string{"support"}, Holder: "w1"})
	if err != nil || !ok || claimed != a.Seq {
		t.Fatalf("claim = %d, %v, %v", claimed, ok, err)
	}
	if _, err := st.SendFailed(ctx, a.Seq, "w1", time.Time{}, all); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resend(ctx, a.Seq, "console:"+payloads[0], all); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.StartRun(ctx, store.NewRun{Key: "fire:" + payloads[1], Kind: store.RunScheduled, Persona: payloads[4], Responsibility: payloads[2],
		FireAt: time.Date(2026, 3, 1, 7, 0, 0, 0, time.UTC), Status: store.RunSkipped, Reason: all}); err != nil {
		t.Fatal(err)
	}
}
