package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/personagen/personagen/runtime/store"
)

func init() {
	register(command{name: "threads", summary: "list the store's threads, the most recently active first", run: runThreads})
	register(command{name: "thread", summary: "print a thread: its messages, tool rounds, runs and replies", run: runThread})
}

// runThreads lists threads: last activity, state, persona, size, first sender and subject.
func runThreads(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("threads", "", stderr)
	sf := addStoreFlags(fs, true)
	persona := fs.String("persona", "", "only this persona's threads")
	limit := fs.Int("limit", store.DefaultListLimit, "at most this many threads")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "threads", 0, stderr) {
		return exitUsage
	}
	st, code := sf.open(ctx, "threads", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	list, err := st.Threads(ctx, store.ThreadQuery{Mailbox: *persona, Limit: *limit})
	if err != nil {
		return exitFor("threads", err, stderr)
	}
	if *sf.asJSON {
		if list == nil {
			list = []store.ThreadSummary{}
		}
		return jsonOut(stdout, stderr, list)
	}
	var rows [][]string
	for _, t := range list {
		rows = append(rows, []string{stamp(t.LastActivity), string(t.State), t.Mailbox, fmt.Sprint(t.Messages), t.From, t.Subject, t.ThreadID})
	}
	table(stdout, []string{"LAST ACTIVITY", "STATE", "PERSONA", "MESSAGES", "FROM", "SUBJECT", "THREAD"}, rows)
	return exitOK
}

func jsonOut(stdout, stderr io.Writer, v any) int {
	if err := printJSON(stdout, v); err != nil {
		fmt.Fprintf(stderr, "personagen: %v\n", err)
		return exitFail
	}
	return exitOK
}

// runThread prints one thread as a transcript.
func runThread(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("thread", "THREAD-ID", stderr)
	sf := addStoreFlags(fs, true)
	limit := fs.Int("limit", store.DefaultThreadMessages, "at most this many of the newest messages")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "thread", 1, stderr) {
		return exitUsage
	}
	st, code := sf.open(ctx, "thread", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	d, err := st.ThreadDetailOf(ctx, fs.Arg(0), *limit)
	if err != nil {
		return exitFor("thread", err, stderr)
	}
	if *sf.asJSON {
		return jsonOut(stdout, stderr, d)
	}
	s := d.Summary
	fmt.Fprintf(stdout, "thread %s of %s: %s, %d messages, last activity %s\n", s.ThreadID, s.Mailbox, s.State, s.Messages, stamp(s.LastActivity))
	if d.Omitted > 0 {
		fmt.Fprintf(stdout, "(%d earlier messages not shown)\n", d.Omitted)
	}
	runsOf := map[int64][]store.Run{}
	for _, r := range d.Runs {
		runsOf[r.MessageSeq] = append(runsOf[r.MessageSeq], r)
	}
	for _, c := range d.Compactions {
		fmt.Fprintf(stdout, "\n[summary up to message %d]\n%s\n", c.BoundarySeq, indent(clean(c.Summary)))
	}
	for _, m := range d.Messages {
		fmt.Fprintf(stdout, "\n── %d %s %s\nFrom: %s\nTo: %s\n", m.Seq, m.Direction, stamp(m.Date), oneLine(m.From, 200), oneLine(strings.Join(m.To, ", "), 400))
		if len(m.Cc) > 0 {
			fmt.Fprintf(stdout, "Cc: %s\n", oneLine(strings.Join(m.Cc, ", "), 400))
		}
		fmt.Fprintf(stdout, "Subject: %s\n", oneLine(m.Subject, 400))
		if m.NotToAnswer != "" {
			fmt.Fprintf(stdout, "Not to be answered: %s\n", oneLine(m.NotToAnswer, 200))
		}
		body := m.Text
		if strings.TrimSpace(body) == "" && m.HTML != "" {
			body = "[HTML body, as text]\n" + htmlText(m.HTML)
		}
		fmt.Fprintf(stdout, "\n%s\n", indent(clean(body)))
		for _, a := range m.Attachments {
			fmt.Fprintf(stdout, "  [attachment %s, %s, %d bytes]\n", oneLine(a.Filename, 200), a.ContentType, a.Size)
		}
		for _, u := range m.ToolUses {
			ok := "ok"
			if !u.Succeeded {
				ok = "failed"
			}
			fmt.Fprintf(stdout, "  tool %s (turn %d, %s) %s\n    → %s\n", u.ToolName, u.TurnIndex, ok, oneLine(u.Arguments, 200), oneLine(u.Result, 200))
		}
		for _, r := range runsOf[m.Seq] {
			fmt.Fprintf(stdout, "  run %s: %s%s %s\n", r.Key, r.Status, classSuffix(r.FailureClass), oneLine(r.Reason, 160))
		}
		if st, ok := d.Sends[m.Seq]; ok {
			fmt.Fprintf(stdout, "  reply %s after %d attempts %s\n", st.Status, st.Attempts, oneLine(st.LastError, 160))
		}
	}
	return exitOK
}

func classSuffix(c store.FailureClass) string {
	if c == "" {
		return ""
	}
	return " (" + string(c) + ")"
}

// clean removes the control characters of a body but its line breaks and tabs.
func clean(s string) string {
	return strings.Map(func(r rune) rune {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}
