package docs

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// root is the module root, two levels above this package.
const root = "../.."

// maxREADMELines is the front door's budget: reference material goes to docs/ and package
// documentation, never back into README.md.
const maxREADMELines = 300

// pendingPages are pages README.md or docs/ link to that another branch is writing. A link to
// one resolves while the page is absent; once the page exists the test fails until its entry is
// removed here, so the list cannot outlive its reason.
var pendingPages = map[string]string{}

// pendingPackages are paths README's path table lists that another branch is adding, under the
// same rule as pendingPages.
var pendingPackages = map[string]string{}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownFiles are the files whose links must resolve: README.md and docs/*.md, as slash paths
// relative to the module root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, p := range pages {
		files = append(files, "docs/"+filepath.Base(p))
	}
	if len(files) < 2 {
		t.Fatal("docs/ holds no pages")
	}
	return files
}

func TestREADMEIsAtMost300Lines(t *testing.T) {
	if n := strings.Count(readFile(t, "README.md"), "\n"); n > maxREADMELines {
		t.Errorf("README.md has %d lines, more than %d: move reference material into docs/ or a package's documentation and link to it", n, maxREADMELines)
	}
}

func TestRelativeLinksResolve(t *testing.T) {
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) map[string]bool {
		if a, ok := anchors[rel]; ok {
			return a
		}
		anchors[rel] = Anchors(readFile(t, rel))
		return anchors[rel]
	}
	usedPending := map[string]bool{}
	for _, file := range markdownFiles(t) {
		for _, l := range Links(readFile(t, file)) {
			if schemeRE.MatchString(l.Target) {
				continue
			}
			target, anchor, _ := strings.Cut(l.Target, "#")
			rel := file
			if target != "" {
				rel = path.Clean(path.Join(path.Dir(file), target))
				if strings.HasPrefix(rel, "../") {
					t.Errorf("%s:%d: %s leaves the repository", file, l.Line, l.Target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
					if _, pending := pendingPages[rel]; pending && errors.Is(err, fs.ErrNotExist) {
						usedPending[rel] = true
						continue
					}
					t.Errorf("%s:%d: %s: %v", file, l.Line, l.Target, err)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(rel, ".md") {
				t.Errorf("%s:%d: %s: an #anchor into a file that is not Markdown", file, l.Line, l.Target)
				continue
			}
			if !anchorsOf(rel)[anchor] {
				t.Errorf("%s:%d: %s: %s has no heading with the anchor #%s", file, l.Line, l.Target, rel, anchor)
			}
		}
	}
	for page, why := range pendingPages {
		if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(page))); err == nil {
			t.Errorf("%s exists now: remove it from pendingPages (%s) so links to it are checked", page, why)
		} else if !usedPending[page] {
			t.Errorf("pendingPages lists %s, which nothing links to: remove it", page)
		}
	}
}

var schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)

func TestEveryDocsPageIsLinkedFromREADME(t *testing.T) {
	linked := map[string]bool{}
	for _, l := range Links(readFile(t, "README.md")) {
		target, _, _ := strings.Cut(l.Target, "#")
		linked[path.Clean(target)] = true
	}
	for _, file := range markdownFiles(t)[1:] {
		if !linked[file] {
			t.Errorf("README.md does not link to %s: every docs/ page is one click from the front door", file)
		}
	}
}

// blocksOf returns the fenced blocks of README.md that carry flag in their info string.
func blocksOf(t *testing.T, md, flag string) []Block {
	t.Helper()
	var out []Block
	for _, b := range Blocks(md) {
		if b.Has(flag) {
			out = append(out, b)
		}
	}
	return out
}

// commands returns a shell block's commands: its lines without comments and blank lines.
func commands(b Block) []string {
	var out []string
	for _, line := range strings.Split(b.Text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// TestQuickStartIsWhatCIRuns pins README's quick start to exactly two commands, the main job on
// the embedded SQLite default and the tests, and holds both to what .ci/run runs, so the front
// door can never promise a command CI does not run. (The demo itself runs in
// examples/cmd/demo's TestDemoRunsTheThreeRuns, whose golden file the excerpt test below reads.)
func TestQuickStartIsWhatCIRuns(t *testing.T) {
	blocks := blocksOf(t, readFile(t, "README.md"), "quickstart")
	if len(blocks) != 1 {
		t.Fatalf("README.md has %d quickstart blocks, want 1", len(blocks))
	}
	got := commands(blocks[0])
	want := []string{"go run ./examples/cmd/demo", "go test ./..."}
	if !slices.Equal(got, want) {
		t.Fatalf("README's quick start = %q, want %q", got, want)
	}
	ci := strings.Split(readFile(t, ".ci/run"), "\n")
	for _, c := range got {
		if !slices.ContainsFunc(ci, func(line string) bool {
			line = strings.TrimSpace(line)
			return line == c || strings.HasPrefix(line, c+" ")
		}) {
			t.Errorf(".ci/run does not run README's quick-start command %q", c)
		}
	}
}

// TestExcerptsAreInTheirFiles holds every README block marked excerpt=FILE to a verbatim part
// of FILE (the demo's golden output, which the demo's own test compares with a real run).
func TestExcerptsAreInTheirFiles(t *testing.T) {
	n := 0
	for _, b := range Blocks(readFile(t, "README.md")) {
		file, ok := b.Attrs["excerpt"]
		if !ok {
			continue
		}
		n++
		if !strings.Contains(readFile(t, file), b.Text) {
			t.Errorf("README.md:%d: the block is not an excerpt of %s:\n%s", b.Line, file, b.Text)
		}
	}
	if n == 0 {
		t.Error("README.md has no excerpt block: the quick start shows none of the demo's output")
	}
}

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Name         string
	Dir          string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
}

// packages lists the module's packages with the go command.
func packages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v\n%s", err, stderr.Bytes())
	}
	var ps []pkg
	for d := json.NewDecoder(bytes.NewReader(out)); ; {
		var p pkg
		if err := d.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	if len(ps) < 20 {
		t.Fatalf("go list ./... listed %d packages", len(ps))
	}
	return ps
}

const modulePath = "github.com/personagen/personagen"

// relPath is a package's directory relative to the module root ("." for the root).
func relPath(importPath string) string {
	if importPath == modulePath {
		return "."
	}
	return strings.TrimPrefix(importPath, modulePath+"/")
}

// public reports whether a package is part of the module's API: not a command and not
// internal.
func public(p pkg) bool {
	return p.Name != "main" && !slices.Contains(strings.Split(relPath(p.ImportPath), "/"), "internal")
}

// exampleExclusions are the public packages that need no Example of their own, each with the
// reason. An exclusion that is no longer needed fails the test.
var exampleExclusions = map[string]string{
	modulePath: "the module root holds no API: generate.go is the //go:generate line that " +
		"regenerates generated/, and its package documentation points to the packages",
	modulePath + "/runtime/historytest": "its one function, Run, takes the *testing.T of a test; " +
		"its package documentation shows the call, and the tests of runtime/memory and runtime/store make it",
	modulePath + "/generated": "it is generated code: package examples' Example_supportAgent builds " +
		"its support agent and assembles a request with it",
}

func TestEveryPublicPackageHasARunnableExample(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range packages(t) {
		if !public(p) {
			continue
		}
		seen[p.ImportPath] = true
		examples := runnableExamples(t, p)
		why, excluded := exampleExclusions[p.ImportPath]
		switch {
		case excluded && len(examples) > 0:
			t.Errorf("%s has an example now (%s): remove its exclusion (%s)", p.ImportPath, examples[0], why)
		case !excluded && len(examples) == 0:
			t.Errorf("%s has no runnable Example (a func Example… with a non-empty // Output: comment in an example_test.go): add one that shows where to start", p.ImportPath)
		}
	}
	for path := range exampleExclusions {
		if !seen[path] {
			t.Errorf("exampleExclusions lists %s, which is not a public package of the module: remove it", path)
		}
	}
}

// runnableExamples returns the names of p's examples that go test runs and checks: those with
// a non-empty // Output: comment.
func runnableExamples(t *testing.T, p pkg) []string {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range append(slices.Clone(p.TestGoFiles), p.XTestGoFiles...) {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var names []string
	for _, ex := range doc.Examples(files...) {
		if strings.TrimSpace(ex.Output) != "" {
			names = append(names, "Example"+ex.Name)
		}
	}
	return names
}

// startFromRE finds the sentence of a package's documentation that names where to start.
var startFromRE = regexp.MustCompile(`(?i)\bstart (from|with)\b`)

// TestPackageDocsSayWhatAndWhereToStart holds every public package's documentation, as go doc
// and pkg.go.dev show it, to start with what the package is for ("Package name …") and to
// name the type or function to start from before its first heading.
func TestPackageDocsSayWhatAndWhereToStart(t *testing.T) {
	for _, p := range packages(t) {
		if !public(p) {
			continue
		}
		text := packageDoc(t, p)
		if !strings.HasPrefix(text, "Package "+p.Name+" ") {
			t.Errorf("%s: the package documentation does not start with %q: %.60q", p.ImportPath, "Package "+p.Name+" ", text)
			continue
		}
		intro, _, _ := strings.Cut(text, "\n# ")
		if !startFromRE.MatchString(intro) {
			t.Errorf("%s: the package documentation does not say, before its first heading, which type or function to start from (a sentence with \"Start from\")", p.ImportPath)
		}
	}
}

// packageDoc returns the text of p's package documentation: its files' package comments.
func packageDoc(t *testing.T, p pkg) string {
	t.Helper()
	fset := token.NewFileSet()
	var docs []string
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			docs = append(docs, f.Doc.Text())
		}
	}
	if len(docs) != 1 {
		t.Errorf("%s: %d files hold a package comment, want exactly one (doc.go)", p.ImportPath, len(docs))
	}
	return strings.Join(docs, "\n")
}

// TestPathTableListsEveryPackage holds README's path table ("## The packages") to the module's
// packages and bench/'s: every package is listed, and every listed path exists.
func TestPathTableListsEveryPackage(t *testing.T) {
	listed := pathTable(t, readFile(t, "README.md"))
	want := map[string]bool{}
	for _, p := range packages(t) {
		if rel := relPath(p.ImportPath); rel != "." { // the root: see exampleExclusions
			want[rel] = true
		}
	}
	for _, dir := range benchPackages(t) {
		want[dir] = true
	}
	for dir := range want {
		if !listed[dir] {
			t.Errorf("README's path table does not list %s/", dir)
		}
	}
	usedPending := map[string]bool{}
	for dir := range listed {
		if want[dir] {
			continue
		}
		info, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir)))
		switch {
		case err == nil && info.IsDir():
			// a directory that is not a package, such as bench/ (a module of its own)
		case errors.Is(err, fs.ErrNotExist) && pendingPackages[dir] != "":
			usedPending[dir] = true
		default:
			t.Errorf("README's path table lists %s/, which is not a directory of the module", dir)
		}
	}
	for dir, why := range pendingPackages {
		if want[dir] {
			t.Errorf("%s exists now: remove it from pendingPackages (%s)", dir, why)
		} else if !usedPending[dir] {
			t.Errorf("pendingPackages lists %s, which README's path table does not: remove it", dir)
		}
	}
}

// pathTable returns the paths README's "The packages" table names in its first column: every
// code span there, without its trailing slash.
func pathTable(t *testing.T, md string) map[string]bool {
	t.Helper()
	_, section, ok := strings.Cut(md, "\n## The packages\n")
	if !ok {
		t.Fatal(`README.md has no "## The packages" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	listed := map[string]bool{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| path ") {
			continue
		}
		first := strings.Split(line, "|")[1]
		for _, m := range codeRE.FindAllStringSubmatch(first, -1) {
			listed[strings.TrimSuffix(m[1], "/")] = true
		}
	}
	if len(listed) == 0 {
		t.Fatal("README's path table lists no paths")
	}
	return listed
}

var codeRE = regexp.MustCompile("`([^`]+)`")

// benchPackages returns the directories below bench/ that hold Go files (bench/ is a module of
// its own, which go list ./... does not reach), skipping testdata.
func benchPackages(t *testing.T) []string {
	t.Helper()
	dirs := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "bench"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			dirs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("bench/ holds no Go packages")
	}
	out := make([]string, 0, len(dirs))
	for d := range dirs {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
