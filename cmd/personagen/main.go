// Command personagen compiles persona chain specs (YAML) into typed Go
// resolver pipelines, and validates them.
//
// Usage:
//
//	personagen <command> [flags] [arguments]
//
// Each command lives in its own file and registers itself from init, so a
// new command is a new file; `personagen help` lists them. Every command and
// flag is in docs/cli.md in the repository.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	_ "time/tzdata" // timezone checks work on machines without zoneinfo
)

// Exit codes shared by all commands.
const (
	exitOK    = 0 // success
	exitFail  = 1 // the command ran and found problems (invalid specs, stale files)
	exitUsage = 2 // bad command line
)

// command is one subcommand. run receives the arguments after the command
// name and returns the exit code.
type command struct {
	name    string
	summary string // one line for the usage list
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

// commands is the registry, filled by register from each command file's
// init and read-only afterwards.
var commands = map[string]command{}

// register adds c to the registry; a duplicate name is a programming error
// and panics at start-up.
func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("personagen: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args[0] to its command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "personagen: unknown command %q\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdout, stderr)
}

func usage(w io.Writer) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: personagen <command> [flags] [arguments]")
	fmt.Fprintln(w, "\ncommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'personagen <command> -h' for a command's flags.")
}

// newFlagSet returns a FlagSet for a command that reports errors to stderr
// and returns them (the caller maps them to exitUsage, or exitOK for -h).
func newFlagSet(name, argsUsage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: personagen %s [flags] %s\n", name, argsUsage)
		fs.PrintDefaults()
	}
	return fs
}

// checkPaths rejects positional arguments that cannot be paths: an empty
// one, and one that starts with "-" — Go's flag package stops at the first
// non-flag, so "validate x -format json" would otherwise read "-format" and
// "json" as files. After "--" every argument is a path, as with Go's own
// tools (validate -- -x.persona.yaml); a file whose name starts with "-"
// can also be named "./-x". args are the arguments fs parsed. It returns
// (exitUsage, false) after printing the problem and the usage.
func checkPaths(fs *flag.FlagSet, args []string, stderr io.Writer) (int, bool) {
	terminated := afterDashDash(fs, args)
	for _, a := range fs.Args() {
		msg := ""
		switch {
		case a == "":
			msg = "an empty path was given"
		case !terminated && len(a) > 1 && a[0] == '-':
			msg = fmt.Sprintf("flag %q after a path; put flags before PATH... (name a file starting with - as ./%s, or after --)", a, a)
		}
		if msg != "" {
			fmt.Fprintf(stderr, "personagen %s: %s\n", fs.Name(), msg)
			fs.Usage()
			return exitUsage, false
		}
	}
	return 0, true
}

// afterDashDash reports whether fs stopped parsing args at a "--", so that
// all of fs.Args() came after it.
func afterDashDash(fs *flag.FlagSet, args []string) bool {
	i := len(args) - fs.NArg() - 1
	return i >= 0 && args[i] == "--"
}

// parseFlags parses args; it returns (code, false) when the command must
// stop: exitOK after -h, exitUsage on a bad flag.
func parseFlags(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return exitOK, false
		}
		return exitUsage, false
	}
	return 0, true
}
