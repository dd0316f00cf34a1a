package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/personagen/personagen/spec"
)

func init() {
	register(command{name: "validate", summary: "check persona specs and report every error", run: runValidate})
}

// runValidate loads every spec under the arguments and prints all
// diagnostics, sorted by file, line, column: as "file:line:col: message"
// lines on stderr (text; a warning reads "file:line:col: warning:
// message"), as a JSON array on stdout (json; a warning's element has
// "severity": "warning"), or as GitHub Actions ::error and ::warning
// annotations on stdout (github). It also checks the review fixtures next to
// the specs (checkFixtures) and warns where a resolver order defeats the
// prompt cache (spec.CacheWarnings). With -check it also runs generate's
// checks against the Go code, writing nothing (see checkDiagnostics). Exit 0
// when all specs and fixtures are valid (warnings included, unless -strict),
// 1 when any is not (or, with -strict, has a warning), 2 on a usage error.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("validate", "PATH...", stderr)
	format := fs.String("format", "text", "output `format`: text, json or github")
	strict := fs.Bool("strict", false, "exit 1 on warnings too")
	check := fs.Bool("check", false, "also run generate's checks against the Go code (host references, with values, prompt files), writing nothing; with no PATH, for every //go:generate line that runs personagen generate")
	var ga genArgs
	addOutputFlags(fs, &ga)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	// The format is checked first: "-format FILE" (the value forgotten)
	// takes FILE as the format and leaves no paths.
	var write func(io.Writer, []spec.Diagnostic) error
	out := stdout
	switch *format {
	case "text":
		write, out = writeText, stderr
	case "json":
		write = writeJSON
	case "github":
		write = writeGitHub
	default:
		msg := fmt.Sprintf("unknown format %q (want text, json or github)", *format)
		if looksLikePath(*format) {
			msg += fmt.Sprintf("; %q looks like a path: -format takes its value first, as in -format json %s", *format, *format)
		}
		fmt.Fprintf(stderr, "personagen validate: %s\n", msg)
		return exitUsage
	}
	if code, ok := checkOutputFlags(fs, *check, stderr); !ok {
		return code
	}
	if fs.NArg() == 0 && !*check {
		fmt.Fprintln(stderr, "personagen validate: no paths given")
		fs.Usage()
		return exitUsage
	}
	if code, ok := checkPaths(fs, args, stderr); !ok {
		return code
	}
	var diags []spec.Diagnostic
	code := exitOK
	if *check {
		ga.paths = fs.Args()
		diags, code = checkDiagnostics(ctx, &ga, stderr)
		if code != exitOK && len(diags) == 0 {
			// The checks could not run (stderr says why): print no result, since an empty
			// JSON list would read as "valid".
			return code
		}
	} else {
		_, diags = spec.LoadPaths(fs.Args())
	}
	paths := fs.Args()
	if len(paths) == 0 {
		paths = directivePaths()
	}
	if len(paths) > 0 {
		specs, _ := spec.LoadPaths(paths)
		diags = append(diags, checkFixtures(specs)...)
		for _, p := range specs {
			diags = append(diags, spec.CacheWarnings(p)...)
		}
		diags = slices.Compact(spec.SortDiagnostics(diags))
	}
	if err := write(out, diags); err != nil {
		fmt.Fprintf(stderr, "personagen validate: %v\n", err)
		return exitFail
	}
	for _, d := range diags {
		if !d.Warning || *strict {
			code = max(code, exitFail)
		}
	}
	return code
}

func writeText(w io.Writer, ds []spec.Diagnostic) error {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonDiagnostic is one element of -format json: line and column are 0
// when the problem concerns the whole file (it cannot be read).
// A warning has "severity": "warning"; an error has no severity key.
type jsonDiagnostic struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Message  string `json:"message"`
	Severity string `json:"severity,omitempty"`
}

func writeJSON(w io.Writer, ds []spec.Diagnostic) error {
	out := make([]jsonDiagnostic, len(ds))
	for i, d := range ds {
		out[i] = jsonDiagnostic{File: d.Pos.File, Line: d.Pos.Line, Column: d.Pos.Col, Message: d.Message}
		if d.Warning {
			out[i].Severity = "warning"
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// writeGitHub prints workflow commands that GitHub Actions turns into
// annotations on the spec lines.
func writeGitHub(w io.Writer, ds []spec.Diagnostic) error {
	var b strings.Builder
	for _, d := range ds {
		kind := "error"
		if d.Warning {
			kind = "warning"
		}
		b.WriteString("::" + kind + " file=" + ghProperty(d.Pos.File))
		if d.Pos.Line > 0 {
			fmt.Fprintf(&b, ",line=%d,col=%d", d.Pos.Line, d.Pos.Col)
		}
		b.WriteString("::" + ghData(d.Message) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// looksLikePath reports whether a flag value is more likely a path than
// the value meant: it exists, or has a slash or a spec's extension.
func looksLikePath(s string) bool {
	if _, err := os.Stat(s); err == nil {
		return true
	}
	return strings.ContainsAny(s, `/\`) || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml")
}

// directivePaths returns the spec paths of the //go:generate lines below the working directory
// that run personagen generate (nil when there is none or one cannot be read: checkDiagnostics
// reports that).
func directivePaths() []string {
	dirs, err := generateDirectives(".")
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range dirs {
		if a, _, ok := genFlags("validate", d.args, io.Discard); ok {
			out = append(out, a.paths...)
		}
	}
	return out
}
