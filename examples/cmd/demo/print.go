package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transcript"
)

// printRun prints a run: a header (the run, its model calls and usage, the tools), its whole
// conversation in the transcript format, and the stored reply.
func printRun(w io.Writer, r demoRun) {
	res := r.Result
	var tools []string
	for _, t := range r.Tools {
		tools = append(tools, t.Name())
	}
	model := ""
	if n := len(res.Turns); n > 0 {
		model = res.Turns[n-1].Model
	}
	u := res.Usage
	status := res.Run.Status
	if res.Finish.Status != "" { // a scheduled run: the scheduler records what the runner returned
		status = res.Finish.Status
	}
	fmt.Fprintf(w, "# %s\n", r.Title)
	fmt.Fprintf(w, "# run %s (%s, attempt %d): %s after %d model calls (%s)\n",
		res.Run.Key, res.Run.Kind, res.Run.Attempt, status, len(res.Turns), model)
	fmt.Fprintf(w, "# usage: %d input tokens (%d from the cache), %d output tokens; stop reason %s\n",
		u.InputTokens, u.CacheReadTokens, u.OutputTokens, res.StopReason)
	fmt.Fprintf(w, "# tools: %s\n\n", strings.Join(tools, ", "))
	fmt.Fprint(w, transcript.Print(res.Messages))
	if m := res.Reply; m != nil {
		fmt.Fprintf(w, "\n# stored as the reply %s from %s to %s, subject %q, in reply to %s\n",
			m.MessageID, m.From, strings.Join(m.To, ", "), m.Subject, m.InReplyTo)
	}
}

// printTickets prints the tickets escalate_ticket opened in the host.
func printTickets(w io.Writer, env *host.Env) {
	fmt.Fprintln(w, "# tickets escalate_ticket opened in the host (it is not idempotent: each call ran once)")
	for _, t := range env.Tickets() {
		fmt.Fprintf(w, "%s  queue %s, reason %s, thread %s: %s\n", t.ID, t.Queue, t.Reason, t.Thread, t.Summary)
	}
}

// printTrail prints a status trail, one fire a line: scheduled instant (in the schedule's zone
// loc and in UTC), outcome, reason, actual start and finish, holder and attempt, usage.
func printTrail(w io.Writer, trail []store.Run, loc *time.Location) {
	fmt.Fprintf(w, "# research-assistant: daily-digest through the scheduler, one Tick at %s\n", digestClock.t.Format(time.RFC3339))
	for _, r := range trail {
		fmt.Fprintf(w, "fire %s (%s)  %s", r.FireAt.In(loc).Format("2006-01-02 15:04 MST"), r.FireAt.Format(time.RFC3339), r.Status)
		if r.Reason != "" {
			fmt.Fprintf(w, " (%s)", r.Reason)
		}
		fmt.Fprintf(w, "  started %s  finished %s  holder %s  attempt %d  tokens %d in / %d out\n",
			r.StartedAt.Format(time.RFC3339), r.FinishedAt.Format(time.RFC3339), r.Lease.Holder, r.Attempt,
			r.Usage.InputTokens, r.Usage.OutputTokens)
	}
}

// printJSON prints the runs, the tickets and the trail as one JSON document.
func printJSON(w io.Writer, runs []demoRun, trail []store.Run, env *host.Env) error {
	type modelCall struct {
		Turn       int           `json:"turn"`
		Model      string        `json:"model"`
		StopReason string        `json:"stop_reason"`
		Usage      runtime.Usage `json:"usage"`
		ResponseID string        `json:"response_id"`
	}
	type runJSON struct {
		Title      string            `json:"title"`
		RunKey     string            `json:"run_key"`
		Kind       store.RunKind     `json:"kind"`
		Status     store.RunStatus   `json:"status"`
		Attempt    int               `json:"attempt"`
		Usage      runtime.Usage     `json:"usage"`
		StopReason string            `json:"stop_reason"`
		ModelCalls []modelCall       `json:"model_calls"`
		Messages   []runtime.Message `json:"messages"`
		Reply      *replyJSON        `json:"reply,omitempty"`
	}
	var out struct {
		Runs    []runJSON        `json:"runs"`
		Tickets []host.Ticket    `json:"tickets"`
		Trail   []map[string]any `json:"daily_digest_trail"`
	}
	for _, r := range runs {
		res := r.Result
		status := res.Run.Status
		if res.Finish.Status != "" {
			status = res.Finish.Status
		}
		j := runJSON{Title: r.Title, RunKey: res.Run.Key, Kind: res.Run.Kind, Status: status, Attempt: res.Run.Attempt,
			Usage: res.Usage, StopReason: string(res.StopReason), Messages: res.Messages}
		for _, t := range res.Turns {
			j.ModelCalls = append(j.ModelCalls, modelCall{t.TurnIndex, t.Model, t.StopReason, t.Usage, t.ResponseID})
		}
		if m := res.Reply; m != nil {
			j.Reply = &replyJSON{MessageID: m.MessageID, Seq: m.Seq, InReplyTo: m.InReplyTo, References: m.References,
				From: m.From, To: m.To, Subject: m.Subject, Date: m.Date, Text: m.Text}
		}
		out.Runs = append(out.Runs, j)
	}
	out.Tickets = env.Tickets()
	out.Trail = trailJSON(trail)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// replyJSON is a stored reply as the -json output shows it.
type replyJSON struct {
	MessageID  string    `json:"message_id"`
	Seq        int64     `json:"seq"`
	InReplyTo  string    `json:"in_reply_to"`
	References []string  `json:"references"`
	From       string    `json:"from"`
	To         []string  `json:"to"`
	Subject    string    `json:"subject"`
	Date       time.Time `json:"date"`
	Text       string    `json:"text"`
}

// trailJSON is the status trail as the -json output shows it.
func trailJSON(trail []store.Run) []map[string]any {
	var out []map[string]any
	for _, r := range trail {
		out = append(out, map[string]any{
			"run_key": r.Key, "fire_at": r.FireAt, "status": r.Status, "reason": r.Reason,
			"started_at": r.StartedAt, "finished_at": r.FinishedAt, "holder": r.Lease.Holder, "attempt": r.Attempt,
			"usage": r.Usage,
		})
	}
	return out
}
