package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/personagen/personagen/gen"
	"github.com/personagen/personagen/runtime/review"
	"github.com/personagen/personagen/spec"
)

func init() {
	register(command{name: "diff", summary: "show how a change of the specs or prompts changes the requests of the fixtures", run: runDiff})
}

// Exit codes of diff, as diff(1) has them.
const (
	diffSame    = 0
	diffChanged = 1
	diffTrouble = 2
)

// runDiff renders every fixture with two revisions of the specs and prompt files — the working
// tree and a git revision (-base REV, run from inside the module; the spec paths and -root are
// the working tree's, read at REV with git archive), or two directories (OLD NEW: each is both
// the spec path and, unless -root names a directory inside both, the prompt root) — and prints
// per persona, fixture and format the unified diff of the two requests with their size and token
// deltas: as text, as Markdown for a pull-request comment, or as GitHub annotations at the
// changed spec lines (and at the load_file entries that read a changed prompt file). The host's
// Go code and the fixtures are the working tree's (NEW's) for both. Exit 0 when no request
// changed, 1 when one did, 2 when something failed.
func runDiff(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("diff", "[-base REV] [PATH...] | OLD NEW", stderr)
	base := fs.String("base", "", "compare the working tree with the git revision `REV`")
	root := fs.String("root", "", "the prompt `DIR` (default: the first PATH, or the -root of the //go:generate line; with OLD NEW, a directory inside both)")
	wire := fs.String("wire", "", "compare these formats: a comma-separated `LIST` of transcript (the default), anthropic, openai, openai-responses")
	format := fs.String("format", "text", "output `format`: text, markdown or github")
	persona := fs.String("persona", "", "compare only the fixtures of the persona `NAME`")
	fixture := fs.String("fixture", "", "compare only the fixtures named `NAME`")
	if code, ok := parseFlags(fs, args); !ok {
		if code == exitUsage {
			return diffTrouble
		}
		return code
	}
	if _, ok := checkPaths(fs, args, stderr); !ok {
		return diffTrouble
	}
	switch *format {
	case "text", "markdown", "github":
	default:
		fmt.Fprintf(stderr, "personagen diff: unknown format %q (want text, markdown or github)\n", *format)
		return diffTrouble
	}
	wires, err := parseWires(*wire)
	if err != nil {
		fmt.Fprintf(stderr, "personagen diff: %v\n", err)
		return diffTrouble
	}
	defer releaseReview()
	_, modRoot, ok := gen.ImportPath(".")
	if !ok {
		fmt.Fprintln(stderr, "personagen diff: the working directory is not inside a Go module: run from the host's module, where the review program is built")
		return diffTrouble
	}
	var oldPaths, newPaths []string
	var oldRoot, newRoot, oldBase string
	if *base == "" {
		if fs.NArg() != 2 {
			fmt.Fprintln(stderr, "personagen diff: give -base REV, or two directories OLD NEW")
			fs.Usage()
			return diffTrouble
		}
		oldPaths, newPaths = []string{fs.Arg(0)}, []string{fs.Arg(1)}
		oldRoot, newRoot = fs.Arg(0), fs.Arg(1)
		if *root != "" {
			oldRoot, newRoot = filepath.Join(fs.Arg(0), *root), filepath.Join(fs.Arg(1), *root)
		}
		oldBase, _ = filepath.Abs(fs.Arg(0))
	} else {
		paths, r, code, ok := reviewPaths("diff", fs.Args(), *root, stderr)
		if !ok {
			return max(code, diffTrouble)
		}
		tree, err := extractRevision(ctx, modRoot, *base, append(append([]string{}, paths...), r))
		if err != nil {
			fmt.Fprintf(stderr, "personagen diff: %v\n", err)
			return diffTrouble
		}
		newPaths, newRoot = paths, r
		for _, p := range paths {
			oldPaths = append(oldPaths, filepath.Join(tree, mustRel(modRoot, absPath(p))))
		}
		oldRoot, oldBase = filepath.Join(tree, mustRel(modRoot, absPath(r))), tree
	}
	newSpecs, diags := spec.LoadPaths(newPaths)
	if len(diags) > 0 {
		_ = writeText(stderr, diags)
		return diffTrouble
	}
	oldSpecs, diags := spec.LoadPaths(oldPaths)
	if len(diags) > 0 {
		_ = writeText(stderr, diags)
		return diffTrouble
	}
	fixtures, problems := loadFixtures(newSpecs, *persona, *fixture)
	for _, p := range problems {
		fmt.Fprintln(stderr, p.Error())
	}
	if len(problems) > 0 {
		return diffTrouble
	}
	if len(fixtures) == 0 {
		fmt.Fprintf(stderr, "personagen diff: no fixtures found: a fixture of persona P is %s/P/NAME.yaml next to P's spec\n", review.FixtureDir)
		return diffTrouble
	}
	head := reviewSide{name: "head", specs: newSpecs, root: absPath(newRoot), lineBase: modRoot}
	old := reviewSide{name: "base", specs: oldSpecs, root: absPath(oldRoot), lineBase: oldBase}
	if *base == "" {
		head.lineBase, _ = filepath.Abs(fs.Arg(1))
	}
	var items []review.JobItem
	type pair struct {
		f        *review.Fixture
		old, new int // item indexes; -1 when the persona is missing on that side
	}
	var pairs []pair
	for _, f := range fixtures {
		pr := pair{f: f, old: -1, new: -1}
		for _, side := range []*reviewSide{&old, &head} {
			p := specByName(side.specs, f.Persona)
			if p == nil {
				continue
			}
			it, err := jobItem(*side, p, f, wires)
			if err != nil {
				if side == &old { // a stub of a resolver the base does not have yet
					it.Stubs = nil
					it, err = jobItem(*side, p, &review.Fixture{File: f.File, Persona: f.Persona, Name: f.Name, Env: f.Env}, wires)
				}
				if err != nil {
					fmt.Fprintln(stderr, err)
					return diffTrouble
				}
			}
			if side == &old {
				pr.old = len(items)
			} else {
				pr.new = len(items)
			}
			items = append(items, it)
		}
		if pr.new < 0 {
			fmt.Fprintf(stderr, "%s: no spec names persona %q (a fixture's directory names its persona)\n", f.File, f.Persona)
			return diffTrouble
		}
		pairs = append(pairs, pr)
	}
	res, code := buildAndRun(ctx, modRoot, []reviewSide{old, head}, fixtures, items, stderr)
	if code != exitOK {
		return diffTrouble
	}
	var entries []diffEntry
	for _, pr := range pairs {
		nw := res.Items[pr.new]
		if nw.Error != "" {
			fmt.Fprintf(stderr, "personagen diff: %s on %s: %s\n", pr.f.Persona, pr.f.File, nw.Error)
			return diffTrouble
		}
		var ol review.ItemResult
		if pr.old >= 0 {
			if ol = res.Items[pr.old]; ol.Error != "" {
				fmt.Fprintf(stderr, "personagen diff: %s on %s at the base: %s\n", pr.f.Persona, pr.f.File, ol.Error)
				return diffTrouble
			}
		}
		for k, r := range nw.Renderings {
			e := diffEntry{persona: pr.f.Persona, fixture: pr.f.Name, answered: nw.Answered, wire: r.Wire, new: r}
			if k < len(ol.Renderings) {
				e.old = ol.Renderings[k]
			}
			e.diff = udiff.Unified("base/"+e.label(), "head/"+e.label(), e.old.Text, e.new.Text)
			entries = append(entries, e)
		}
	}
	changed := false
	for _, e := range entries {
		changed = changed || e.diff != ""
	}
	switch *format {
	case "text":
		writeDiffText(stdout, entries)
	case "markdown":
		writeDiffMarkdown(stdout, entries)
	case "github":
		writeDiffGitHub(stdout, entries, changedLines(oldSpecs, newSpecs, old.root, head.root))
	}
	if changed {
		return diffChanged
	}
	return diffSame
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return a
}

// diffEntry is one persona, fixture and format compared.
type diffEntry struct {
	persona, fixture, answered, wire string
	old, new                         review.Rendering
	diff                             string
}

func (e diffEntry) label() string {
	w := e.wire
	if w == "" {
		w = "transcript"
	}
	return e.persona + "/" + e.fixture + "." + w
}

func (e diffEntry) format() string {
	if e.wire == "" {
		return "transcript"
	}
	return e.wire
}

func delta(a, b int) string {
	switch {
	case b > a:
		return fmt.Sprintf("%d → %d (+%d)", a, b, b-a)
	case b < a:
		return fmt.Sprintf("%d → %d (−%d)", a, b, a-b)
	}
	return fmt.Sprintf("%d (±0)", a)
}

func writeDiffText(w io.Writer, entries []diffEntry) {
	for _, e := range entries {
		if e.diff == "" {
			fmt.Fprintf(w, "# %s · %s · %s: unchanged (%d characters, ~%d tokens)\n", e.persona, e.fixture, e.format(), e.new.Chars, e.new.Tokens)
			continue
		}
		fmt.Fprintf(w, "# %s · %s · %s (%s): characters %s, tokens %s\n", e.persona, e.fixture, e.format(), e.answered, delta(e.old.Chars, e.new.Chars), delta(e.old.Tokens, e.new.Tokens))
		fmt.Fprint(w, e.diff)
	}
}

// writeDiffMarkdown writes a pull-request comment: a table of every request compared, then
// the diff of each changed one in a collapsed section.
func writeDiffMarkdown(w io.Writer, entries []diffEntry) {
	n := 0
	for _, e := range entries {
		if e.diff != "" {
			n++
		}
	}
	fmt.Fprintln(w, "### personagen diff: the requests this change produces")
	fmt.Fprintln(w)
	if n == 0 {
		fmt.Fprintf(w, "No request changed (%d compared).\n", len(entries))
		return
	}
	fmt.Fprintf(w, "%d of %d requests changed.\n\n", n, len(entries))
	fmt.Fprintln(w, "| persona | fixture | format | characters | tokens (estimate) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, e := range entries {
		chars, toks := delta(e.old.Chars, e.new.Chars), delta(e.old.Tokens, e.new.Tokens)
		if e.diff == "" {
			chars, toks = "unchanged", "unchanged"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", e.persona, e.fixture, e.format(), chars, toks)
	}
	for _, e := range entries {
		if e.diff == "" {
			continue
		}
		fence := "```"
		for strings.Contains(e.diff, fence) {
			fence += "`"
		}
		fmt.Fprintf(w, "\n<details><summary>%s · %s · %s (%s)</summary>\n\n%sdiff\n%s%s\n\n</details>\n", e.persona, e.fixture, e.format(), e.answered, fence, e.diff, fence)
	}
}

// changedLines returns, per head spec file, the lines to annotate: the first changed line of
// each hunk of the spec file, and the entries of load_file (static paths) whose prompt file
// changed under the root; the value is the persona the file defines.
func changedLines(oldSpecs, newSpecs []*spec.Persona, oldRoot, newRoot string) []annotation {
	var out []annotation
	for _, n := range newSpecs {
		var o *spec.Persona
		for _, s := range oldSpecs {
			if s.Name.Value == n.Name.Value {
				o = s
			}
		}
		nb, _ := os.ReadFile(n.File)
		var ob []byte
		if o != nil {
			ob, _ = os.ReadFile(o.File)
		}
		for _, line := range hunkStarts(string(ob), string(nb)) {
			out = append(out, annotation{file: n.File, line: line, persona: n.Name.Value, what: "the spec changed here"})
		}
		for _, r := range append(append([]spec.Resolver{}, n.MessageResolvers...), n.ResponsibilityResolvers...) {
			if r.LoadFile == nil || !r.LoadFile.Path.IsStatic() {
				continue
			}
			rel := r.LoadFile.Path.Raw.Value
			a, _ := os.ReadFile(filepath.Join(oldRoot, rel))
			b, _ := os.ReadFile(filepath.Join(newRoot, rel))
			if !bytes.Equal(a, b) {
				out = append(out, annotation{file: n.File, line: r.Pos.Line, col: r.Pos.Col, persona: n.Name.Value, what: rel + " changed"})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].file != out[j].file {
			return out[i].file < out[j].file
		}
		return out[i].line < out[j].line
	})
	return out
}

// annotation is a spec line a GitHub annotation points at.
type annotation struct {
	file      string
	line, col int
	persona   string
	what      string
}

// hunkStarts returns the 1-based line in b where each changed run of lines begins (for a
// deletion, the line after it).
func hunkStarts(a, b string) []int {
	if a == b {
		return nil
	}
	var out []int
	shift := 0 // how much longer b is than a before the current edit
	for _, e := range udiff.Lines(a, b) {
		at := e.Start + shift
		line := strings.Count(b[:min(at, len(b))], "\n") + 1
		if len(out) == 0 || out[len(out)-1] != line {
			out = append(out, line)
		}
		shift += len(e.New) - (e.End - e.Start)
	}
	return out
}

// writeDiffGitHub writes a ::notice annotation at each changed spec line, saying how the
// requests of its persona changed, and one for a changed request of a persona without a
// changed line (a host code change) at its spec's first line.
func writeDiffGitHub(w io.Writer, entries []diffEntry, lines []annotation) {
	summary := map[string][]string{}
	for _, e := range entries {
		if e.diff != "" {
			summary[e.persona] = append(summary[e.persona], fmt.Sprintf("%s %s: tokens %s", e.fixture, e.format(), delta(e.old.Tokens, e.new.Tokens)))
		}
	}
	for _, a := range lines {
		s := summary[a.persona]
		msg := a.what + ": "
		if len(s) == 0 {
			msg += "no request of " + a.persona + " on its fixtures changed"
		} else {
			msg += "the requests of " + a.persona + " changed (" + strings.Join(s, "; ") + ")"
		}
		fmt.Fprintf(w, "::notice file=%s,line=%d", ghProperty(a.file), a.line)
		if a.col > 0 {
			fmt.Fprintf(w, ",col=%d", a.col)
		}
		fmt.Fprintf(w, ",title=%s::%s\n", ghProperty("personagen diff"), ghData(msg))
	}
}

// extractRevision writes the paths (files or directories, relative to or inside modRoot) as
// they are at rev into a new temporary directory laid out like the module, and returns it.
func extractRevision(ctx context.Context, modRoot, rev string, paths []string) (string, error) {
	top, err := exec.CommandContext(ctx, "git", "-C", modRoot, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return "", fmt.Errorf("-base needs a git repository around %s: %v", modRoot, err)
	}
	repo := strings.TrimSpace(string(top))
	prefix := mustRel(repo, modRoot)
	args := []string{"-C", repo, "archive", "--format=tar", rev, "--"}
	seen := map[string]bool{}
	for _, p := range paths {
		rel := filepath.ToSlash(filepath.Join(prefix, mustRel(modRoot, absPath(p))))
		if !seen[rel] {
			seen[rel] = true
			args = append(args, rel)
		}
	}
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %v: %s", rev, err, strings.TrimSpace(errb.String()))
	}
	dir, err := os.MkdirTemp("", "personagen-base-")
	if err != nil {
		return "", err
	}
	reviewBuilds.Lock()
	reviewDirs = append(reviewDirs, dir)
	reviewBuilds.Unlock()
	tr := tar.NewReader(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		rel, ok := strings.CutPrefix(h.Name, filepath.ToSlash(prefix)+"/")
		if prefix == "." {
			rel, ok = h.Name, true
		}
		if !ok || strings.Contains(rel, "..") {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return "", err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return "", err
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(target, data, 0o644); err != nil {
				return "", err
			}
		}
	}
	return dir, nil
}
