package gen

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

// emitMessages emits p against host into package "out" and returns the
// diagnostics' messages.
func emitMessages(t *testing.T, p *spec.Persona, host *hostSet, opts Options) []string {
	t.Helper()
	_, err := emit([]*spec.Persona{p}, host, opts)
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("Emit error = %v, want *Error", err)
	}
	var msgs []string
	for _, d := range ge.Diagnostics {
		msgs = append(msgs, d.Message)
	}
	return msgs
}

// TestLoadFailurePassesOnTheGoCommandsError pins that when the go command
// refuses to list anything (here: the scratch module's go.mod lacks the
// requirements its imports need and -mod=readonly forbids adding them),
// the diagnostic carries the go command's own text, not only "was not
// loaded".
func TestLoadFailurePassesOnTheGoCommandsError(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	mod := scratchModule(t)
	t.Setenv("GOFLAGS", "-mod=readonly")
	host, err := loadPackages(context.Background(), mod, []string{fixtureModule + "/host"})
	if err != nil {
		t.Fatalf("LoadPackages: %v", err)
	}
	p := &spec.Persona{Name: spec.String{Value: "a"}, File: "a.persona.yaml", Pos: spec.Pos{File: "a.persona.yaml", Line: 1, Col: 1}}
	msgs := emitMessages(t, p, host, Options{Package: "out", OutDir: mod})
	if len(msgs) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %q", len(msgs), msgs)
	}
	for _, want := range []string{"package " + RuntimePath + " was not loaded", "go: updates to go.mod needed", "go mod tidy"} {
		if !strings.Contains(msgs[0], want) {
			t.Errorf("message %q lacks %q", msgs[0], want)
		}
	}
	if strings.Contains(msgs[0], "\n") {
		t.Errorf("message %q spans lines", msgs[0])
	}
}

// TestImportPath pins how the output directory's import path is derived:
// the nearest go.mod's module path (quoted or not, comments ignored) plus
// the slash path below it, for directories that do not exist yet too.
func TestImportPath(t *testing.T) {
	for _, tc := range []struct {
		name, gomod, dir, want string
		ok                     bool
	}{
		{"module root", "module example.com/m\n", ".", "example.com/m", true},
		{"nested, not yet created", "module example.com/m\n\ngo 1.26\n", "agents/personas", "example.com/m/agents/personas", true},
		{"quoted with comment", "// the module\nmodule \"example.com/q\" // q\n", "x", "example.com/q/x", true},
		{"no module line", "go 1.26\n", "x", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, filepath.Join(root, "go.mod"), []byte(tc.gomod))
			got, modRoot, ok := ImportPath(filepath.Join(root, tc.dir))
			if got != tc.want || ok != tc.ok || modRoot != root {
				t.Errorf("ImportPath = %q, %q, %v; want %q, %q, %v", got, modRoot, ok, tc.want, root, tc.ok)
			}
		})
	}
	if got, modRoot, ok := ImportPath(t.TempDir()); ok || got != "" || modRoot != "" {
		t.Errorf("outside any module: ImportPath = %q, %q, %v; want \"\", \"\", false", got, modRoot, ok)
	}
}

// TestGenerateOutsideAModule pins that an output directory no go.mod
// governs is refused before the go command runs, as such, not as a
// runtime package that cannot be found.
func TestGenerateOutsideAModule(t *testing.T) {
	out := filepath.Join(t.TempDir(), "agents")
	p := &spec.Persona{Name: spec.String{Value: "a"}, File: "a.persona.yaml"}
	_, _, err := Generate(context.Background(), []*spec.Persona{p}, Options{Package: "agents", OutDir: out})
	if !errors.Is(err, ErrNoModule) {
		t.Fatalf("Generate error = %v, want ErrNoModule", err)
	}
	if want := "output directory " + filepath.ToSlash(out) + " is not inside a Go module"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q lacks %q", err, want)
	}
}

// TestVendoredModuleLackingTheTranscriptPackage pins that in a module
// whose vendor directory lacks runtime/transcript (nothing of the module
// imported it when go mod vendor ran), a load_transcript entry is refused
// at the spec — generated code importing it would fail go build in the
// generated file — with what to do, and a spec without one still checks.
func TestVendoredModuleLackingTheTranscriptPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("vendors a scratch module")
	}
	mod := scratchModule(t)
	writeFile(t, filepath.Join(mod, "app", "app.go"), []byte("package app\n\nimport _ \"example.com/fixture/host\"\n"))
	for _, args := range [][]string{{"mod", "tidy"}, {"mod", "vendor"}} {
		if out, err := goCmd(t, mod, args...); err != nil {
			t.Fatalf("go %s:\n%s", strings.Join(args, " "), out)
		}
	}
	t.Setenv("GOFLAGS", "-mod=vendor")
	host, err := loadPackages(context.Background(), mod, []string{fixtureHost})
	if err != nil {
		t.Fatal(err)
	}
	p, diags := spec.Load("a.persona.yaml", []byte("version: 1\nname: a\ntools: [example.com/fixture/host.WebFetch]\nmessage_resolvers:\n  - load_transcript: {path: \"x/{{ .Persona.Name }}.chat\"}\n"))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	msgs := emitMessages(t, p, host, Options{Package: "out", OutDir: filepath.Join(mod, "out")})
	want := "load_transcript: the generated code imports " + TranscriptPath + ", and it cannot be loaded: package " + TranscriptPath + " is not in the module's vendor directory: import it from a package of the module (a blank import will do) and run go mod vendor"
	if len(msgs) != 1 || msgs[0] != want {
		t.Errorf("diagnostics %q, want one: %q", msgs, want)
	}
	p.MessageResolvers = nil
	if _, err := emit([]*spec.Persona{p}, host, Options{Package: "out", OutDir: filepath.Join(mod, "out")}); err != nil {
		t.Errorf("a spec without load_transcript: %v", err)
	}
}
