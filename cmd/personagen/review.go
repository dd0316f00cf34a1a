package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"go/format"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/personagen/personagen/gen"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/review"
	"github.com/personagen/personagen/spec"
)

// This file holds what render and diff share: the review program. The CLI generates each side's
// personas (the working tree's specs, and for diff a base revision's) into virtual packages of
// the host's module, writes a main package that builds them with the host's env and hands them
// to review.Main, and builds it with `go build -overlay`: the files exist only in a temporary
// directory, the build sees them inside the module (so it imports the host's packages and the
// module's own personagen version, as `go test` builds its test main), and nothing is written
// to the module's tree. The program renders the fixtures (runtime/review); the CLI prints and
// compares what it returns.

// reviewSide is one revision of the specs: its package name, its specs, its prompt root and
// the directory its spec positions are relative to.
type reviewSide struct {
	name     string
	specs    []*spec.Persona
	root     string
	lineBase string
}

// reviewBuilds memoises built programs by the hash of their sources for the life of the
// process, so the tests of render and diff build each program once.
var reviewBuilds = struct {
	sync.Mutex
	bins map[string]string
}{bins: map[string]string{}}

// reviewDirs are the temporary directories of the builds; cleanupReview removes them.
var reviewDirs []string

// keepReviewBuilds keeps the builds for the next command of the process (tests set it).
var keepReviewBuilds bool

// releaseReview removes the review builds at the end of a command, unless keepReviewBuilds.
func releaseReview() {
	if !keepReviewBuilds {
		cleanupReview()
	}
}

// cleanupReview removes the review builds' temporary directories.
func cleanupReview() {
	reviewBuilds.Lock()
	defer reviewBuilds.Unlock()
	for _, d := range reviewDirs {
		_ = os.RemoveAll(d)
	}
	reviewDirs, reviewBuilds.bins = nil, map[string]string{}
}

// virtualDir is the directory of the module the program's packages live in (virtually): the
// first of personagenreview, personagenreview2, … that does not exist on disk.
func virtualDir(modRoot string) string {
	for i := 1; ; i++ {
		name := "personagenreview"
		if i > 1 {
			name = fmt.Sprintf("personagenreview%d", i)
		}
		if _, err := os.Stat(filepath.Join(modRoot, name)); errors.Is(err, os.ErrNotExist) {
			return filepath.Join(modRoot, name)
		}
	}
}

// buildReview generates and builds the review program of the sides for the fixtures and
// returns its binary. Generation problems are returned as a *gen.Error.
func buildReview(ctx context.Context, modRoot string, sides []reviewSide, fixtures []*review.Fixture) (string, error) {
	modPath, _, ok := gen.ImportPath(modRoot)
	if !ok {
		return "", fmt.Errorf("%s is not inside a Go module", modRoot)
	}
	vdir := virtualDir(modRoot)
	sources := map[string][]byte{} // virtual path → content
	for _, s := range sides {
		files, err := generateSide(ctx, s, filepath.Join(vdir, s.name))
		if err != nil {
			return "", err
		}
		for _, f := range files {
			sources[filepath.Join(vdir, s.name, f.Name)] = f.Content
		}
	}
	main, err := reviewMain(modPath, modRoot, vdir, sides, fixtures)
	if err != nil {
		return "", err
	}
	sources[filepath.Join(vdir, "main", "main.go")] = main
	paths := make([]string, 0, len(sources))
	for p := range sources {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(sources[p]))
		h.Write(sources[p])
	}
	key := hex.EncodeToString(h.Sum(nil))
	reviewBuilds.Lock()
	defer reviewBuilds.Unlock()
	if bin, ok := reviewBuilds.bins[key]; ok {
		if _, err := os.Stat(bin); err == nil {
			return bin, nil
		}
	}
	tmp, err := os.MkdirTemp("", "personagen-review-")
	if err != nil {
		return "", err
	}
	reviewDirs = append(reviewDirs, tmp)
	overlay := map[string]string{}
	for i, p := range paths {
		back := filepath.Join(tmp, fmt.Sprintf("%03d-%s", i, filepath.Base(p)))
		if err := os.WriteFile(back, sources[p], 0o644); err != nil {
			return "", err
		}
		overlay[p] = back
	}
	ov, _ := json.Marshal(map[string]any{"Replace": overlay})
	ovPath := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovPath, ov, 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "review")
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay", ovPath, "-o", bin, "./"+filepath.ToSlash(mustRel(modRoot, filepath.Join(vdir, "main"))))
	cmd.Dir = modRoot
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building the review program: %v\n%s", err, strings.TrimSpace(out.String()))
	}
	reviewBuilds.bins[key] = bin
	return bin, nil
}

// generated memoises generateSide by the specs' files and the options, for the life of the
// process (the host's packages do not change under a running command or test binary).
var generated = struct {
	sync.Mutex
	files map[string][]gen.File
}{files: map[string][]gen.File{}}

// generateSide generates a side's personas into the virtual package dir.
func generateSide(ctx context.Context, s reviewSide, dir string) ([]gen.File, error) {
	opts := gen.Options{Package: s.name, OutDir: dir, Root: s.root, LineBase: s.lineBase}
	h := sha256.New()
	fmt.Fprintf(h, "%+v\x00", opts)
	for _, p := range s.specs {
		b, _ := os.ReadFile(p.File)
		fmt.Fprintf(h, "%s\x00%d\x00", p.File, len(b))
		h.Write(b)
	}
	key := hex.EncodeToString(h.Sum(nil))
	generated.Lock()
	defer generated.Unlock()
	if files, ok := generated.files[key]; ok {
		return files, nil
	}
	files, _, err := gen.Generate(ctx, s.specs, opts)
	if err != nil {
		return nil, err
	}
	generated.files[key] = files
	return files, nil
}

func mustRel(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return r
}

// factoryKey names the constructor of persona on side built with env ("" for new(Env)).
func factoryKey(side, persona, env string) string { return side + "|" + persona + "|" + env }

// reviewMain writes the program's main package: one review.Factory per side, persona and env
// constructor the fixtures name.
func reviewMain(modPath, modRoot, vdir string, sides []reviewSide, fixtures []*review.Fixture) ([]byte, error) {
	imports := map[string]string{} // import path → alias
	alias := func(path string) string {
		if a, ok := imports[path]; ok {
			return a
		}
		a := fmt.Sprintf("p%d", len(imports))
		imports[path] = a
		return a
	}
	envs := map[string][]string{} // persona → env refs ("" included when a fixture names none)
	for _, f := range fixtures {
		e := ""
		if f.Env != nil {
			e = f.Env.Value
		}
		if !slices.Contains(envs[f.Persona], e) {
			envs[f.Persona] = append(envs[f.Persona], e)
		}
	}
	var body strings.Builder
	for _, s := range sides {
		pkg := alias(modPath + "/" + filepath.ToSlash(mustRel(modRoot, filepath.Join(vdir, s.name))))
		for _, p := range s.specs {
			for _, e := range envs[p.Name.Value] {
				ctor := pkg + ".New" + p.GoName()
				fmt.Fprintf(&body, "\t\t{Key: %q, New: func(ctx context.Context, opts runtime.Options) (*runtime.Persona, error) {\n", factoryKey(s.name, p.Name.Value, e))
				switch {
				case p.Env == nil:
					fmt.Fprintf(&body, "\t\t\treturn %s(opts)\n", ctor)
				case e == "":
					fmt.Fprintf(&body, "\t\t\treturn %s(new(%s.%s), opts)\n", ctor, alias(p.Env.Path), p.Env.Name)
				default:
					i := strings.LastIndexByte(e, '.')
					fmt.Fprintf(&body, "\t\t\tenv, err := %s.%s(ctx)\n\t\t\tif err != nil {\n\t\t\t\treturn nil, err\n\t\t\t}\n\t\t\treturn %s(env, opts)\n", alias(e[:i]), e[i+1:], ctor)
				}
				body.WriteString("\t\t}},\n")
			}
		}
	}
	var src strings.Builder
	src.WriteString("// Code generated by personagen render/diff. DO NOT EDIT.\n\npackage main\n\nimport (\n\t\"context\"\n\n\t\"github.com/personagen/personagen/runtime\"\n\t\"github.com/personagen/personagen/runtime/review\"\n")
	paths := make([]string, 0, len(imports))
	for p := range imports {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		fmt.Fprintf(&src, "\t%s %q\n", imports[p], p)
	}
	src.WriteString(")\n\nfunc main() {\n\treview.Main([]review.Factory{\n")
	src.WriteString(body.String())
	src.WriteString("\t})\n}\n")
	out, err := format.Source([]byte(src.String()))
	if err != nil {
		return nil, fmt.Errorf("the review program does not parse (a personagen bug): %v\n%s", err, src.String())
	}
	return out, nil
}

// runReview runs the program with the job and returns its result.
func runReview(ctx context.Context, bin string, job review.Job) (review.Result, error) {
	in, _ := json.Marshal(job)
	cmd := exec.CommandContext(ctx, bin)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var res review.Result
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("the review program failed: %v\n%s", err, strings.TrimSpace(errb.String()))
	}
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("the review program's answer is not a result: %v", err)
	}
	if len(res.Items) != len(job.Items) {
		return res, fmt.Errorf("the review program answered %d of %d items", len(res.Items), len(job.Items))
	}
	return res, nil
}

// stubsFor resolves a fixture's stubs against a persona's chains: each stub names a
// load_record loader or a use resolver type; every step it names is replaced. A stub naming no
// step of p is an error (validate reports it at the stub).
func stubsFor(p *spec.Persona, f *review.Fixture) ([]review.StepStub, error) {
	var out []review.StepStub
	for _, st := range f.Stubs {
		found := false
		for ci, chain := range [][]spec.Resolver{p.MessageResolvers, p.ResponsibilityResolvers} {
			for i, r := range chain {
				match := st.LoadRecord != nil && r.LoadRecord != nil && r.LoadRecord.Loader.String() == st.LoadRecord.Value ||
					st.Use != nil && r.Use != nil && r.Use.Resolver.String() == st.Use.Value
				if !match {
					continue
				}
				found = true
				role := ""
				if r.LoadRecord != nil {
					role = string(r.LoadRecord.Role.Value)
				}
				out = append(out, review.StepStub{Responsibility: ci == 1, Index: i, Role: chat.Role(role), Text: st.Text})
			}
		}
		if !found {
			v := st.LoadRecord
			what := "load_record loader"
			if v == nil {
				v, what = st.Use, "use resolver"
			}
			return nil, fmt.Errorf("%s:%d:%d: persona %s has no %s %s", f.File, v.Line, v.Col, p.Name.Value, what, v.Value)
		}
	}
	return out, nil
}

// loadFixtures finds and loads the fixtures next to the specs of paths (each spec's directory
// holds FixtureDir), keeping those whose persona and name pass the filters ("" passes all).
func loadFixtures(specs []*spec.Persona, persona, name string) ([]*review.Fixture, []review.Problem) {
	var out []*review.Fixture
	var problems []review.Problem
	seen := map[string]bool{}
	for _, s := range specs {
		dir := filepath.Dir(s.File)
		if seen[dir] {
			continue
		}
		seen[dir] = true
		for _, path := range review.FindFixtures(dir) {
			f, ps := review.LoadFixture(path)
			problems = append(problems, ps...)
			if f == nil || persona != "" && f.Persona != persona || name != "" && f.Name != name {
				continue
			}
			out = append(out, f)
		}
	}
	return out, problems
}

// specByName returns the spec of the persona named name, or nil.
func specByName(specs []*spec.Persona, name string) *spec.Persona {
	for _, s := range specs {
		if s.Name.Value == name {
			return s
		}
	}
	return nil
}

// reviewPaths returns the spec paths and prompt root of a render or diff: the arguments and
// -root when paths are given, else the first //go:generate line below the working directory
// that runs personagen generate (its paths and -root).
func reviewPaths(name string, args []string, root string, stderr io.Writer) ([]string, string, int, bool) {
	if len(args) > 0 {
		if root == "" {
			root = args[0]
			if st, err := os.Stat(root); err == nil && !st.IsDir() {
				root = filepath.Dir(root)
			}
		}
		return args, root, 0, true
	}
	dirs, err := generateDirectives(".")
	if err != nil {
		fmt.Fprintf(stderr, "personagen %s: %v\n", name, err)
		return nil, "", exitFail, false
	}
	if len(dirs) == 0 {
		fmt.Fprintf(stderr, "personagen %s: no spec paths given, and no //go:generate line below this directory runs personagen generate; give spec paths\n", name)
		return nil, "", exitUsage, false
	}
	da, code, ok := genFlags(name, dirs[0].args, stderr)
	if !ok {
		return nil, "", code, false
	}
	if root == "" {
		root = da.root
	}
	if root == "" {
		root = "."
	}
	return da.paths, root, 0, true
}
