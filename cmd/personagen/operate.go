package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/personagen/personagen/runtime/console"
	"github.com/personagen/personagen/runtime/store"
)

// Exit codes of the commands that read and act on a store (threads, runs, retry, …), beside
// exitOK, exitFail (the store could not be opened, read or written) and exitUsage.
const (
	exitNotFound = 3 // the run, thread, reply or responsibility named is not in the store
	exitRefused  = 4 // the action does not apply to what it names as it stands
)

// storeFlags are the flags every store command takes.
type storeFlags struct {
	dsn    *string
	asJSON *bool
}

func addStoreFlags(fs *flag.FlagSet, listing bool) storeFlags {
	f := storeFlags{dsn: fs.String("dsn", os.Getenv(dsnEnv), "the store's database (default $"+dsnEnv+")")}
	if listing {
		f.asJSON = fs.Bool("json", false, "print JSON instead of a table")
	}
	return f
}

// actionFlags are the flags of a command that acts: who and why, recorded with the action.
type actionFlags struct {
	by, reason *string
}

func addActionFlags(fs *flag.FlagSet) actionFlags {
	return actionFlags{
		by:     fs.String("by", defaultActor(), "who acts, as recorded"),
		reason: fs.String("reason", "", "why (required; recorded with the action)"),
	}
}

// defaultActor is "cli:USER@HOST".
func defaultActor() string {
	name := "unknown"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	host, _ := os.Hostname()
	return "cli:" + name + "@" + host
}

func (a actionFlags) actor(name string, stderr io.Writer) (console.Actor, bool) {
	if strings.TrimSpace(*a.reason) == "" {
		fmt.Fprintf(stderr, "personagen %s: say why with -reason (it is recorded with the action)\n", name)
		return console.Actor{}, false
	}
	return console.Actor{By: *a.by, Reason: *a.reason}, true
}

// openFor opens the store f names for command name; it prints the problem and returns an
// exit code when it cannot.
func (f storeFlags) open(ctx context.Context, name string, stderr io.Writer) (*store.Store, int) {
	if *f.dsn == "" {
		fmt.Fprintf(stderr, "personagen %s: no database: pass -dsn or set %s\n", name, dsnEnv)
		return nil, exitUsage
	}
	st, err := store.Open(ctx, *f.dsn)
	if err != nil {
		fmt.Fprintf(stderr, "personagen %s: %v\n", name, err)
		return nil, exitFail
	}
	return st, exitOK
}

// exitFor prints err for command name and returns its exit code (exitCode).
func exitFor(name string, err error, stderr io.Writer) int {
	fmt.Fprintf(stderr, "personagen %s: %v\n", name, err)
	return exitCode(err)
}

// exitCode is the exit code of a store command that failed with err: exitNotFound, exitRefused,
// exitUsage for the store's ErrInvalid, else exitFail.
func exitCode(err error) int {
	switch {
	case errors.Is(err, console.ErrNotFound), errors.Is(err, store.ErrRunNotFound), errors.Is(err, store.ErrMessageNotFound):
		return exitNotFound
	case errors.Is(err, console.ErrRefused):
		return exitRefused
	case errors.Is(err, store.ErrInvalid):
		return exitUsage
	}
	return exitFail
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// table writes rows as aligned columns under header.
func table(w io.Writer, header []string, rows [][]string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		for i := range r {
			r[i] = oneLine(r[i], 80)
		}
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}

// oneLine makes s one line of at most n characters (control characters, tabs and line breaks
// become spaces, so that nothing in the store can move the terminal's cursor or forge a row).
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// stamp formats a time for a table ("-" for none).
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// parseAge reads an age: a Go duration ("36h") or a number of days ("90d").
func parseAge(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(d, "%d", &n); err != nil || n < 0 || fmt.Sprint(n) != d {
			return 0, fmt.Errorf("%q is not a number of days (90d)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age (90d, 36h)", s)
	}
	return d, nil
}

// noArgs fails a command that takes no positional arguments but got some.
func wantArgs(fs *flag.FlagSet, name string, n int, stderr io.Writer) bool {
	if fs.NArg() != n {
		fmt.Fprintf(stderr, "personagen %s: want %d argument(s), got %q\n", name, n, fs.Args())
		fs.Usage()
		return false
	}
	return true
}
