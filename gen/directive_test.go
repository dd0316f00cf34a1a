package gen

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

// TestBuildErrorsNameTheSpec generates the "full" case, then breaks the
// host code the spec references and the generated code itself, and runs
// `go build`: errors caused by the spec (a loader whose signature changed,
// a tool that is gone, a `with` field whose type changed, a use type that
// no longer implements runtime.Resolver) must name the spec file, line and
// column of what caused them, and an error elsewhere must name the
// generated file at its true line — the reset directives work.
func TestBuildErrorsNameTheSpec(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	testdata, _ := filepath.Abs("testdata")
	mod := scratchModule(t)
	copyDir(t, filepath.Join(testdata, "full"), filepath.Join(mod, "full"), func(rel string) bool { return rel == "out" })
	t.Chdir(mod)
	specs, diags := spec.LoadPaths([]string{"full"})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	files, _, err := Generate(context.Background(), specs, Options{Package: "out", OutDir: "full/out", Root: "full", LineBase: "."})
	if err != nil {
		t.Fatal(err)
	}
	genFile := filepath.Join(mod, "full", "out", files[0].Name)
	writeFile(t, genFile, files[0].Content)
	if out, err := goCmd(t, mod, "build", "./..."); err != nil {
		t.Fatalf("unbroken build failed:\n%s", out)
	}

	hostFile := filepath.Join(mod, "host", "host.go")
	edit(t, hostFile, "func (e *Env) AccountForSender(ctx context.Context, inv *runtime.Invocation)", "func (e *Env) AccountForSender(ctx context.Context, inv *runtime.Invocation, limit int)")
	edit(t, hostFile, "\tWebFetch  runtime.Tool = tool{\"web_fetch\", \"Fetch a web page.\"}\n", "")
	edit(t, hostFile, "Greeting string            `yaml:\"greeting\"`", "Greeting int `yaml:\"greeting\"`")
	edit(t, hostFile, "func Notes(", "func notes(")
	edit(t, hostFile, "MaxAge   *int              `yaml:\"max_age\"`", "MaxAge *string `yaml:\"max_age\"`")
	edit(t, hostFile, "func (v ValueResolver) Resolve(", "func (v ValueResolver) Resolved(")
	edit(t, genFile, "\treturn p, nil\n", "\treturn p, errUndefined\n")
	lines := strings.Split(string(mustRead(t, genFile)), "\n")
	retLine := 0
	for i, l := range lines {
		if l == "\treturn p, errUndefined" {
			retLine = i + 1
		}
	}

	out, err := goCmd(t, mod, "build", "-gcflags=-e", "./full/...")
	if err == nil {
		t.Fatal("broken build succeeded")
	}
	specText := string(mustRead(t, filepath.Join(mod, "full", "full.persona.yaml")))
	at := func(needle string, nth int) int { return lineOf(t, specText, needle, nth) }
	want := []string{
		// loader signature changed: at the loader, to the column
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: .*AccountForSender`, at("loader: AccountForSender", 0), colOf(t, specText, "AccountForSender")),
		fmt.Sprintf(`full/full.persona.yaml:%d:\d+: .*AccountForSender`, at("loader: AccountForSender", 1)),
		// tool removed: at the start of the tools entry, not at the name inside it
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: undefined: host.WebFetch`, at("host.WebFetch", 0), colOf(t, specText, "example.com/fixture/host.WebFetch")),
		// with field type changed: at the value
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: cannot use "Hello there"`, at("Greeting:", 0), colOf(t, specText, `"Hello there"`)),
		// qualified loader removed (its directive sits before a comma): at the loader
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: undefined: host.Notes`, at("host.Notes", 0), colOf(t, specText, "example.com/fixture/host.Notes")),
		// a tagged key (max_age for MaxAge) whose Go field is shorter: still at the value
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: cannot use new\(int\(30\)\)`, at("max_age: 30", 0), colOf(t, specText, "max_age: 30")+len("max_age: ")),
		// use type no longer a runtime.Resolver: at the resolver reference, not in the generated file
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: cannot use &host.ValueResolver`, at("host.ValueResolver", 0), colOf(t, specText, "example.com/fixture/host.ValueResolver")),
		fmt.Sprintf(`full/out/%s:%d:\d+: undefined: errUndefined`, regexp.QuoteMeta(files[0].Name), retLine),
	}
	for _, w := range want {
		if !regexp.MustCompile(`(?m)^` + w).MatchString(out) {
			t.Errorf("go build output lacks %q:\n%s", w, out)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func edit(t *testing.T, path, old, new string) {
	t.Helper()
	b := mustRead(t, path)
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	writeFile(t, path, []byte(strings.Replace(string(b), old, new, 1)))
}

// lineOf returns the 1-based line of the nth (from 0) line containing needle.
func lineOf(t *testing.T, text, needle string, nth int) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, needle) {
			if nth == 0 {
				return i + 1
			}
			nth--
		}
	}
	t.Fatalf("no line contains %q", needle)
	return 0
}

// colOf returns the 1-based column (in bytes; the spec line is ASCII) of
// the first occurrence of needle.
func colOf(t *testing.T, text, needle string) int {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		if i := strings.Index(l, needle); i >= 0 {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q", needle)
	return 0
}
