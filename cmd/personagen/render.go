package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/personagen/personagen/gen"
	"github.com/personagen/personagen/runtime/review"
	"github.com/personagen/personagen/spec"
)

func init() {
	register(command{name: "render", summary: "print the exact request a persona sends for each fixture", run: runRender})
}

// runRender prints, for every fixture next to the specs (or those -persona and -fixture
// select), the request the persona's runner sends first: provider-neutral in the transcript
// format, or with -wire the body each named adapter POSTs (nothing is sent), with its size and
// estimated tokens and where each cache breakpoint ends its prefix. With no PATH it renders the
// specs of the first //go:generate line below the working directory that runs personagen
// generate. Exit 0 when everything rendered, 1 when a spec, fixture or rendering failed, 2 on
// a usage error.
func runRender(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("render", "[PATH...]", stderr)
	root := fs.String("root", "", "the prompt `DIR` relative load_file paths resolve against (default: the first PATH, or the -root of the //go:generate line)")
	wire := fs.String("wire", "", "also or instead print the request body of these adapters: a comma-separated `LIST` of anthropic, openai, openai-responses, and transcript")
	persona := fs.String("persona", "", "render only the fixtures of the persona `NAME`")
	fixture := fs.String("fixture", "", "render only the fixtures named `NAME`")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if code, ok := checkPaths(fs, args, stderr); !ok {
		return code
	}
	wires, err := parseWires(*wire)
	if err != nil {
		fmt.Fprintf(stderr, "personagen render: %v\n", err)
		return exitUsage
	}
	paths, rootDir, code, ok := reviewPaths("render", fs.Args(), *root, stderr)
	if !ok {
		return code
	}
	defer releaseReview()
	specs, diags := spec.LoadPaths(paths)
	if len(diags) > 0 {
		_ = writeText(stderr, diags)
		return exitFail
	}
	fixtures, problems := loadFixtures(specs, *persona, *fixture)
	for _, p := range problems {
		fmt.Fprintln(stderr, p.Error())
	}
	if len(problems) > 0 {
		return exitFail
	}
	if len(fixtures) == 0 {
		fmt.Fprintf(stderr, "personagen render: no fixtures found: a fixture of persona P is %s/P/NAME.yaml next to P's spec\n", review.FixtureDir)
		return exitFail
	}
	head, code := headSide(paths, rootDir, specs, stderr)
	if code != exitOK {
		return code
	}
	items, order, code := reviewItems(head, fixtures, wires, stderr)
	if code != exitOK {
		return code
	}
	res, code := buildAndRun(ctx, head.lineBase, []reviewSide{head}, fixtures, items, stderr)
	if code != exitOK {
		return code
	}
	failed := false
	for i, it := range res.Items {
		f := order[i]
		if it.Error != "" {
			fmt.Fprintf(stderr, "personagen render: %s on %s: %s\n", f.Persona, f.File, it.Error)
			failed = true
			continue
		}
		for _, r := range it.Renderings {
			fmt.Fprint(stdout, renderHeader(f, it, r))
			fmt.Fprintln(stdout)
			fmt.Fprint(stdout, r.Text)
			fmt.Fprintln(stdout)
		}
	}
	if failed {
		return exitFail
	}
	return exitOK
}

// parseWires reads -wire: "" is the transcript alone.
func parseWires(s string) ([]string, error) {
	if s == "" {
		return []string{""}, nil
	}
	var out []string
	for _, w := range strings.Split(s, ",") {
		w = strings.TrimSpace(w)
		switch w {
		case "transcript":
			out = append(out, "")
		case "anthropic", "openai", "openai-responses":
			out = append(out, w)
		default:
			return nil, fmt.Errorf("-wire %q: want anthropic, openai, openai-responses or transcript", w)
		}
	}
	return out, nil
}

// headSide is the working tree's side: its specs, root and module root.
func headSide(paths []string, root string, specs []*spec.Persona, stderr io.Writer) (reviewSide, int) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		fmt.Fprintf(stderr, "personagen: %v\n", err)
		return reviewSide{}, exitFail
	}
	_, modRoot, ok := gen.ImportPath(".")
	if !ok {
		fmt.Fprintln(stderr, "personagen: the working directory is not inside a Go module: run from the host's module, where the review program is built")
		return reviewSide{}, exitFail
	}
	return reviewSide{name: "head", specs: specs, root: absRoot, lineBase: modRoot}, exitOK
}

// reviewItems makes one job item per fixture of side (whose persona it has), in fixture order.
func reviewItems(side reviewSide, fixtures []*review.Fixture, wires []string, stderr io.Writer) ([]review.JobItem, []*review.Fixture, int) {
	var items []review.JobItem
	var order []*review.Fixture
	for _, f := range fixtures {
		p := specByName(side.specs, f.Persona)
		if p == nil {
			fmt.Fprintf(stderr, "%s: no spec names persona %q (a fixture's directory names its persona)\n", f.File, f.Persona)
			return nil, nil, exitFail
		}
		it, err := jobItem(side, p, f, wires)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return nil, nil, exitFail
		}
		items, order = append(items, it), append(order, f)
	}
	return items, order, exitOK
}

func jobItem(side reviewSide, p *spec.Persona, f *review.Fixture, wires []string) (review.JobItem, error) {
	stubs, err := stubsFor(p, f)
	if err != nil {
		return review.JobItem{}, err
	}
	env := ""
	if f.Env != nil {
		env = f.Env.Value
	}
	abs, err := filepath.Abs(f.File)
	if err != nil {
		return review.JobItem{}, err
	}
	return review.JobItem{Factory: factoryKey(side.name, p.Name.Value, env), Fixture: abs, Root: side.root, Stubs: stubs, Wires: wires}, nil
}

// buildAndRun builds the review program and runs the job.
func buildAndRun(ctx context.Context, modRoot string, sides []reviewSide, fixtures []*review.Fixture, items []review.JobItem, stderr io.Writer) (review.Result, int) {
	bin, err := buildReview(ctx, modRoot, sides, fixtures)
	var ge *gen.Error
	switch {
	case errors.As(err, &ge):
		_ = writeText(stderr, ge.Diagnostics)
		return review.Result{}, exitFail
	case err != nil:
		fmt.Fprintf(stderr, "personagen: %v\n", err)
		return review.Result{}, exitFail
	}
	res, err := runReview(ctx, bin, review.Job{Items: items})
	if err != nil {
		fmt.Fprintf(stderr, "personagen: %v\n", err)
		return review.Result{}, exitFail
	}
	return res, exitOK
}

// renderHeader is the comment block above a rendering: what it is, its size and its cache plan.
func renderHeader(f *review.Fixture, it review.ItemResult, r review.Rendering) string {
	var b strings.Builder
	format := "transcript"
	if r.Wire != "" {
		format = r.Wire + " request body"
	}
	fmt.Fprintf(&b, "# %s · %s: %s\n", f.Persona, f.Name, it.Answered)
	fmt.Fprintf(&b, "# %s: %d messages, %d tools; %d characters, ~%d tokens (o200k_base estimate)\n", format, it.Messages, it.Tools, r.Chars, r.Tokens)
	for _, p := range r.Plan {
		fmt.Fprintf(&b, "# %s\n", p)
	}
	return b.String()
}
