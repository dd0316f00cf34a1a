package gen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/personagen/personagen/spec"
)

// TestFileSourceReadsBothHeaderForms pins that the source line is read
// back as written: plain, or Go-quoted when the spec path holds
// characters a comment cannot (sourceLine), and that a file without the
// header, or one that is not a regular file, is not personagen's.
func TestFileSourceReadsBothHeaderForms(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{"specs/a.persona.yaml", "odd\nname.persona.yaml", "\"quoted\".persona.yaml", "bom\ufeff.persona.yaml", "nul\x00"} {
		path := filepath.Join(dir, "x.go")
		writeFile(t, path, []byte(Header+"\n"+SourcePrefix+sourceLine(src)+"\n\npackage x\n"))
		if got, ok := FileSource(path); !ok || got != src {
			t.Errorf("FileSource of a header naming %q = %q, %v", src, got, ok)
		}
		if strings.Contains(sourceLine(src), "\n") || !commentSafe(sourceLine(src)) {
			t.Errorf("sourceLine(%q) = %q cannot be written in a comment", src, sourceLine(src))
		}
	}
	writeFile(t, filepath.Join(dir, "hand.go"), []byte("package x\n"))
	if _, ok := FileSource(filepath.Join(dir, "hand.go")); ok {
		t.Error("a hand-written file counts as generated")
	}
	if _, ok := FileSource(dir); ok {
		t.Error("a directory counts as generated")
	}
}

// TestSpecPathsThatCannotBeInAComment pins that a spec whose path holds a
// newline, "*/" or a byte order mark still generates code that parses:
// the path is quoted in the header and escaped in doc comments, and no
// line directive names it.
func TestSpecPathsThatCannotBeInAComment(t *testing.T) {
	for _, name := range []string{"a\nb.persona.yaml", "a*/b.persona.yaml", "a\ufeffb.persona.yaml"} {
		p, diags := spec.Load(name, []byte("version: 1\nname: odd\nmessage_resolvers:\n  - load_text: {text: \"{{ .Persona.Name }}\"}\n"))
		if len(diags) > 0 {
			t.Fatal(diags)
		}
		plan, err := checkSpecs([]*spec.Persona{p}, nil, Options{Package: "out", OutDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		files, err := plan.renderFiles()
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		src := string(files[0].Content)
		if strings.Contains(src, "/*line") {
			t.Errorf("%q: a line directive names the path:\n%s", name, src)
		}
		if !strings.HasPrefix(src, Header+"\n"+SourcePrefix+sourceLine(name)+"\n") {
			t.Errorf("%q: header:\n%s", name, src)
		}
	}
}

// TestWriteRefusesHandWrittenFiles pins gen.Write: it refuses, before
// writing anything, to replace a file personagen did not generate; it
// rewrites only changed files, removes orphans and keeps files of specs
// that still exist.
func TestWriteRefusesHandWrittenFiles(t *testing.T) {
	mod := t.TempDir()
	writeFile(t, filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"))
	writeFile(t, filepath.Join(mod, "kept.persona.yaml"), []byte("x"))
	dir := filepath.Join(mod, "out")
	gen := func(name, src string) File {
		return File{Name: name, Source: src, Content: []byte(Header + "\n" + SourcePrefix + src + "\n\npackage out\n")}
	}
	writeFile(t, filepath.Join(dir, "generate.go"), []byte("package out\n"))
	writeFile(t, filepath.Join(dir, "orphan.go"), gen("orphan.go", "gone.persona.yaml").Content)
	writeFile(t, filepath.Join(dir, "kept.go"), gen("kept.go", "kept.persona.yaml").Content)

	_, err := Write(dir, []File{gen("a.go", "a.persona.yaml"), gen("generate.go", "generate.persona.yaml")})
	if !errors.Is(err, ErrHandWritten) {
		t.Fatalf("Write over a hand-written file: %v, want ErrHandWritten", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.go")); !os.IsNotExist(err) {
		t.Errorf("Write wrote a.go before refusing (stat: %v)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "generate.go")); string(b) != "package out\n" {
		t.Errorf("the hand-written file changed: %q", b)
	}

	res, err := Write(dir, []File{gen("a.go", "a.persona.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Written) != 1 || res.Written[0] != "a.go" || len(res.Removed) != 1 || res.Removed[0].Name != "orphan.go" || len(res.Kept) != 1 || res.Kept[0].Name != "kept.go" {
		t.Errorf("Write = %+v", res)
	}
	again, err := Write(dir, []File{gen("a.go", "a.persona.yaml")})
	if err != nil || len(again.Written) != 0 {
		t.Errorf("second Write rewrote unchanged files: %+v, %v", again, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 3 {
		t.Errorf("output directory holds %d entries (temporary files left?)", len(entries))
	}
}

// TestStaticPromptThatIsNotARegularFile pins that a named pipe as a static
// prompt or transcript path is refused without opening it (opening a pipe
// blocks until a writer comes), and that a device is not read whole.
func TestStaticPromptThatIsNotARegularFile(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "pipe.md"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, tc := range []struct{ spec, want string }{
		{"load_file: {path: pipe.md}", "pipe.md is not a regular file (a named pipe)"},
		{"load_transcript: {path: pipe.md}", "pipe.md is not a regular file (a named pipe)"},
		{"load_transcript: {path: /dev/zero}", "/dev/zero is not a regular file (a character device)"},
	} {
		p, diags := spec.Load("a.persona.yaml", []byte("version: 1\nname: a\nmessage_resolvers:\n  - "+tc.spec+"\n"))
		if len(diags) > 0 {
			t.Fatal(diags)
		}
		_, err := checkSpecs([]*spec.Persona{p}, nil, Options{Package: "out", OutDir: t.TempDir(), Root: root})
		var ge *Error
		if !errors.As(err, &ge) || len(ge.Diagnostics) != 1 || !strings.Contains(ge.Diagnostics[0].Message, tc.want) {
			t.Errorf("%s: %v; want one diagnostic containing %q", tc.spec, err, tc.want)
		}
	}
}

// TestDefaultPackage pins the package name generate uses without -pkg.
func TestDefaultPackage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ dir, want string }{
		{"My-Agents", "myagents"},
		{"2fa", "fa"},
		{"agents.v2", "agentsv2"},
	} {
		if got := DefaultPackage(filepath.Join(dir, tc.dir)); got != tc.want {
			t.Errorf("DefaultPackage(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
	writeFile(t, filepath.Join(dir, "x", "a_test.go"), []byte("package other_test\n"))
	writeFile(t, filepath.Join(dir, "x", "b.go"), []byte("package personas\n"))
	if got := DefaultPackage(filepath.Join(dir, "x")); got != "personas" {
		t.Errorf("DefaultPackage of a directory holding package personas = %q", got)
	}
}

// TestOutputDirectoryWithANamedPipe pins that Check never opens a
// non-regular file of the output directory (a named pipe would block it),
// and refuses a spec whose generated file name is taken by one.
func TestOutputDirectoryWithANamedPipe(t *testing.T) {
	out := t.TempDir()
	for _, name := range []string{"other.go", "a.go"} {
		if err := syscall.Mkfifo(filepath.Join(out, name), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	p, diags := spec.Load("a.persona.yaml", []byte("version: 1\nname: a\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	_, err := checkSpecs([]*spec.Persona{p}, nil, Options{Package: "out", OutDir: out})
	var ge *Error
	if !errors.As(err, &ge) || len(ge.Diagnostics) != 1 || !strings.Contains(ge.Diagnostics[0].Message, "would replace the hand-written file") {
		t.Errorf("Check with a pipe named a.go in -out: %v", err)
	}
	if _, err := Write(out, []File{{Name: "a.go", Content: []byte("x")}}); !errors.Is(err, ErrHandWritten) {
		t.Errorf("Write over a pipe: %v", err)
	}
}

// TestKeptFileOfAnotherPackage pins that a run over some specs only may
// not give the output directory a second package: a personagen file it
// leaves in place (its spec exists, and is not among the run's specs)
// declares the package every generated file must use.
func TestKeptFileOfAnotherPackage(t *testing.T) {
	mod := t.TempDir()
	writeFile(t, filepath.Join(mod, "go.mod"), []byte("module example.com/m\n"))
	writeFile(t, filepath.Join(mod, "a.persona.yaml"), []byte("x"))
	out := filepath.Join(mod, "out")
	writeFile(t, filepath.Join(out, "a.go"), []byte(Header+"\n"+SourcePrefix+"a.persona.yaml\n\npackage first\n"))
	b, diags := spec.Load(filepath.Join(mod, "b.persona.yaml"), []byte("version: 1\nname: b\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	_, err := checkSpecs([]*spec.Persona{b}, nil, Options{Package: "second", OutDir: out, LineBase: mod})
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "holds a.go, generated from a.persona.yaml in package first") {
		t.Errorf("Check with a kept file of another package: %v", err)
	}
	if _, err := checkSpecs([]*spec.Persona{b}, nil, Options{Package: "first", OutDir: out, LineBase: mod}); err != nil {
		t.Errorf("Check in the kept file's package: %v", err)
	}
	a, _ := spec.Load(filepath.Join(mod, "a.persona.yaml"), []byte("version: 1\nname: a\n"))
	if _, err := checkSpecs([]*spec.Persona{a, b}, nil, Options{Package: "second", OutDir: out, LineBase: mod}); err != nil {
		t.Errorf("Check renaming the package of all the directory's specs: %v", err)
	}
}

// TestPackageMainNeedsAMainFunc pins that generating into package main is
// refused unless a hand-written file there declares func main: go build
// would fail to link, at no position of the generated code.
func TestPackageMainNeedsAMainFunc(t *testing.T) {
	out := t.TempDir()
	p, diags := spec.Load("a.persona.yaml", []byte("version: 1\nname: a\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	_, err := checkSpecs([]*spec.Persona{p}, nil, Options{Package: "main", OutDir: out})
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "package main needs a func main") {
		t.Errorf("Check into package main without main.go: %v", err)
	}
	writeFile(t, filepath.Join(out, "main.go"), []byte("package main\n\nfunc main() {}\n"))
	if _, err := checkSpecs([]*spec.Persona{p}, nil, Options{Package: "main", OutDir: out}); err != nil {
		t.Errorf("Check into package main next to main.go: %v", err)
	}
}
