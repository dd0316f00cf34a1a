package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/personagen/personagen/internal/docs"
)

// TestREADMETour runs README.md's tour as a newcomer would, in a scratch directory next to a
// "clone" of personagen (a symlink to this checkout): it runs the commands of the blocks marked
// `sh tour` in order, writes every block marked file=PATH, checks that every block marked
// generated=PATH is verbatim a part of the file `go generate` wrote, and that the block marked
// `output` is exactly what `go run` printed on stdout.
//
// Commands are read one per line, `#` starting a comment and `&&` joining commands; the test
// knows mkdir, cd and the go command. To keep CI to one build, `go generate ./...` runs this
// package's generate command in-process for each //go:generate line of the scratch module (it
// fails on a line that is not personagen's), and `go run` is the one command that compiles.
// After `go mod init` the checkout's go.sum is copied into the scratch module, which a reader's
// `go get` fills from the checksum database instead, so the test needs no network once the
// module cache is warm.
func TestREADMETour(t *testing.T) {
	if testing.Short() {
		t.Skip("builds README's tour in a scratch module")
	}
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	clone := filepath.Join(scratch, "personagen")
	if err := os.Symlink(root, clone); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOWORK", "off")
	tour := &tourRun{t: t, dir: clone, root: root}
	var ran, files, generated, outputs int
	for _, b := range docs.Blocks(string(readme)) {
		switch {
		case b.Has("tour"):
			ran++
			tour.commands(b)
		case b.Attrs["file"] != "":
			files++
			tour.write(b.Attrs["file"], b.Text)
		case b.Attrs["generated"] != "":
			generated++
			got, err := os.ReadFile(filepath.Join(tour.dir, filepath.FromSlash(b.Attrs["generated"])))
			if err != nil {
				t.Fatalf("README.md:%d: %v", b.Line, err)
			}
			if !strings.Contains(string(got), b.Text) {
				t.Errorf("README.md:%d: the block is not part of the generated %s, which reads:\n%s", b.Line, b.Attrs["generated"], got)
			}
		case b.Has("output"):
			outputs++
			if tour.stdout == nil {
				t.Fatalf("README.md:%d: an output block before any go run", b.Line)
			}
			if got := string(tour.stdout); got != b.Text {
				t.Errorf("README.md:%d: go run printed\n%s\nREADME shows\n%s", b.Line, got, b.Text)
			}
		}
	}
	if ran == 0 || files == 0 || generated == 0 || outputs == 0 {
		t.Errorf("README's tour has %d command blocks, %d files, %d generated excerpts and %d outputs; it needs each", ran, files, generated, outputs)
	}
}

// tourRun is the state of README's tour: the current directory and the last go run's stdout.
type tourRun struct {
	t      *testing.T
	dir    string // the shell's current directory, as a path through the clone's symlink
	root   string // the checkout
	stdout []byte
}

func (r *tourRun) write(rel, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *tourRun) commands(b docs.Block) {
	r.t.Helper()
	for _, line := range strings.Split(b.Text, "\n") {
		if i := strings.Index(line, "#"); i >= 0 {
			line = line[:i]
		}
		for _, c := range strings.Split(line, "&&") {
			if words := strings.Fields(c); len(words) > 0 {
				r.run(b.Line, words)
			}
		}
	}
}

func (r *tourRun) run(line int, words []string) {
	r.t.Helper()
	where := func() string { return "README.md:" + strconv.Itoa(line) + ": " + strings.Join(words, " ") }
	switch {
	case words[0] == "mkdir" && len(words) == 2:
		if err := os.Mkdir(r.path(words[1]), 0o755); err != nil {
			r.t.Fatalf("%s: %v", where(), err)
		}
	case words[0] == "cd" && len(words) == 2:
		r.dir = r.path(words[1])
	case len(words) == 2 && words[0] == "go" && words[1] == "generate":
		r.t.Fatalf("%s: name the packages (./...)", where())
	case len(words) >= 2 && words[0] == "go" && words[1] == "generate":
		r.generate(where())
	case words[0] == "go":
		cmd := exec.Command("go", words[1:]...)
		cmd.Dir = r.dir
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			r.t.Fatalf("%s: %v\n%s%s", where(), err, stdout.Bytes(), stderr.Bytes())
		}
		if words[1] == "run" {
			r.stdout = stdout.Bytes()
		}
		if words[1] == "mod" && len(words) > 2 && words[2] == "init" {
			sum, err := os.ReadFile(filepath.Join(r.root, "go.sum"))
			if err != nil {
				r.t.Fatal(err)
			}
			r.write("go.sum", string(sum))
		}
	default:
		r.t.Fatalf("%s: the tour test runs mkdir, cd and go commands only", where())
	}
}

// path resolves p against the current directory lexically, as a shell's cd does, so ".." of
// the clone is the scratch directory and not the checkout's parent.
func (r *tourRun) path(p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(r.dir, filepath.FromSlash(p))
}

// generate runs every //go:generate line below the current directory in-process, as `go
// generate ./...` would run `go tool personagen generate …`.
func (r *tourRun) generate(where string) {
	r.t.Helper()
	r.t.Chdir(r.dir)
	ds, err := generateDirectives(".")
	if err != nil {
		r.t.Fatalf("%s: %v", where, err)
	}
	all := 0
	err = filepath.WalkDir(".", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			all += strings.Count(string(data), "\n//go:generate ")
		}
		return err
	})
	if err != nil {
		r.t.Fatal(err)
	}
	if len(ds) == 0 || len(ds) != all {
		r.t.Fatalf("%s: %d //go:generate lines, %d of them personagen generate: the test runs only those", where, all, len(ds))
	}
	for _, d := range ds {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), append([]string{"generate"}, d.args...), &stdout, &stderr); code != exitOK {
			r.t.Fatalf("%s (%s): exit %d\n%s%s", where, d.pos, code, stdout.Bytes(), stderr.Bytes())
		}
	}
}
