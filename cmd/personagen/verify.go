package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/personagen/personagen/gen"
)

func init() {
	register(command{name: "verify", summary: "check that generated files are up to date (same arguments as generate)", run: runVerify})
}

// runVerify implements `personagen verify`, with generate's arguments: it
// generates in memory and compares with -out. A file whose content differs
// or that is missing is printed as a unified diff (current → expected) on
// stdout; a file in -out that personagen generated for a spec that no
// longer exists is reported as orphaned on stderr. Exit 0 when everything
// is fresh, 1 when anything is stale or orphaned or the specs have
// problems, 2 on a usage error. The last line of stderr counts the files
// by kind (stale, missing, orphaned).
//
// With no arguments at all it verifies what `go generate ./...` would
// generate: every //go:generate line below the current directory that runs
// `personagen generate` (see generateDirectives), with that line's arguments
// taken relative to its file's directory.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return verifyDirectives(ctx, stdout, stderr)
	}
	a, code, ok := genFlags("verify", args, stderr)
	if !ok {
		return code
	}
	return verifyArgs(ctx, a, stdout, stderr)
}

// verifyDirectives runs verify for each personagen generate directive below
// the current directory and returns the worst exit code; exitUsage when there
// is none.
func verifyDirectives(ctx context.Context, stdout, stderr io.Writer) int {
	dirs, err := generateDirectives(".")
	if err != nil {
		fmt.Fprintf(stderr, "personagen verify: %v\n", err)
		return exitFail
	}
	if len(dirs) == 0 {
		fmt.Fprintln(stderr, "personagen verify: no spec paths given, and no //go:generate line below this directory runs personagen generate; give generate's arguments")
		return exitUsage
	}
	worst := exitOK
	for _, d := range dirs {
		a, code, ok := genFlags("verify", d.args, stderr)
		if !ok {
			fmt.Fprintf(stderr, "personagen verify: in the //go:generate line at %s\n", d.pos)
			worst = max(worst, code)
			continue
		}
		worst = max(worst, verifyArgs(ctx, a, stdout, stderr))
	}
	return worst
}

// verifyArgs compares what generate would write for a with -out.
func verifyArgs(ctx context.Context, a *genArgs, stdout, stderr io.Writer) int {
	files, code := generateFiles(ctx, "verify", a, stderr)
	if code != exitOK {
		return code
	}
	var stale, missing int
	for _, f := range files {
		path := filepath.Join(a.out, f.Name)
		old, err := os.ReadFile(path)
		switch {
		case os.IsNotExist(err):
			fmt.Fprintf(stderr, "%s: missing: generate it from %s\n", filepath.ToSlash(path), f.Source)
			missing++
		case err != nil:
			fmt.Fprintf(stderr, "personagen verify: %v\n", err)
			return exitFail
		case string(old) == string(f.Content):
			continue
		default:
			fmt.Fprintf(stderr, "%s: stale: it differs from what %s generates\n", filepath.ToSlash(path), f.Source)
			stale++
		}
		label := filepath.ToSlash(path)
		fmt.Fprint(stdout, udiff.Unified(label, label, string(old), string(f.Content)))
	}
	var orphans, kept []gen.Leftover
	for _, l := range gen.Leftovers(a.out, files) {
		if l.SpecExists {
			kept = append(kept, l)
		} else {
			orphans = append(orphans, l)
		}
	}
	for _, l := range orphans {
		src := l.Source
		if src == "" {
			src = "its spec"
		}
		fmt.Fprintf(stderr, "%s: orphaned: generated from %s, which no longer exists; delete it or run personagen generate\n", filepath.ToSlash(filepath.Join(a.out, l.Name)), src)
	}
	reportKept(stderr, "verify", a.out, kept)
	if summary := verifySummary(stale, missing, len(orphans)); summary != "" {
		fmt.Fprintf(stderr, "personagen verify: %s; run personagen generate\n", summary)
		return exitFail
	}
	return exitOK
}

// verifySummary counts the problems by kind, naming only the kinds that
// occur ("1 stale, 2 orphaned generated files"); "" when there are none.
func verifySummary(stale, missing, orphaned int) string {
	var parts []string
	for _, k := range []struct {
		n    int
		kind string
	}{{stale, "stale"}, {missing, "missing"}, {orphaned, "orphaned"}} {
		if k.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", k.n, k.kind))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	noun := "generated files"
	if stale+missing+orphaned == 1 {
		noun = "generated file"
	}
	return strings.Join(parts, ", ") + " " + noun
}
