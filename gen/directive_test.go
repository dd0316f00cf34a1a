package gen

import (
	"context"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

// TestBuildErrorsNameTheSpec generates the "full" case, then breaks the
// host code the spec references and the generated code itself, and runs
// `go build`: errors caused by the spec (a loader whose signature changed,
// a tool that is gone, a method tool whose signature changed, a `with`
// field whose type changed, a use type that no longer implements
// runtime.Resolver) must name the spec file, line and
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
	toolsFile := filepath.Join(mod, "host", "tools.go")
	edit(t, toolsFile, "func (e *Env) LookupOrder(ctx context.Context, inv *runtime.Invocation, in OrderQuery)", "func (e *Env) LookupOrder(ctx context.Context, in OrderQuery)")
	edit(t, toolsFile, "func Ping(", "func ping(")
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
		// a method tool's signature changed: at the method
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: .*env.LookupOrder`, at("method: LookupOrder", 0), colOf(t, specText, "LookupOrder, idempotent")),
		// a function tool removed: at the function
		fmt.Sprintf(`full/full.persona.yaml:%d:%d: undefined: host.Ping`, at("host.Ping", 0), colOf(t, specText, "example.com/fixture/host.Ping")),
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

// TestBuildErrorsStayOnTheSpecLine generates a spec of short lines, then
// changes host types under it: a named string type becomes an int (the
// generated conversion new(host.Tier("gold")) and the slice []host.Tier
// fail inside a Go expression longer than the spec's text), a struct type
// is renamed (undefined inside []host.Limits{…}), and a loader's record
// type changes from []Account to []*Account (the generated serializer
// takes host.Account). Every error `go build` reports must name the spec
// — none the generated file — at a column inside its line, and the record
// type change at the serializer's line.
func TestBuildErrorsStayOnTheSpecLine(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	mod := scratchModule(t)
	specText := `version: 1
name: positions
env: example.com/fixture/host.Env
message_resolvers:
  - load_record:
      loader: AccountForSender
      serialize:
        method: LLMText
  - use:
      resolver: example.com/fixture/host.Pointers
      with:
        tier: gold
        tiers:
          - gold
  - use:
      resolver: example.com/fixture/host.CustomerContext
      with:
        steps:
          - max_items: 1
        backup:
          max_items: 2
`
	writeFile(t, filepath.Join(mod, "pos", "positions.persona.yaml"), []byte(specText))
	t.Chdir(mod)
	specs, diags := spec.LoadPaths([]string{"pos"})
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	files, _, err := Generate(context.Background(), specs, Options{Package: "out", OutDir: "pos/out", Root: "pos", LineBase: "."})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(mod, "pos", "out", files[0].Name), files[0].Content)
	if out, err := goCmd(t, mod, "build", "./pos/..."); err != nil {
		t.Fatalf("unbroken build failed:\n%s", out)
	}

	hostFile := filepath.Join(mod, "host", "host.go")
	edit(t, hostFile, "type Tier string", "type Tier int")
	edit(t, hostFile, "type Limits struct", "type Limit struct")
	edit(t, hostFile, "*Limits           `yaml:\"backup\"`", "*Limit `yaml:\"backup\"`")
	edit(t, hostFile, "Limits   Limits            `yaml:\"limits\"`", "Limits Limit `yaml:\"limits\"`")
	edit(t, hostFile, "Steps    []Limits          `yaml:\"steps\"`", "Steps []Limit `yaml:\"steps\"`")
	edit(t, hostFile, "\tLimits\n\tlimitsBase", "\tLimit\n\tlimitsBase")
	edit(t, hostFile, "inv *runtime.Invocation) ([]Account, error) {\n\tif inv.Inbound == nil {", "inv *runtime.Invocation) ([]*Account, error) {\n\tif inv.Inbound == nil {")
	edit(t, hostFile, "return []Account{a}, nil", "return []*Account{&a}, nil")
	if out, err := goCmd(t, mod, "build", "./host"); err != nil {
		t.Fatalf("the edited host does not build:\n%s", out)
	}

	out, err := goCmd(t, mod, "build", "-gcflags=-e", "./pos/...")
	if err == nil {
		t.Fatal("broken build succeeded")
	}
	lines := strings.Split(specText, "\n")
	errLine := regexp.MustCompile(`(?m)^(\S+?):(\d+):(\d+): (.*)$`)
	var atSpec []string
	for _, m := range errLine.FindAllStringSubmatch(out, -1) {
		file, line, col, msg := m[1], atoi(t, m[2]), atoi(t, m[3]), m[4]
		if file != "pos/positions.persona.yaml" {
			t.Errorf("error names %s, not the spec: %s", file, m[0])
			continue
		}
		if line < 1 || line > len(lines) || col > len(lines[line-1])+1 {
			t.Errorf("error points past the end of spec line %d (%q): %s", line, lines[min(max(line, 1), len(lines))-1], m[0])
		}
		atSpec = append(atSpec, fmt.Sprintf("%d: %s", line, msg))
	}
	for _, want := range []string{
		`8: .*does not match inferred type func\(\*host\.Account\)`, // the record type change, at the serializer
		`12: cannot convert "gold"`,                                 // new(host.Tier("gold"))
		`14: cannot use "gold"`,                                     // []host.Tier{"gold"}
		`19: undefined: host.Limits`,                                // []host.Limits{…}
	} {
		re := regexp.MustCompile(`^` + want)
		found := false
		for _, a := range atSpec {
			found = found || re.MatchString(a)
		}
		if !found {
			t.Errorf("no error matching %q among:\n%s", want, strings.Join(atSpec, "\n"))
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNoLineDirectivesOnlyDropsDirectives pins Options.NoLineDirectives'
// contract: the output is the same code without the /*line*/ comments.
func TestNoLineDirectivesOnlyDropsDirectives(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a scratch module")
	}
	testdata, _ := filepath.Abs("testdata")
	mod := scratchModule(t)
	for _, c := range []string{"full", "ok-pointer-fields"} {
		copyDir(t, filepath.Join(testdata, c), filepath.Join(mod, c), func(rel string) bool { return rel == "out" })
	}
	t.Chdir(mod)
	for _, c := range []string{"full", "ok-pointer-fields"} {
		specs, diags := spec.LoadPaths([]string{c})
		if len(diags) > 0 {
			t.Fatal(diags)
		}
		host, err := loadHost(context.Background(), mod, specs)
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Package: "out", OutDir: c + "/out", Root: c, LineBase: "."}
		with, err := emit(specs, host, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.NoLineDirectives = true
		without, err := emit(specs, host, opts)
		if err != nil {
			t.Fatal(err)
		}
		stripped, err := format.Source(regexp.MustCompile(`/\*line [^*]*\*/`).ReplaceAll(with[0].Content, nil))
		if err != nil {
			t.Fatal(err)
		}
		if string(stripped) != string(without[0].Content) {
			t.Errorf("%s: without directives differs from with directives stripped:\n%s\n---\n%s", c, without[0].Content, stripped)
		}
		if strings.Contains(string(without[0].Content), "/*line") {
			t.Errorf("%s: NoLineDirectives output holds a directive", c)
		}
	}
}
