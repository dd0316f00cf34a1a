package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"time"

	"github.com/personagen/personagen/runtime/console"
	"github.com/personagen/personagen/runtime/store"
)

func init() {
	register(command{name: "approvals", summary: "list the tool calls that wait for approval (or were decided) in a store", run: runApprovals})
	register(command{name: "approve", summary: "approve a tool call that waits for approval: it runs when its run resumes", run: runApprove})
	register(command{name: "deny", summary: "deny a tool call that waits for approval: the model reads why it did not run", run: runDeny})
}

// openStoreFlag adds -dsn to fs (default $PERSONAGEN_DSN) and returns a func that opens the store
// it names, or prints why not: exitUsage without a DSN, exitFail when the store cannot be opened.
func openStoreFlag(fs *flag.FlagSet, stderr io.Writer) func(ctx context.Context) (*store.Store, int) {
	dsn := fs.String("dsn", os.Getenv(dsnEnv), "the store: mysql://user:pass@tcp(host:3306)/db, user:pass@tcp(host:3306)/db, sqlite:path, file:path or path.db (default $"+dsnEnv+")")
	return func(ctx context.Context) (*store.Store, int) {
		if *dsn == "" {
			fmt.Fprintf(stderr, "personagen %s: no database: pass -dsn or set %s\n", fs.Name(), dsnEnv)
			return nil, exitUsage
		}
		s, err := store.Open(ctx, *dsn)
		if err != nil {
			fmt.Fprintf(stderr, "personagen %s: %v\n", fs.Name(), err)
			return nil, exitFail
		}
		return s, exitOK
	}
}

// runApprovals lists the approvals of the store -dsn names: by default the calls that wait for a
// decision and can still get one, oldest first, each with its run, its arguments as the model
// produced them and the input the tool decodes them into, escaped so that no control or bidi
// character of the model's output reaches the terminal. -status picks another status (approved,
// denied, expired) or all; -persona and -run narrow the list; -limit keeps the newest N;
// -format json prints a JSON array instead. Exit codes: 0 (also for an empty list), 1 when the
// store cannot be read, 2 for a bad command line.
func runApprovals(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("approvals", "", stderr)
	open := openStoreFlag(fs, stderr)
	status := fs.String("status", string(store.ApprovalWaiting), "waiting, approved, denied, expired or all")
	persona := fs.String("persona", "", "only the approvals of this persona")
	runKey := fs.String("run", "", "only the approvals of this run (its key)")
	limit := fs.Int("limit", 100, "the newest N approvals (0 for all)")
	format := fs.String("format", "text", "text or json")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	q := store.ApprovalQuery{Status: store.ApprovalStatus(*status), Persona: *persona, RunKey: *runKey, Limit: *limit}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "personagen approvals: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return exitUsage
	case *status == "all":
		q.Status = ""
	case q.Status != store.ApprovalWaiting && q.Status != store.ApprovalApproved && q.Status != store.ApprovalDenied && q.Status != store.ApprovalExpired:
		fmt.Fprintf(stderr, "personagen approvals: -status %q: want waiting, approved, denied, expired or all\n", *status)
		return exitUsage
	case *format != "text" && *format != "json":
		fmt.Fprintf(stderr, "personagen approvals: -format %q: want text or json\n", *format)
		return exitUsage
	case *limit < 0:
		fmt.Fprintf(stderr, "personagen approvals: -limit %d: want 0 or more\n", *limit)
		return exitUsage
	}
	s, code := open(ctx)
	if s == nil {
		return code
	}
	defer s.Close()
	list, err := s.Approvals(ctx, q)
	if err != nil {
		fmt.Fprintf(stderr, "personagen approvals: %v\n", err)
		return exitFail
	}
	if *format == "json" {
		return printApprovalsJSON(stdout, stderr, list)
	}
	if len(list) == 0 {
		what := "no calls wait for approval"
		if *status != string(store.ApprovalWaiting) {
			what = "no approvals match"
		}
		fmt.Fprintln(stdout, what)
		return exitOK
	}
	for i, a := range list {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		writeApproval(stdout, a)
	}
	return exitOK
}

// writeApproval writes one approval as runApprovals lists it.
func writeApproval(w io.Writer, a store.Approval) {
	fmt.Fprintf(w, "%s %s  run %s  call %s\n", a.Status, console.Visible(a.ToolName), console.Visible(a.RunKey), console.Visible(a.CallID))
	switch a.RunKind {
	case store.RunReply:
		fmt.Fprintf(w, "  persona %s, %s run answering message seq %d of thread %s (run %s)\n",
			console.Visible(a.Persona), a.RunKind, a.MessageSeq, console.Visible(a.ThreadID), a.RunStatus)
	default:
		fmt.Fprintf(w, "  persona %s, %s run of %s at %s (run %s)\n",
			console.Visible(a.Persona), a.RunKind, console.Visible(a.Responsibility), a.FireAt.Format(time.RFC3339), a.RunStatus)
	}
	fmt.Fprintf(w, "  requested %s, expires %s (then: %s)\n", a.RequestedAt.Format(time.RFC3339), a.ExpiresAt.Format(time.RFC3339), a.OnTimeout)
	switch a.Status {
	case store.ApprovalApproved, store.ApprovalDenied:
		fmt.Fprintf(w, "  %s by %s at %s", a.Status, console.Visible(a.DecidedBy), a.DecidedAt.Format(time.RFC3339))
		if a.Note != "" {
			fmt.Fprintf(w, ": %s", console.Visible(a.Note))
		}
		fmt.Fprintln(w)
	case store.ApprovalExpired:
		fmt.Fprintf(w, "  expired at %s: no decision came\n", a.ExpiresAt.Format(time.RFC3339))
	}
	if !a.StartedAt.IsZero() {
		fmt.Fprintf(w, "  started %s\n", a.StartedAt.Format(time.RFC3339))
	}
	fmt.Fprintf(w, "  arguments %s\n", console.VisibleJSON(a.Arguments))
	if a.Input != "" {
		fmt.Fprintf(w, "  decoded   %s\n", console.VisibleJSON(a.Input))
	}
}

// approvalJSON is an approval as -format json prints it.
type approvalJSON struct {
	RunKey         string    `json:"run_key"`
	RunKind        string    `json:"run_kind"`
	RunStatus      string    `json:"run_status"`
	Persona        string    `json:"persona"`
	ThreadID       string    `json:"thread_id,omitempty"`
	MessageSeq     int64     `json:"message_seq,omitempty"`
	Responsibility string    `json:"responsibility,omitempty"`
	FireAt         time.Time `json:"fire_at,omitzero"`
	Turn           int       `json:"turn"`
	Position       int       `json:"position"`
	CallID         string    `json:"call_id"`
	Tool           string    `json:"tool"`
	Arguments      string    `json:"arguments"`
	Input          string    `json:"input,omitempty"`
	Status         string    `json:"status"`
	OnTimeout      string    `json:"on_timeout"`
	RequestedAt    time.Time `json:"requested_at"`
	ExpiresAt      time.Time `json:"expires_at"`
	DecidedBy      string    `json:"decided_by,omitempty"`
	DecidedAt      time.Time `json:"decided_at,omitzero"`
	Note           string    `json:"note,omitempty"`
	StartedAt      time.Time `json:"started_at,omitzero"`
}

func printApprovalsJSON(stdout, stderr io.Writer, list []store.Approval) int {
	out := make([]approvalJSON, len(list))
	for i, a := range list {
		out[i] = approvalJSON{RunKey: a.RunKey, RunKind: string(a.RunKind), RunStatus: string(a.RunStatus), Persona: a.Persona,
			ThreadID: a.ThreadID, MessageSeq: a.MessageSeq, Responsibility: a.Responsibility, FireAt: a.FireAt,
			Turn: a.TurnIndex, Position: a.Position, CallID: a.CallID, Tool: a.ToolName, Arguments: a.Arguments, Input: a.Input,
			Status: string(a.Status), OnTimeout: string(a.OnTimeout), RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt,
			DecidedBy: a.DecidedBy, DecidedAt: a.DecidedAt, Note: a.Note, StartedAt: a.StartedAt}
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "personagen approvals: %v\n", err)
		return exitFail
	}
	return exitOK
}

// runApprove approves a call: see decide.
func runApprove(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return decide(ctx, "approve", store.ApprovalApproved, args, stdout, stderr)
}

// runDeny denies a call: see decide.
func runDeny(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return decide(ctx, "deny", store.ApprovalDenied, args, stdout, stderr)
}

// decide records the decision status of -by (default: the user running the command) on the call
// CALL_ID of the run RUN_KEY (as `personagen approvals` lists them), with -note, in the store
// -dsn names, by console.Decide (the web console's Approve and Deny buttons decide through it
// too): the run's work becomes available, and a service resumes the run on any replica.
// Deciding again the same way changes nothing and succeeds; deciding the other way, or after the
// call expired, fails. Exit codes: 0 when the call has the decision, 1 when the store cannot be
// opened, read or written, 2 for a bad command line (or a note too long), 3 for no such run or
// call, 4 when the call cannot have the decision (decided the other way, expired, or its run
// finished).
func decide(ctx context.Context, name string, status store.ApprovalStatus, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet(name, "RUN_KEY CALL_ID", stderr)
	open := openStoreFlag(fs, stderr)
	by := fs.String("by", "", "who decides, as recorded with the decision (default: the user running the command)")
	noteHelp := "a note recorded with the decision"
	if status == store.ApprovalDenied {
		noteHelp = "the reason, which the model reads (and so perhaps the customer): write it for the model"
	}
	note := fs.String("note", "", noteHelp)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() != 2 {
		fmt.Fprintf(stderr, "personagen %s: want RUN_KEY and CALL_ID (see personagen approvals), got %d arguments\n", name, fs.NArg())
		fs.Usage()
		return exitUsage
	}
	decider := *by
	if decider == "" {
		if u, err := user.Current(); err == nil {
			decider = u.Username
		}
		if decider == "" {
			fmt.Fprintf(stderr, "personagen %s: who decides is not known: pass -by\n", name)
			return exitUsage
		}
	}
	s, code := open(ctx)
	if s == nil {
		return code
	}
	defer s.Close()
	a, out, err := console.Decide(ctx, s, fs.Arg(0), fs.Arg(1), status, console.Actor{By: decider, Reason: *note})
	if err != nil {
		fmt.Fprintf(stderr, "personagen %s: %s\n", name, console.Visible(err.Error()))
		return exitCode(err)
	}
	if out == console.Already {
		fmt.Fprintf(stdout, "call %s (%s) of run %s was already %s by %s at %s; nothing changed\n", console.Visible(a.CallID), console.Visible(a.ToolName),
			console.Visible(a.RunKey), a.Status, console.Visible(a.DecidedBy), a.DecidedAt.Format(time.RFC3339))
		return exitOK
	}
	then := "it runs when the run resumes"
	if status == store.ApprovalDenied {
		then = "it does not run; the model reads that it was denied, and why"
	}
	fmt.Fprintf(stdout, "%s call %s (%s) of run %s as %s: %s\n", a.Status, console.Visible(a.CallID), console.Visible(a.ToolName), console.Visible(a.RunKey),
		console.Visible(a.DecidedBy), then)
	return exitOK
}
