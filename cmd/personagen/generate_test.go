package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/personagen/personagen/gen"
)

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// TestCommittedGeneratedIsFresh is the CI check: `personagen verify` with
// the root generate.go's arguments exits 0 on the committed generated/.
func TestCommittedGeneratedIsFresh(t *testing.T) {
	t.Chdir(repoRoot(t))
	code, stdout, stderr := runCLI(t, "verify", "-out", "generated", "-pkg", "generated", "-root", "examples", "examples")
	if code != exitOK {
		t.Fatalf("verify exit %d: generated/ is stale; run go generate ./...\n%s%s", code, stdout, stderr)
	}
}

// scratchOut makes an output directory inside the module (so the example
// host package resolves), hidden from ./... patterns by its dot prefix,
// and returns its path relative to the module root, the working directory.
func scratchOut(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	t.Chdir(root)
	dir, err := os.MkdirTemp(root, ".generate-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Base(dir)
}

// TestVerifyReportsStaleMissingAndOrphanedFiles drives generate and verify
// over one output directory: fresh after generate (exit 0); a changed file
// is stale with a unified diff; a deleted file is missing; a personagen
// file for a spec that is gone is orphaned (exit 1 each); generate then
// rewrites the changed file, restores the missing one, removes the orphan
// and leaves a hand-written file alone.
func TestVerifyReportsStaleMissingAndOrphanedFiles(t *testing.T) {
	out := scratchOut(t)
	args := []string{"-out", out, "-pkg", "demo", "-root", "examples", "examples"}
	if code, _, stderr := runCLI(t, append([]string{"generate"}, args...)...); code != exitOK {
		t.Fatalf("generate exit %d:\n%s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, append([]string{"verify"}, args...)...); code != exitOK || len(stdout)+len(stderr) > 0 {
		t.Fatalf("verify right after generate: exit %d\n%s%s", code, stdout, stderr)
	}

	support := filepath.Join(out, "support_agent.go")
	b, err := os.ReadFile(support)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(support, []byte(strings.Replace(string(b), `"support-agent"`, `"support-agent-edited"`, 1)), 0o644)
	os.Remove(filepath.Join(out, "sales_coach.go"))
	orphan := gen.Header + "\n" + gen.SourcePrefix + "examples/old.persona.yaml\n\npackage demo\n"
	os.WriteFile(filepath.Join(out, "old.go"), []byte(orphan), 0o644)
	handWritten := "package demo\n\n// Hand-written code next to generated files is never touched.\nconst X = 1\n"
	os.WriteFile(filepath.Join(out, "hand.go"), []byte(handWritten), 0o644)

	code, stdout, stderr := runCLI(t, append([]string{"verify"}, args...)...)
	if code != exitFail {
		t.Fatalf("verify exit %d, want %d", code, exitFail)
	}
	for _, want := range []string{
		"--- " + out + "/support_agent.go\n+++ " + out + "/support_agent.go\n",
		"-		Name:        \"support-agent-edited\",\n+		Name:        \"support-agent\",\n",
		"+++ " + out + "/sales_coach.go\n",
	} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("verify diff lacks %q:\n%s", want, stdout)
		}
	}
	for _, want := range []string{
		out + "/support_agent.go: stale: it differs from what examples/support-agent.persona.yaml generates",
		out + "/sales_coach.go: missing: generate it from examples/sales-coach.persona.yaml",
		out + "/old.go: orphaned: generated from examples/old.persona.yaml",
		"personagen verify: 1 stale, 1 missing, 1 orphaned generated files; run personagen generate\n",
	} {
		if !strings.Contains(string(stderr), want) {
			t.Errorf("verify stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(string(stdout)+string(stderr), "hand.go") {
		t.Errorf("verify reported the hand-written file:\n%s%s", stdout, stderr)
	}

	if code, _, stderr := runCLI(t, append([]string{"generate"}, args...)...); code != exitOK ||
		string(stderr) != "personagen generate: removed "+out+"/old.go: its spec examples/old.persona.yaml is gone\n" {
		t.Fatalf("generate exit %d, stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "old.go")); !os.IsNotExist(err) {
		t.Errorf("generate kept the orphaned file (stat: %v)", err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "hand.go")); string(got) != handWritten {
		t.Errorf("generate changed the hand-written file")
	}
	if code, stdout, stderr := runCLI(t, append([]string{"verify"}, args...)...); code != exitOK {
		t.Fatalf("verify after regenerate: exit %d\n%s%s", code, stdout, stderr)
	}

	// An orphan alone is not "out of date": the summary names its kind.
	os.WriteFile(filepath.Join(out, "old.go"), []byte(orphan), 0o644)
	code, stdout, stderr = runCLI(t, append([]string{"verify"}, args...)...)
	wantErr := out + "/old.go: orphaned: generated from examples/old.persona.yaml, which no longer exists; delete it or run personagen generate\n" +
		"personagen verify: 1 orphaned generated file; run personagen generate\n"
	if code != exitFail || len(stdout) > 0 || string(stderr) != wantErr {
		t.Errorf("verify with only an orphan: exit %d, stdout %q, stderr:\n%s\nwant exit %d, no stdout, stderr:\n%s", code, stdout, stderr, exitFail, wantErr)
	}
}

// TestGenerateKeepsFilesOfSpecsNotGiven pins that a run over some specs only
// (another go:generate line, a quick one-spec run) leaves the files of the
// other specs alone, because their specs still exist, and names them.
func TestGenerateKeepsFilesOfSpecsNotGiven(t *testing.T) {
	out := scratchOut(t)
	all := []string{"-out", out, "-pkg", "demo", "-root", "examples", "examples"}
	if code, _, stderr := runCLI(t, append([]string{"generate"}, all...)...); code != exitOK {
		t.Fatalf("generate exit %d:\n%s", code, stderr)
	}
	one := []string{"-out", out, "-pkg", "demo", "-root", "examples", "examples/support-agent.persona.yaml"}
	code, _, stderr := runCLI(t, append([]string{"generate"}, one...)...)
	want := "personagen generate: " + out + "/research_assistant.go: kept: generated from examples/research-assistant.persona.yaml, which this run was not given; include it, or delete the file if it should go\n" +
		"personagen generate: " + out + "/sales_coach.go: kept: generated from examples/sales-coach.persona.yaml, which this run was not given; include it, or delete the file if it should go\n"
	if code != exitOK || string(stderr) != want {
		t.Errorf("generate over one spec: exit %d, stderr:\n%s\nwant exit 0, stderr:\n%s", code, stderr, want)
	}
	for _, name := range []string{"research_assistant.go", "sales_coach.go", "support_agent.go"} {
		if _, err := os.Stat(filepath.Join(out, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if code, stdout, stderr := runCLI(t, append([]string{"verify"}, one...)...); code != exitOK || len(stdout) > 0 || !strings.Contains(string(stderr), "kept: generated from examples/sales-coach.persona.yaml") {
		t.Errorf("verify over one spec: exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}

	// The kept files declare package demo: one spec cannot move to another.
	other := []string{"-out", out, "-pkg", "other", "-root", "examples", "examples/support-agent.persona.yaml"}
	code, _, stderr = runCLI(t, append([]string{"generate"}, other...)...)
	if want := "personagen generate: -pkg: output directory " + out + " holds research_assistant.go, generated from examples/research-assistant.persona.yaml in package demo"; code != exitUsage || !strings.HasPrefix(string(stderr), want) {
		t.Errorf("generate over one spec into another package: exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr, want)
	}
}

// TestGenerateErrorsArePositioned checks the exit codes and the
// file:line:col: message form of generate and verify failures.
func TestGenerateErrorsArePositioned(t *testing.T) {
	out := scratchOut(t)
	bad := filepath.Join(out, "bad.persona.yaml")
	spec := "version: 1\nname: bad\nenv: github.com/personagen/personagen/examples/host.Env\nmessage_resolvers:\n  - load_record: {loader: AcountForSender}\n  - load_file: {path: prompts/missing.md}\n"
	if err := os.WriteFile(bad, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	nomod := filepath.ToSlash(filepath.Join(t.TempDir(), "agents"))
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr string // a regexp the whole stderr must match
	}{
		{"no paths", []string{"generate"}, exitUsage, `no spec paths given`},
		{"keyword package name", []string{"generate", "-pkg", "func", "examples"}, exitUsage, `^personagen generate: -pkg: package name "func" is a Go keyword; use an identifier\n`},
		{"blank package name", []string{"generate", "-pkg", "_", "examples"}, exitUsage, `^personagen generate: -pkg: package name "_" is the blank identifier; use an identifier\n`},
		{"bad package name", []string{"verify", "-pkg", "my-agents", "examples"}, exitUsage, `^personagen verify: -pkg: package name "my-agents" is not a Go identifier\n`},
		{"-out holds another package", []string{"generate", "-out", "examples/host", "-pkg", "demo", "examples"}, exitUsage,
			`^personagen generate: -pkg: output directory examples/host already holds package host \(doc.go\); generated files must be in the same package: use package name host, or another output directory\n`},
		{"bad flag", []string{"verify", "-nope", "examples"}, exitUsage, `flag provided but not defined: -nope`},
		{"flag after a path", []string{"generate", "examples", "-out", "x"}, exitUsage, `flag "-out" after a path; put flags before PATH...`},
		{"flag after a path in verify", []string{"verify", "examples", "-pkg", "x"}, exitUsage, `flag "-pkg" after a path`},
		{"missing spec path", []string{"generate", "-out", out, "nope"}, exitFail, `(?m)^nope: cannot read`},
		{"unresolved loader and missing file", []string{"generate", "-out", out, "-pkg", "x", "-root", "examples", bad}, exitFail,
			`(?s)^` + regexp.QuoteMeta(bad) + `:5:27: load_record loader: host.Env has no method AcountForSender; did you mean AccountForSender\?\n` +
				regexp.QuoteMeta(bad) + `:6:23: load_file: file "prompts/missing.md" does not exist \(looked for examples/prompts/missing.md\)\n$`},
		{"output package is the env's package", []string{"generate", "-out", "examples/host", "-pkg", "host", "-root", "examples", "examples/support-agent.persona.yaml"}, exitFail,
			`(?m)^examples/support-agent.persona.yaml:11:6: env: package github.com/personagen/personagen/examples/host is the output package, and generated code cannot import its own package \(import cycle\); generate into a separate package, e.g. github.com/personagen/personagen/examples/host/personas$`},
		{"-out outside any module", []string{"generate", "-out", nomod, "examples"}, exitUsage,
			`^personagen generate: -out: output directory ` + regexp.QuoteMeta(nomod) + ` is not inside a Go module \(no go.mod in it or any parent directory\); generate into a package directory of the module that imports the runtime and your host packages, or create one with go mod init\n$`},
		{"verify fails the same way", []string{"verify", "-out", out, "-pkg", "x", "-root", "examples", bad}, exitFail,
			`(?m)^` + regexp.QuoteMeta(bad) + `:5:27: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			if !regexp.MustCompile(tc.stderr).Match(stderr) {
				t.Errorf("stderr does not match %q:\n%s", tc.stderr, stderr)
			}
		})
	}
	if entries, _ := os.ReadDir(out); len(entries) != 1 {
		t.Errorf("a failed generate wrote files: %v", entries)
	}
}

// TestVerifyWithoutArgumentsChecksGoGenerateLines pins `personagen verify`
// with no arguments: it verifies each //go:generate line that runs
// personagen generate, with paths taken from that line's directory (and
// -out/-root defaulting to it), and is a usage error when there is none.
func TestVerifyWithoutArgumentsChecksGoGenerateLines(t *testing.T) {
	out := scratchOut(t) // and the working directory is now the repository root
	if code, stdout, stderr := runCLI(t, "verify"); code != exitOK || len(stdout)+len(stderr) > 0 {
		t.Fatalf("verify at the repository root: exit %d\n%s%s", code, stdout, stderr)
	}

	directive := "package demo\n\n//go:generate go tool personagen generate -pkg demo -root ../examples \"../examples/support-agent.persona.yaml\"\n"
	if err := os.WriteFile(filepath.Join(out, "generate.go"), []byte(directive), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(out)
	code, _, stderr := runCLI(t, "verify")
	if want := "support_agent.go: missing: generate it from examples/support-agent.persona.yaml\n"; code != exitFail || !strings.Contains(string(stderr), want) {
		t.Fatalf("verify before generate: exit %d, stderr:\n%s\nwant exit 1 and %q", code, stderr, want)
	}
	if code, _, stderr := runCLI(t, "generate", "-pkg", "demo", "-root", "../examples", "../examples/support-agent.persona.yaml"); code != exitOK {
		t.Fatalf("generate: exit %d\n%s", code, stderr)
	}
	if code, stdout, stderr := runCLI(t, "verify"); code != exitOK || len(stdout)+len(stderr) > 0 {
		t.Fatalf("verify after generate: exit %d\n%s%s", code, stdout, stderr)
	}

	t.Chdir(t.TempDir())
	if code, _, stderr := runCLI(t, "verify"); code != exitUsage || !strings.Contains(string(stderr), "no //go:generate line below this directory runs personagen generate") {
		t.Errorf("verify with nothing to verify: exit %d, stderr:\n%s", code, stderr)
	}
}
