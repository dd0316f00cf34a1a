package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/console"
	"github.com/personagen/personagen/runtime/store"
)

func init() {
	register(command{name: "runs", summary: "list runs, the last started first (filters: persona, status, failure class, since)", run: runRuns})
	register(command{name: "run", summary: "print a run's timeline: model calls, tool calls and their outcomes, the reply", run: runRun})
	register(command{name: "retry", summary: "mark a failed or abandoned run to run again (a running service does it)", run: runRetry})
	register(command{name: "abandon", summary: "give up a run nobody works on", run: runAbandon})
}

func htmlText(html string) string { return runtime.HTMLText(html) }

func runRuns(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("runs", "", stderr)
	sf := addStoreFlags(fs, true)
	persona := fs.String("persona", "", "only this persona's runs")
	status := fs.String("status", "", "only runs of this status: running, waiting, succeeded, failed, skipped, abandoned")
	class := fs.String("class", "", "only runs of this failure class (host_error, request_refused, …)")
	kind := fs.String("kind", "", "only reply or scheduled runs")
	since := fs.String("since", "", "only runs started since: an age (24h, 7d) or an RFC 3339 time")
	limit := fs.Int("limit", store.DefaultListLimit, "at most this many runs")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "runs", 0, stderr) {
		return exitUsage
	}
	f := store.RunFilter{Persona: *persona, Status: store.RunStatus(*status), Class: store.FailureClass(*class), Kind: store.RunKind(*kind), Limit: *limit}
	st, code := sf.open(ctx, "runs", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	if *since != "" {
		if t, err := time.Parse(time.RFC3339Nano, *since); err == nil {
			f.Since = t
		} else if d, err := parseAge(*since); err == nil {
			f.Since = st.Now().Add(-d)
		} else {
			fmt.Fprintf(stderr, "personagen runs: -since %q is neither an age (24h, 7d) nor an RFC 3339 time\n", *since)
			return exitUsage
		}
	}
	list, err := st.ListRuns(ctx, f)
	if err != nil {
		return exitFor("runs", err, stderr)
	}
	if *sf.asJSON {
		if list == nil {
			list = []store.Run{}
		}
		return jsonOut(stdout, stderr, list)
	}
	var rows [][]string
	for _, r := range list {
		rows = append(rows, []string{stamp(r.StartedAt), string(r.Status), string(r.FailureClass), r.Persona, string(r.Kind), r.Key, r.Reason})
	}
	table(stdout, []string{"STARTED", "STATUS", "CLASS", "PERSONA", "KIND", "KEY", "REASON"}, rows)
	return exitOK
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "KEY", stderr)
	sf := addStoreFlags(fs, true)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "run", 1, stderr) {
		return exitUsage
	}
	st, code := sf.open(ctx, "run", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	tl, err := st.RunTimeline(ctx, fs.Arg(0))
	if err != nil {
		return exitFor("run", err, stderr)
	}
	if *sf.asJSON {
		return jsonOut(stdout, stderr, tl)
	}
	r := tl.Run
	fmt.Fprintf(stdout, "run %s\n%s run of %s: %s%s, attempt %d", r.Key, r.Kind, r.Persona, r.Status, classSuffix(r.FailureClass), r.Attempt)
	if r.Faults > 0 {
		fmt.Fprintf(stdout, ", %s", plural(r.Faults, "fault"))
	}
	fmt.Fprintf(stdout, "\nstarted %s, finished %s\n", stamp(r.StartedAt), stamp(r.FinishedAt))
	if r.Kind == store.RunScheduled {
		fmt.Fprintf(stdout, "fire of %s at %s\n", r.Responsibility, stamp(r.FireAt))
	}
	if tl.Message != nil {
		fmt.Fprintf(stdout, "answers message %d of thread %s: %s (from %s)\n", tl.Message.Seq, tl.Message.ThreadID, oneLine(tl.Message.Subject, 120), oneLine(tl.Message.From, 120))
	}
	if r.Status == store.RunRunning {
		if r.Lease.Holder == "" {
			fmt.Fprintf(stdout, "lease released %s: waiting to be resumed\n", stamp(r.Lease.Expires))
		} else {
			fmt.Fprintf(stdout, "lease held by %s until %s\n", r.Lease.Holder, stamp(r.Lease.Expires))
		}
	}
	if r.Reason != "" {
		fmt.Fprintf(stdout, "reason: %s\n", indent(clean(r.Reason))[2:])
	}
	u, so := r.Usage, ""
	if r.Status == store.RunRunning || r.Status == store.RunWaiting { // the run's total is recorded when it finishes
		u, so = chat.Usage{}, " so far"
		for _, t := range tl.Turns {
			u = u.Add(t.Usage)
		}
	}
	fmt.Fprintf(stdout, "usage%s: %d in, %d out, %d cache read, %d cache write", so, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens)
	if r.StopReason != "" {
		fmt.Fprintf(stdout, "; stop: %s", r.StopReason)
	}
	fmt.Fprintln(stdout)
	approvals := map[string]*store.Approval{}
	if list, err := st.Approvals(ctx, store.ApprovalQuery{RunKey: r.Key}); err == nil {
		for i := range list {
			approvals[fmt.Sprint(list[i].TurnIndex, "/", list[i].CallID)] = &list[i]
		}
	}
	for _, t := range tl.Turns {
		model := ""
		if t.Model != "" {
			model = " (" + t.Model + ")"
		}
		fmt.Fprintf(stdout, "\nmodel call %d%s: stop %s; %d in, %d out, %d cache read, %d cache write\n", t.TurnIndex, model, t.StopReason,
			t.Usage.InputTokens, t.Usage.OutputTokens, t.Usage.CacheReadTokens, t.Usage.CacheWriteTokens)
		if t.Text != "" {
			fmt.Fprintf(stdout, "%s\n", indent(clean(t.Text)))
		}
		for _, c := range t.Calls {
			fmt.Fprintf(stdout, "  call %s %s: %s\n", c.Call.Name, oneLine(string(c.Call.Input), 200), callOutcome(c, approvals[fmt.Sprint(t.TurnIndex, "/", c.Call.ID)]))
		}
	}
	if tl.Reply != nil {
		fmt.Fprintf(stdout, "\nreply %d (%s)", tl.Reply.Seq, tl.Reply.MessageID)
		if s := tl.ReplyState; s != nil {
			fmt.Fprintf(stdout, ": %s after %s", s.Status, plural(s.Attempts, "attempt"))
			if s.LastError != "" {
				fmt.Fprintf(stdout, " (last error: %s)", oneLine(s.LastError, 160))
			}
			if s.Status == "bounced" {
				fmt.Fprintf(stdout, "; bounced %s: %s %s", stamp(s.BouncedAt), s.BounceStatus, oneLine(s.BounceDiagnostic, 160))
			}
		}
		fmt.Fprintln(stdout)
	}
	for _, e := range tl.Events {
		fmt.Fprintf(stdout, "event %s %s by %s (%s); was %s %s\n", stamp(e.At), e.Kind, e.By, oneLine(e.Reason, 120), e.PriorStatus, oneLine(e.PriorReason, 120))
	}
	return exitOK
}

// callOutcome says what is known of a call of the timeline; a is the call's approval, nil when
// it needs none.
func callOutcome(c store.CallTrace, a *store.Approval) string {
	switch state := console.CallState(c, a); {
	case c.State == store.CallUnsettled && a != nil && a.StartedAt.IsZero():
		return state
	case c.State == store.CallUnsettled:
		return "no outcome recorded (in doubt if the tool is not idempotent)"
	case strings.HasPrefix(c.Result.Content, agent.OutcomeUnknown):
		return "outcome unknown (reported to the model as such)"
	case !c.Result.Succeeded:
		return "failed → " + oneLine(c.Result.Content, 160)
	}
	return "ok → " + oneLine(c.Result.Content, 160)
}

// plural is "1 attempt", "2 attempts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// runRetry reopens a run in the store; the service carries it out.
func runRetry(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("retry", "KEY", stderr)
	sf := addStoreFlags(fs, false)
	af := addActionFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: personagen retry [flags] KEY\n\nMarks the failed or abandoned run KEY (or a skipped fire) to run again, in the store: the run is\n"+
			"reopened with its lease released and a reply run's message made pending again. This command runs\nnothing; a running service claims the work and resumes the run (its recorded tool rounds are\nreplayed, not run again). Recorded as a run event with -by and -reason.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "retry", 1, stderr) {
		return exitUsage
	}
	a, ok := af.actor("retry", stderr)
	if !ok {
		return exitUsage
	}
	st, code := sf.open(ctx, "retry", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	out, err := console.Retry(ctx, st, fs.Arg(0), a)
	if err != nil {
		return exitFor("retry", err, stderr)
	}
	report(stdout, out, "run "+fs.Arg(0)+" is reopened: a running service resumes it", "run "+fs.Arg(0)+" already waits to be resumed")
	return exitOK
}

func report(w io.Writer, out console.Outcome, done, already string) {
	if out == console.Already {
		fmt.Fprintln(w, already)
		return
	}
	fmt.Fprintln(w, done)
}

func runAbandon(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("abandon", "KEY", stderr)
	sf := addStoreFlags(fs, false)
	af := addActionFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: personagen abandon [flags] KEY\n\nGives up the run KEY, which nobody works on (it waits to be resumed, or its worker died and its\n"+
			"lease expired): it never runs again and no longer holds its thread or responsibility. Recorded\nas a run event with -by and -reason.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "abandon", 1, stderr) {
		return exitUsage
	}
	a, ok := af.actor("abandon", stderr)
	if !ok {
		return exitUsage
	}
	st, code := sf.open(ctx, "abandon", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	out, err := console.Abandon(ctx, st, fs.Arg(0), a)
	if err != nil {
		return exitFor("abandon", err, stderr)
	}
	report(stdout, out, "run "+fs.Arg(0)+" is abandoned", "run "+fs.Arg(0)+" was abandoned already")
	return exitOK
}
