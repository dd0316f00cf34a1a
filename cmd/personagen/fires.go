package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/personagen/personagen/runtime/console"
	"github.com/personagen/personagen/runtime/store"
)

func init() {
	register(command{name: "fires", summary: "list each responsibility's latest fires and their outcomes", run: runFires})
	register(command{name: "fire", summary: "fire run PERSONA RESPONSIBILITY INSTANT: mark a fire to run again (a running service does it)", run: runFire})
	register(command{name: "outbox", summary: "list the replies waiting to be sent and those that failed", run: runOutbox})
	register(command{name: "resend", summary: "put a reply back into the outbox, same Message-ID (a running service sends it)", run: runResend})
}

func runFires(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("fires", "", stderr)
	sf := addStoreFlags(fs, true)
	persona := fs.String("persona", "", "only this persona's responsibilities")
	n := fs.Int("n", 10, "fires per responsibility")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "fires", 0, stderr) {
		return exitUsage
	}
	st, code := sf.open(ctx, "fires", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	trails, err := st.FireTrails(ctx, *persona, *n)
	if err != nil {
		return exitFor("fires", err, stderr)
	}
	if *sf.asJSON {
		if trails == nil {
			trails = []store.FireTrail{}
		}
		return jsonOut(stdout, stderr, trails)
	}
	var rows [][]string
	for _, t := range trails {
		for _, r := range t.Fires {
			rows = append(rows, []string{t.Persona, t.Responsibility, r.FireAt.UTC().Format(time.RFC3339), string(r.Status) + classSuffix(r.FailureClass), stamp(r.StartedAt), r.Reason})
		}
	}
	table(stdout, []string{"PERSONA", "RESPONSIBILITY", "FIRE", "STATUS", "STARTED", "REASON"}, rows)
	return exitOK
}

func runFire(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		fmt.Fprintln(stderr, "usage: personagen fire run [flags] PERSONA RESPONSIBILITY INSTANT")
		return exitUsage
	}
	fs := newFlagSet("fire run", "PERSONA RESPONSIBILITY INSTANT", stderr)
	sf := addStoreFlags(fs, false)
	af := addActionFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: personagen fire run [flags] PERSONA RESPONSIBILITY INSTANT\n\nMarks the fire of PERSONA's RESPONSIBILITY at INSTANT (RFC 3339, 2026-03-06T08:00:00Z) to run\n"+
			"again, in the store: its run is reopened with its lease released (a fire without a run is recorded\nmissed first). This command runs nothing; the next pass of a running service's scheduler runs the\n"+
			"fire (one at an instant that is not a fire of the schedule is abandoned there). Recorded as a run\nevent with -by and -reason.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args[1:]); !ok {
		return code
	}
	if !wantArgs(fs, "fire run", 3, stderr) {
		return exitUsage
	}
	at, err := time.Parse(time.RFC3339Nano, fs.Arg(2))
	if err != nil {
		fmt.Fprintf(stderr, "personagen fire run: INSTANT %q is not an RFC 3339 time (2026-03-06T08:00:00Z)\n", fs.Arg(2))
		return exitUsage
	}
	a, ok := af.actor("fire run", stderr)
	if !ok {
		return exitUsage
	}
	st, code := sf.open(ctx, "fire run", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	key, out, err := console.RunFire(ctx, st, fs.Arg(0), fs.Arg(1), at, a)
	if err != nil {
		return exitFor("fire run", err, stderr)
	}
	report(stdout, out, "run "+key+" is marked to run: a running service's scheduler runs it", "run "+key+" already waits to be run")
	return exitOK
}

func runOutbox(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("outbox", "", stderr)
	sf := addStoreFlags(fs, true)
	status := fs.String("status", "", "only unsent, failed or bounced replies (default all three)")
	persona := fs.String("persona", "", "only this persona's replies")
	limit := fs.Int("limit", store.DefaultListLimit, "at most this many replies of each status")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "outbox", 0, stderr) {
		return exitUsage
	}
	statuses := []string{store.OutboxBounced, store.OutboxFailed, store.OutboxUnsent}
	if *status != "" {
		statuses = []string{*status}
	}
	st, code := sf.open(ctx, "outbox", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	all := []store.OutboxEntry{}
	for _, s := range statuses {
		list, err := st.Outbox(ctx, store.OutboxQuery{Status: s, Mailbox: *persona, Limit: *limit})
		if err != nil {
			return exitFor("outbox", err, stderr)
		}
		all = append(all, list...)
	}
	if *sf.asJSON {
		return jsonOut(stdout, stderr, all)
	}
	var rows [][]string
	for _, e := range all {
		when, why := stamp(e.State.NextAt), e.State.LastError
		switch e.State.Status {
		case "failed":
			when = stamp(e.State.FailedAt)
		case "bounced":
			when, why = stamp(e.State.BouncedAt), e.State.BounceStatus+" "+e.State.BounceDiagnostic
		}
		rows = append(rows, []string{strconv.FormatInt(e.Seq, 10), e.State.Status, strconv.Itoa(e.State.Attempts), when, e.Mailbox, e.Subject, why})
	}
	table(stdout, []string{"SEQ", "STATE", "ATTEMPTS", "WHEN", "PERSONA", "SUBJECT", "WHY"}, rows)
	return exitOK
}

func runResend(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("resend", "SEQ", stderr)
	sf := addStoreFlags(fs, false)
	af := addActionFlags(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, "usage: personagen resend [flags] SEQ\n\nPuts the reply SEQ (see personagen outbox) back into the outbox, with the same Message-ID: it is the\n"+
			"same message. This command sends nothing; a running service's sender sends it. Recorded as an\noperator action with -by and -reason.\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "resend", 1, stderr) {
		return exitUsage
	}
	seq, err := strconv.ParseInt(fs.Arg(0), 10, 64)
	if err != nil {
		fmt.Fprintf(stderr, "personagen resend: SEQ %q is not a reply's seq (a number; see personagen outbox)\n", fs.Arg(0))
		return exitUsage
	}
	a, ok := af.actor("resend", stderr)
	if !ok {
		return exitUsage
	}
	st, code := sf.open(ctx, "resend", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	out, err := console.Resend(ctx, st, seq, a)
	if err != nil {
		return exitFor("resend", err, stderr)
	}
	report(stdout, out, fmt.Sprintf("reply %d is back in the outbox: a running service sends it", seq), fmt.Sprintf("reply %d already waits to be sent", seq))
	return exitOK
}
