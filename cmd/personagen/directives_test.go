package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestGenerateDirectivesReadLinesAsGoGenerateDoes pins which //go:generate
// lines bare verify and validate -check find, and the arguments they take
// from them: a tab after the directive, a -command alias, $GOPACKAGE and
// $DOLLAR expansion, go run with an @version, -pkg's value left alone in a
// subdirectory, paths after "--" rebased, a line in a test file (go
// generate runs those too); lines go generate would not run
// (a space before the directive, a file excluded by build constraints, a
// file starting with "_") are not found.
func TestGenerateDirectivesReadLinesAsGoGenerateDoes(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a/tab.go":     "package agents\n\n//go:generate\tpersonagen generate -pkg demo specs\n",
		"a/alias.go":   "package agents\n\n//go:generate -command pg go run github.com/personagen/personagen/cmd/personagen@v1.2.3\n//go:generate pg generate -pkg $GOPACKAGE -out out$DOLLAR specs\n",
		"a/dash.go":    "package agents\n\n//go:generate personagen generate -pkg x -- -odd.persona.yaml\n",
		"a/indent.go":  "package agents\n\n //go:generate personagen generate -pkg no specs\n",
		"a/ignored.go": "//go:build ignore\n\npackage agents\n\n//go:generate personagen generate -pkg no specs\n",
		"a/gen_tag.go": "//go:build generate\n\npackage agents\n\n//go:generate personagen generate -pkg tagged specs\n",
		"a/_skip.go":   "package agents\n\n//go:generate personagen generate -pkg no specs\n",
		"a/eq.go":      "package agents\n\n//go:generate personagen generate -out=gen -pkg=p --root ../prompts -v specs\n",
		"a/x_test.go":  "package agents_test\n\n//go:generate personagen generate -pkg fromtest specs\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	got, err := generateDirectives(".")
	if err != nil {
		t.Fatal(err)
	}
	want := []directive{
		{pos: "a/alias.go:4", args: []string{"-root", "a", "-pkg", "agents", "-out", "a/out$", "a/specs"}},
		{pos: "a/dash.go:3", args: []string{"-out", "a", "-root", "a", "-pkg", "x", "--", "a/-odd.persona.yaml"}},
		{pos: "a/eq.go:3", args: []string{"-out=a/gen", "-pkg=p", "--root", "prompts", "-v", "a/specs"}},
		{pos: "a/gen_tag.go:5", args: []string{"-out", "a", "-root", "a", "-pkg", "tagged", "a/specs"}},
		{pos: "a/tab.go:3", args: []string{"-out", "a", "-root", "a", "-pkg", "demo", "a/specs"}},
		{pos: "a/x_test.go:3", args: []string{"-out", "a", "-root", "a", "-pkg", "fromtest", "a/specs"}},
	}
	if !reflect.DeepEqual(got, want) {
		var b strings.Builder
		for _, d := range got {
			b.WriteString(d.pos + " " + strings.Join(d.args, " ") + "\n")
		}
		t.Errorf("generateDirectives found:\n%swant %v", b.String(), want)
	}
}
