package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/personagen/personagen/runtime/store"
)

func init() {
	register(command{name: "prune", summary: "delete old threads, or one customer's, with everything derived from them", run: runPrune})
}

func runPrune(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("prune", "", stderr)
	sf := addStoreFlags(fs, true)
	af := addActionFlags(fs)
	olderThan := fs.String("older-than", "", "delete threads whose last activity is older than this age (90d, 36h)")
	from := fs.String("from", "", "delete the threads with a message from or to this address")
	dry := fs.Bool("dry-run", false, "print what would be deleted, delete nothing")
	batch := fs.Int("batch", store.DefaultPruneBatch, "threads selected at a time")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if !wantArgs(fs, "prune", 0, stderr) {
		return exitUsage
	}
	if *olderThan == "" && *from == "" {
		fmt.Fprintln(stderr, "personagen prune: say what to delete: -older-than AGE, -from ADDRESS, or both")
		return exitUsage
	}
	p := store.Prune{From: *from, Batch: *batch, DryRun: *dry, By: *af.by, Reason: *af.reason}
	if !*dry && strings.TrimSpace(*af.reason) == "" {
		fmt.Fprintln(stderr, "personagen prune: say why with -reason (it is recorded with every deleted thread)")
		return exitUsage
	}
	st, code := sf.open(ctx, "prune", stderr)
	if st == nil {
		return code
	}
	defer st.Close()
	if *olderThan != "" {
		d, err := parseAge(*olderThan)
		if err != nil {
			fmt.Fprintf(stderr, "personagen prune: -older-than %v\n", err)
			return exitUsage
		}
		p.Before = st.Now().Add(-d)
	}
	rep, err := st.Prune(ctx, p)
	if *sf.asJSON {
		if rep.Deleted == nil {
			rep.Deleted = []store.PrunedThread{}
		}
		if rep.Kept == nil {
			rep.Kept = []store.KeptThread{}
		}
		if code := jsonOut(stdout, stderr, rep); code != exitOK {
			return code
		}
	} else {
		verb := "deleted"
		if *dry {
			verb = "would delete"
		}
		for _, t := range rep.Deleted {
			fmt.Fprintf(stdout, "%s thread %s (%s, %d messages, last activity %s)\n", verb, t.ThreadID, t.Mailbox, t.Messages, stamp(t.LastActivity))
			for _, id := range t.AttachmentIDs {
				fmt.Fprintf(stdout, "  attachment %s (its bytes are the host's: delete them where it keeps them)\n", oneLine(id, 200))
			}
		}
		for _, k := range rep.Kept {
			fmt.Fprintf(stdout, "kept thread %s: %s\n", k.ThreadID, k.Why)
		}
		fmt.Fprintf(stdout, "%s %d threads; kept %d\n", verb, len(rep.Deleted), len(rep.Kept))
	}
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			fmt.Fprintf(stderr, "personagen prune: %v\n", err)
			return exitUsage
		}
		return exitFor("prune", err, stderr)
	}
	return exitOK
}
