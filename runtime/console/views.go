package console

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
)

type whoKey struct{}

func withWho(ctx context.Context, who string) context.Context {
	return context.WithValue(ctx, whoKey{}, who)
}

// who is who the request authenticated as.
func who(ctx context.Context) string {
	s, _ := ctx.Value(whoKey{}).(string)
	return s
}

// actor is the Actor of a console request: "console:" and who it authenticated as, and the
// form's reason.
func actor(r *http.Request) Actor {
	return Actor{By: runtime.Clip("console:"+who(r.Context()), store.MaxNameChars), Reason: strings.TrimSpace(r.PostFormValue("reason"))}
}

// overviewData is the overview page.
type overviewData struct {
	Pending      store.PendingCounts
	Running      int64
	Approvals    int64
	Outbox       store.OutboxCounts
	FailedToday  int64
	RunsChart    chart
	TokensChart  chart
	RecentFailed []store.Run
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	now := c.now().UTC()
	var d overviewData
	var err error
	if d.Pending, err = c.st.CountPending(ctx); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Running, err = c.st.CountRunning(ctx); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Approvals, err = c.st.CountWaitingApprovals(ctx); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Outbox, err = c.st.CountOutbox(ctx); err != nil {
		c.fail(w, r, err)
		return
	}
	hourStart := now.Truncate(time.Hour).Add(-23 * time.Hour)
	hours, err := c.st.RunsPerHour(ctx, hourStart)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	for _, h := range hours {
		if h.Status == store.RunFailed || h.Status == store.RunAbandoned {
			d.FailedToday += h.Runs
		}
	}
	d.RunsChart = runsChart(hourStart, hours)
	dayStart := now.Truncate(24 * time.Hour).Add(-13 * 24 * time.Hour)
	days, err := c.st.UsagePerDay(ctx, dayStart)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d.TokensChart = tokensChart(dayStart, days)
	if d.RecentFailed, err = c.st.ListRuns(ctx, store.RunFilter{Status: store.RunFailed, Limit: 5}); err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "overview", d)
}

// threadsData is the threads page.
type threadsData struct {
	Persona string
	Threads []store.ThreadSummary
	Next    string // the query of the next page ("" for none)
}

const pageSize = 50

func (c *Console) threads(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tq := store.ThreadQuery{Mailbox: q.Get("persona"), Limit: pageSize}
	if after := q.Get("after"); after != "" {
		at, id, ok := strings.Cut(after, "|")
		t, err := time.Parse(time.RFC3339Nano, at)
		if !ok || err != nil {
			c.fail(w, r, fmt.Errorf("%w: after=%q is not a page cursor", errBadRequest, after))
			return
		}
		tq.After = store.ThreadCursor{LastActivity: t, ThreadID: id}
	}
	list, err := c.st.Threads(r.Context(), tq)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := threadsData{Persona: tq.Mailbox, Threads: list}
	if len(list) == pageSize {
		cur := list[len(list)-1].Cursor()
		d.Next = url.Values{"persona": {tq.Mailbox}, "after": {cur.LastActivity.Format(time.RFC3339Nano) + "|" + cur.ThreadID}}.Encode()
	}
	c.render(w, r, http.StatusOK, "threads", d)
}

// threadData is the conversation view of a thread.
type threadData struct {
	Summary     store.ThreadSummary
	Omitted     int64
	Items       []threadItem
	Compactions []history.Compaction
}

// threadItem is one message of the conversation with what belongs to it.
type threadItem struct {
	Message store.Message
	// Body is the text shown: the text body, or the HTML body as text (FromHTML).
	Body     string
	FromHTML bool
	// Rounds are the tool rounds recorded for the message (an inbound message's reply runs).
	Rounds []round
	// Runs are the reply runs that answered the message.
	Runs []store.Run
	// Send is the outbox state of a reply (nil for other messages).
	Send *store.SendState
}

// round is one tool-calling round of a run, as the conversation view folds it.
type round struct {
	RunID     string
	TurnIndex int
	Calls     []history.ToolUse
}

func (c *Console) thread(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		c.fail(w, r, fmt.Errorf("%w: no thread id (thread?id=…)", errBadRequest))
		return
	}
	detail, err := c.st.ThreadDetailOf(r.Context(), id, 0)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := threadData{Summary: detail.Summary, Omitted: detail.Omitted, Compactions: detail.Compactions}
	runsOf := map[int64][]store.Run{}
	for _, run := range detail.Runs {
		runsOf[run.MessageSeq] = append(runsOf[run.MessageSeq], run)
	}
	for _, m := range detail.Messages {
		it := threadItem{Message: m, Body: m.Text, Runs: runsOf[m.Seq]}
		if strings.TrimSpace(it.Body) == "" && m.HTML != "" {
			it.Body, it.FromHTML = runtime.HTMLText(m.HTML), true
		}
		for _, u := range m.ToolUses {
			if n := len(it.Rounds); n > 0 && it.Rounds[n-1].RunID == u.RunID && it.Rounds[n-1].TurnIndex == u.TurnIndex {
				it.Rounds[n-1].Calls = append(it.Rounds[n-1].Calls, u)
				continue
			}
			it.Rounds = append(it.Rounds, round{RunID: u.RunID, TurnIndex: u.TurnIndex, Calls: []history.ToolUse{u}})
		}
		if st, ok := detail.Sends[m.Seq]; ok {
			it.Send = &st
		}
		d.Items = append(d.Items, it)
	}
	c.render(w, r, http.StatusOK, "thread", d)
}

// runsData is the runs page.
type runsData struct {
	Filter   store.RunFilter
	Since    string
	Runs     []store.Run
	Next     string
	Statuses []store.RunStatus
	Classes  []store.FailureClass
	Periods  []period
}

// period is one choice of the runs page's "since".
type period struct {
	Value, Label string
	D            time.Duration
}

var periods = []period{{"1h", "last hour", time.Hour}, {"24h", "last 24 hours", 24 * time.Hour},
	{"7d", "last 7 days", 7 * 24 * time.Hour}, {"30d", "last 30 days", 30 * 24 * time.Hour}, {"", "any time", 0}}

func (c *Console) runs(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.RunFilter{Persona: q.Get("persona"), Status: store.RunStatus(q.Get("status")), Class: store.FailureClass(q.Get("class")),
		Kind: store.RunKind(q.Get("kind")), Limit: pageSize}
	since := q.Get("since")
	if since != "" {
		i := slices.IndexFunc(periods, func(p period) bool { return p.Value == since })
		if i < 0 {
			c.fail(w, r, fmt.Errorf("%w: since=%q (want 1h, 24h, 7d or 30d)", errBadRequest, since))
			return
		}
		f.Since = c.now().Add(-periods[i].D)
	}
	if after := q.Get("after"); after != "" {
		at, id, ok := strings.Cut(after, "|")
		t, err := time.Parse(time.RFC3339Nano, at)
		n, nerr := strconv.ParseInt(id, 10, 64)
		if !ok || err != nil || nerr != nil {
			c.fail(w, r, fmt.Errorf("%w: after=%q is not a page cursor", errBadRequest, after))
			return
		}
		f.After = store.RunCursor{StartedAt: t, ID: n}
	}
	list, err := c.st.ListRuns(r.Context(), f)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	d := runsData{Filter: f, Since: since, Runs: list, Statuses: store.RunStatuses, Classes: store.FailureClasses, Periods: periods}
	if len(list) == pageSize {
		cur := list[len(list)-1].Cursor()
		v := url.Values{}
		for k, val := range map[string]string{"persona": f.Persona, "status": string(f.Status), "class": string(f.Class), "kind": string(f.Kind), "since": since} {
			if val != "" {
				v.Set(k, val)
			}
		}
		v.Set("after", cur.StartedAt.Format(time.RFC3339Nano)+"|"+strconv.FormatInt(cur.ID, 10))
		d.Next = v.Encode()
	}
	c.render(w, r, http.StatusOK, "runs", d)
}

// runData is a run's timeline page.
type runData struct {
	Timeline    store.Timeline
	Retryable   bool
	Abandonable bool
	Resendable  bool
	Live        bool
	Actions     []store.OperatorAction
	// Approvals are the run's calls that wait or waited for approval, in the order of its
	// turns.
	Approvals []store.Approval
}

func (c *Console) run(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if key == "" {
		c.fail(w, r, fmt.Errorf("%w: no run key (run?key=…)", errBadRequest))
		return
	}
	tl, err := c.st.RunTimeline(r.Context(), key)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	now := c.now()
	d := runData{Timeline: tl, Retryable: retryable(tl.Run) == nil, Live: tl.Run.Lease.Live(now)}
	d.Abandonable = tl.Run.Status == store.RunRunning && !d.Live
	for _, t := range tl.Turns {
		d.Approvals = append(d.Approvals, t.Approvals...)
	}
	if tl.ReplyState != nil && tl.ReplyState.Status != store.OutboxUnsent {
		d.Resendable = true
	}
	if tl.Reply != nil {
		if d.Actions, err = c.st.OperatorActions(r.Context(), store.ReplyTarget(tl.Reply.Seq), 20); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	c.render(w, r, http.StatusOK, "run", d)
}

// firesData is the fires page.
type firesData struct {
	Persona string
	Trails  []store.FireTrail
}

func (c *Console) fires(w http.ResponseWriter, r *http.Request) {
	persona := r.URL.Query().Get("persona")
	trails, err := c.st.FireTrails(r.Context(), persona, 10)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "fires", firesData{Persona: persona, Trails: trails})
}

// outboxData is the outbox page.
type outboxData struct {
	Persona string
	Unsent  []store.OutboxEntry
	Failed  []store.OutboxEntry
	Bounced []store.OutboxEntry
}

func (c *Console) outbox(w http.ResponseWriter, r *http.Request) {
	persona := r.URL.Query().Get("persona")
	var d outboxData
	d.Persona = persona
	var err error
	if d.Failed, err = c.st.Outbox(r.Context(), store.OutboxQuery{Status: store.OutboxFailed, Mailbox: persona, Limit: pageSize}); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Bounced, err = c.st.Outbox(r.Context(), store.OutboxQuery{Status: store.OutboxBounced, Mailbox: persona, Limit: pageSize}); err != nil {
		c.fail(w, r, err)
		return
	}
	if d.Unsent, err = c.st.Outbox(r.Context(), store.OutboxQuery{Status: store.OutboxUnsent, Mailbox: persona, Limit: pageSize}); err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "outbox", d)
}

func (c *Console) actions(w http.ResponseWriter, r *http.Request) {
	list, err := c.st.OperatorActions(r.Context(), "", 100)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.render(w, r, http.StatusOK, "actions", list)
}

// done redirects (303) to the page at path (with the console's prefix) after a's action,
// telling it what happened.
func (c *Console) done(w http.ResponseWriter, r *http.Request, a Actor, path string, q url.Values, what string, out Outcome) {
	c.log.Info("console: action", "action", what, "by", a.By, "reason", a.Reason, "outcome", out, "target", q.Encode())
	if out == Already {
		what = "already"
	}
	q.Set("done", what)
	http.Redirect(w, r, c.prefix+path+"?"+q.Encode(), http.StatusSeeOther)
}

func (c *Console) postResend(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseInt(r.PostFormValue("seq"), 10, 64)
	if err != nil {
		c.fail(w, r, fmt.Errorf("%w: seq=%q is not a reply's seq", errBadRequest, r.PostFormValue("seq")))
		return
	}
	a := actor(r)
	out, err := Resend(r.Context(), c.st, seq, a)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	back := r.PostFormValue("back")
	if back == "run" {
		c.done(w, r, a, "/run", url.Values{"key": {r.PostFormValue("key")}}, "resent", out)
		return
	}
	c.done(w, r, a, "/outbox", url.Values{}, "resent", out)
}
