package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
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
	fmt.Fprintf(w, "# tools: %s\n", strings.Join(tools, ", "))
	printApprovals(w, r.Approvals)
	fmt.Fprintln(w)
	fmt.Fprint(w, transcript.Print(res.Messages))
	if m := res.Reply; m != nil {
		fmt.Fprintf(w, "\n# stored as the reply %s from %s to %s, subject %q, in reply to %s\n",
			m.MessageID, m.From, strings.Join(m.To, ", "), m.Subject, m.InReplyTo)
	}
	if res.Reply != nil && len(r.Sent) == 0 {
		fmt.Fprintf(w, "\n# outbox: nothing unsent for %s (the reply was sent before)\n", res.Reply.Mailbox)
	}
	for _, s := range r.Sent {
		how := "prints it"
		if s.File != "" {
			how += ", writes it to " + s.File
		}
		marked := "marks it sent"
		if s.Marked == store.AlreadyStored {
			marked = "finds it marked sent already"
		}
		fmt.Fprintf(w, "\n# outbox: the unsent reply %s as mail.Render renders it for sending (RFC 5322; CRLF line ends shown as line breaks); the demo's sender %s and %s\n",
			s.Reply.MessageID, how, marked)
		text := strings.ReplaceAll(string(s.Raw), "\r\n", "\n")
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		fmt.Fprintf(w, "%s# end of %s\n", text, s.Reply.MessageID)
	}
}

// printIngested prints what mail.Ingest did with each file: per persona the message is for, its
// id, direction, the thread it joined or started, and why it is not to be answered.
func printIngested(w io.Writer, what string, files []ingestedFile) {
	fmt.Fprintf(w, "# mail.Ingest: %s\n", what)
	for _, f := range files {
		for _, d := range f.Deliveries {
			m := d.Message
			thread := "starts thread " + m.ThreadID
			switch {
			case d.Duplicate:
				thread = "a second copy: nothing written (thread " + m.ThreadID + ")"
			case d.Joined:
				thread = "joins thread " + m.ThreadID
			}
			fmt.Fprintf(w, "%s  %s for %s: %s, %s", f.Name, m.MessageID, d.Persona.Name, m.Direction, thread)
			if d.NoReply.Skip() {
				fmt.Fprintf(w, "; not to be answered (%s)", d.NoReply)
			}
			fmt.Fprintln(w)
		}
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

// output is everything a demo run prints with -json.
type output struct {
	Ingested []ingestedFile
	Runs     []demoRun
	Tickets  []host.Ticket
	Trail    []store.Run
}

// printJSON prints the ingested files, the runs with the replies sent after them, the tickets and
// the trail as one JSON document.
func printJSON(w io.Writer, o output) error {
	type modelCall struct {
		Turn       int        `json:"turn"`
		Model      string     `json:"model"`
		StopReason string     `json:"stop_reason"`
		Usage      chat.Usage `json:"usage"`
		ResponseID string     `json:"response_id"`
	}
	type sentJSON struct {
		MessageID string `json:"message_id"`
		Seq       int64  `json:"seq"`
		EML       string `json:"eml"`
		File      string `json:"file,omitempty"`
		Marked    string `json:"mark_sent_outcome"`
	}
	type runJSON struct {
		Title      string          `json:"title"`
		RunKey     string          `json:"run_key"`
		Kind       store.RunKind   `json:"kind"`
		Status     store.RunStatus `json:"status"`
		Attempt    int             `json:"attempt"`
		Usage      chat.Usage      `json:"usage"`
		StopReason string          `json:"stop_reason"`
		ModelCalls []modelCall     `json:"model_calls"`
		Messages   []chat.Message  `json:"messages"`
		Reply      *replyJSON      `json:"reply,omitempty"`
		Sent       []sentJSON      `json:"sent,omitempty"`
		Approvals  []approvalJSON  `json:"approvals,omitempty"`
	}
	type deliveryJSON struct {
		File        string            `json:"file"`
		Persona     string            `json:"persona"`
		MessageID   string            `json:"message_id"`
		Seq         int64             `json:"seq"`
		ThreadID    string            `json:"thread_id"`
		Direction   history.Direction `json:"direction"`
		Joined      bool              `json:"joined"`
		Duplicate   bool              `json:"duplicate"`
		NotToAnswer string            `json:"not_to_answer,omitempty"`
	}
	var out struct {
		Ingested []deliveryJSON   `json:"ingested"`
		Runs     []runJSON        `json:"runs"`
		Tickets  []host.Ticket    `json:"tickets"`
		Trail    []map[string]any `json:"daily_digest_trail,omitempty"`
	}
	for _, f := range o.Ingested {
		for _, d := range f.Deliveries {
			out.Ingested = append(out.Ingested, deliveryJSON{File: f.Name, Persona: d.Persona.Name, MessageID: d.Message.MessageID,
				Seq: d.Message.Seq, ThreadID: d.Message.ThreadID, Direction: d.Message.Direction, Joined: d.Joined, Duplicate: d.Duplicate,
				NotToAnswer: d.NoReply.String()})
		}
	}
	for _, r := range o.Runs {
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
		for _, s := range r.Sent {
			j.Sent = append(j.Sent, sentJSON{MessageID: s.Reply.MessageID, Seq: s.Reply.Seq, EML: string(s.Raw), File: s.File, Marked: s.Marked.String()})
		}
		for _, a := range r.Approvals {
			j.Approvals = append(j.Approvals, approvalJSON{CallID: a.CallID, Tool: a.ToolName, Arguments: a.Arguments, Input: a.Input,
				Status: a.Status, RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt, DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt, Note: a.Note})
		}
		out.Runs = append(out.Runs, j)
	}
	out.Tickets = o.Tickets
	out.Trail = trailJSON(o.Trail)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// approvalJSON is a call that waited for approval, with its decision, as the -json output
// shows it.
type approvalJSON struct {
	CallID      string               `json:"call_id"`
	Tool        string               `json:"tool"`
	Arguments   string               `json:"arguments"`
	Input       string               `json:"input"`
	Status      store.ApprovalStatus `json:"status"`
	RequestedAt time.Time            `json:"requested_at"`
	ExpiresAt   time.Time            `json:"expires_at"`
	DecidedBy   string               `json:"decided_by"`
	DecidedAt   time.Time            `json:"decided_at"`
	Note        string               `json:"note"`
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
