package gen

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

// fuzzPackages are the host packages the fuzz target loads once: the
// fixture host with its odd corners (main and internal subpackages), the
// second module's public and internal packages, and a path that does not
// exist.
var fuzzPackages = []string{
	fixtureHost, fixtureHost + "/cmdtool", fixtureHost + "/internal/secret",
	"example.com/other/api", "example.com/other/internal/secret", "example.com/fixture/nope",
}

// fuzzSeeds are specs that reach the generator's odd corners, added to the
// golden cases' and the examples' specs as seeds.
var fuzzSeeds = []string{
	"version: 1\nname: x\ndescription: \"/* */ // \\u2028\"\n",
	"version: 1\nname: a-b\nmessage_resolvers:\n  - load_text: {text: \"{{ .Inbound.To }}*/\"}\n",
	"version: 1\nname: nul\ndescription: \"a\\0b\\uFEFFc\\x7f\"\n",
	"version: 1\nname: alias\nenv: example.com/fixture/host.EnvAlias\nmessage_resolvers:\n  - load_record: {loader: AccountForSender, serialize: {method: LLMText}}\n",
	"version: 1\nname: generic\nmessage_resolvers:\n  - use: {resolver: example.com/fixture/host.PairOf}\n  - use: {resolver: example.com/fixture/host.IntPair, with: {First: 1, second: -2}}\n",
	"version: 1\nname: internal\nmessage_resolvers:\n  - load_record: {loader: example.com/other/api.Load, serialize: {method: Line}}\n  - use: {resolver: example.com/other/api.Resolver, with: {config: {Level: 1}}}\n",
	"version: 1\nname: pointers\nmessage_resolvers:\n  - use: {resolver: example.com/fixture/host.Pointers, with: {any: {a: [1]}, tier: x, wait: 1h, twice: 3, labels: [], tiers: [a]}}\n",
	"version: 1\nname: tagged\nmessage_resolvers:\n  - use: {resolver: example.com/fixture/host.Tagged, with: {\"-\": x}}\n  - use: {resolver: example.com/fixture/host.Dashed, with: {\"-\": x}}\n",
	"version: 1\nname: recursive\nmessage_resolvers:\n  - use: {resolver: example.com/fixture/host.Recursive, with: {loop: 1, nest: [[[]]], next: {next: {loop: null}}}}\n",
	"version: 1\nname: embedded\nenv: example.com/fixture/host.EmbeddingEnv\nmessage_resolvers:\n  - load_record: {loader: BaseNotes}\n  - use: {resolver: example.com/fixture/host.Embedded, with: {MaxItems: 1, Limits: {max_items: 2}}}\n",
	"version: 1\nname: tools\nenv: example.com/fixture/host.Env\ntools:\n  - {method: LookupOrder, idempotent: true}\n  - {method: Escalate, name: e-1, description: \"`*/ \\u0000\\uFEFF\"}\n  - {func: example.com/other/api.Search}\n  - example.com/fixture/host.WebFetch\n",
	"version: 1\nname: tool-kinds\nenv: example.com/fixture/host.EnvAlias\ntools:\n  - {method: Cook}\n  - {func: example.com/fixture/host.Compose, name: c}\n  - {method: BadTree}\n  - {method: NoDoc}\n",
	"version: 1\nname: signatures\nmessage_resolvers:\n  - load_record: {loader: example.com/fixture/host.AliasSliceLoader, serialize: {method: Headline}}\n  - load_record: {loader: example.com/fixture/host.NamedSliceLoader}\n  - load_record: {loader: example.com/fixture/host.Records}\n",
}

// fuzzHarness is the scratch module, host and options FuzzGenerate and
// TestFuzzCorpusCompiles share.
type fuzzHarness struct {
	mod  string
	host *hostSet
	opts Options
}

func newFuzzHarness(t testing.TB) *fuzzHarness {
	t.Helper()
	mod := scratchModule(t)
	root := filepath.Join(mod, "root")
	for _, name := range []string{"prompts/system.md", "prompts/few-shot.chat", "prompts/a.md"} {
		writeFile(t, filepath.Join(root, name), []byte("user: hello\n"))
	}
	host, err := loadPackages(t.Context(), mod, fuzzPackages)
	if err != nil {
		t.Fatal(err)
	}
	return &fuzzHarness{mod: mod, host: host, opts: Options{Package: "out", OutDir: filepath.Join(mod, "out"), Root: root, LineBase: mod}}
}

// FuzzGenerate holds, for any spec text: loading, checking and emitting
// never panic; a spec that generates yields Go source that parses, the
// same bytes on a second run, and a header naming its source; a spec that
// does not generate yields positioned diagnostics inside this spec's file.
// The fixture host packages are loaded once; seeds are the golden cases'
// and the examples' specs and fuzzSeeds, so plain `go test` runs them all,
// and the committed corpus (testdata/fuzz/FuzzGenerate) too, which
// TestFuzzCorpusCompiles also builds.
func FuzzGenerate(f *testing.F) {
	if testing.Short() {
		f.Skip("loads a scratch module")
	}
	for _, glob := range []string{"testdata/*/*.persona.yaml", "../examples/*.persona.yaml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	h := newFuzzHarness(f)
	name := filepath.Join(h.mod, "fuzz.persona.yaml")

	f.Fuzz(func(t *testing.T, data []byte) {
		h.check(t, name, data)
	})
}

// check loads data as the spec file name and generates it against the
// harness's host: no panic; output that parses, carries the header and is
// the same on a second run; or positioned diagnostics inside the spec.
func (h *fuzzHarness) check(t *testing.T, name string, data []byte) {
	p, diags := spec.Load(name, data)
	if len(diags) > 0 {
		return
	}
	lines := bytes.Count(data, []byte("\n")) + 1
	files, err := emit([]*spec.Persona{p}, h.host, h.opts)
	if err != nil {
		var ge *Error
		if !errors.As(err, &ge) || len(ge.Diagnostics) == 0 {
			t.Fatalf("Emit error is not positioned diagnostics: %v", err)
		}
		for _, d := range ge.Diagnostics {
			if d.Pos.File != name || d.Pos.Line < 1 || d.Pos.Line > lines || d.Pos.Col < 1 {
				t.Fatalf("diagnostic outside the spec: %s", d)
			}
			if strings.Contains(d.Message, ErrFormat.Error()) {
				t.Fatalf("generator bug: %s", d.Message)
			}
		}
		return
	}
	if len(files) != 2 || files[1].Name != PersonasFile {
		t.Fatalf("%d files for one spec, want its own and %s", len(files), PersonasFile)
	}
	if _, err := parser.ParseFile(token.NewFileSet(), PersonasFile, files[1].Content, parser.ParseComments); err != nil {
		t.Fatalf("%s does not parse: %v\n%s", PersonasFile, err, files[1].Content)
	}
	src := files[0].Content
	if _, err := parser.ParseFile(token.NewFileSet(), files[0].Name, src, parser.ParseComments); err != nil {
		t.Fatalf("generated code does not parse: %v\n%s", err, src)
	}
	if !bytes.HasPrefix(src, []byte(Header+"\n"+SourcePrefix+sourceLine(displayPath(h.opts.LineBase, name))+"\n")) {
		t.Fatalf("header missing:\n%s", src)
	}
	again, err := emit([]*spec.Persona{p}, h.host, h.opts)
	if err != nil || !bytes.Equal(again[0].Content, src) {
		t.Fatalf("second run differs (err %v)", err)
	}
}

// withResolvers are the use resolvers FuzzWith fills: struct fields of
// every kind the checker types, aliases, instantiated generics, embedded
// and tagged fields, self-referential types, another module's types.
var withResolvers = []string{
	fixtureHost + ".CustomerContext", fixtureHost + ".Pointers", fixtureHost + ".Recursive",
	fixtureHost + ".Embedded", fixtureHost + ".Tagged", fixtureHost + ".Dashed",
	fixtureHost + ".IntPair", fixtureHost + ".ContextAlias", "example.com/other/api.Resolver",
}

// withSpec is the spec FuzzWith generates: one use entry of the which-th
// resolver of withResolvers, its with mapping written by withYAML from
// program.
func withSpec(which uint8, program []byte) []byte {
	return []byte(fmt.Sprintf("version: 1\nname: with\nmessage_resolvers:\n  - use:\n      resolver: %s\n      with: %s\n", withResolvers[int(which)%len(withResolvers)], withYAML(program)))
}

// withKeys are the keys withYAML writes: the fixture resolvers' field
// names and tag names, and a few that name nothing.
var withKeys = []string{
	"tier", "Tier", "greeting", "priority", "weight", "verbose", "tags", "limits", "backup", "extra",
	"max_age", "meta", "steps", "max_items", "window", "Labels", "any", "wait", "twice", "labels",
	"tiers", "loop", "nest", "next", "name", "Limits", "MaxItems", "Quota", "limitsBase", "-",
	"Secret", "Hidden", "visible", "First", "second", "config", "levels", "Level", "Text", "secret", "x",
}

// withStrings are the string scalars withYAML writes: durations, numbers
// as text, text that matters to Go source and comments.
var withStrings = []string{"gold", "", "90s", "-5m", "1h30m", "250ms", "1e3", "x */ y", "\x00\ufeff", "line\nbreak", "`", "\\", "null", "true"}

// withYAML writes a flow mapping from program, read as a sequence of
// choices (each byte picks what comes next), so every input is valid
// YAML and the fuzzing engine explores the checker, not the YAML parser.
// Strings go through encoding/json, whose output is valid YAML.
func withYAML(program []byte) string {
	c := &choices{b: program}
	return c.mapping(0)
}

// choices reads a fuzz input one decision at a time; it reads zeros once
// the input is used up.
type choices struct {
	b []byte
	i int
}

func (c *choices) next() int {
	if c.i >= len(c.b) {
		return 0
	}
	c.i++
	return int(c.b[c.i-1])
}

func (c *choices) mapping(depth int) string {
	n := c.next() % 5
	var parts []string
	for range n {
		parts = append(parts, q(withKeys[c.next()%len(withKeys)])+": "+c.value(depth+1))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func (c *choices) value(depth int) string {
	op := c.next() % 10
	if depth > 6 && (op == 5 || op == 6) {
		op = 0
	}
	switch op {
	case 0:
		return "null"
	case 1:
		return strconv.FormatBool(c.next()%2 == 0)
	case 2:
		return strconv.Itoa(int(int8(c.next())) * (1 + c.next()))
	case 3:
		return strconv.FormatFloat(float64(int8(c.next()))/float64(1+c.next()), 'g', -1, 64)
	case 4, 8:
		return q(withStrings[c.next()%len(withStrings)])
	case 5:
		n := c.next() % 4
		var items []string
		for range n {
			items = append(items, c.value(depth+1))
		}
		return "[" + strings.Join(items, ", ") + "]"
	case 6:
		return c.mapping(depth)
	case 7:
		return strconv.Itoa(c.next()) + []string{"s", "m", "h", "ms", "us", "ns"}[c.next()%6]
	}
	return []string{"9223372036854775807", "-9223372036854775808", "1e39", "256", "-129", "65536", "4294967296"}[c.next()%7]
}

// FuzzWith is FuzzGenerate aimed at `with` values: the fuzzed bytes are a
// program that withYAML turns into the with mapping of a use entry of one
// of withResolvers, so every input is a valid spec whose values exercise
// the typed-value checker (with.go) and the emitter. It holds what
// FuzzGenerate holds; TestFuzzCorpusCompiles builds its committed corpus
// too.
func FuzzWith(f *testing.F) {
	if testing.Short() {
		f.Skip("loads a scratch module")
	}
	for i := range withResolvers {
		f.Add(uint8(i), []byte{4, 0, 4, 1, 2, 5, 3, 6, 2, 13, 4, 4})
		f.Add(uint8(i), []byte{3, 7, 5, 2, 4, 2, 20, 6, 2, 5, 4, 2, 2, 1, 1})
	}
	h := newFuzzHarness(f)
	name := filepath.Join(h.mod, "with.persona.yaml")
	f.Fuzz(func(t *testing.T, which uint8, program []byte) {
		h.check(t, name, withSpec(which, program))
	})
}

// readFuzzCorpus returns the values of the committed corpus files of a
// fuzz target, by file name.
func readFuzzCorpus(t *testing.T, target string) map[string][]any {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "fuzz", target, "*"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]any)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := decodeCorpusFile(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out[filepath.Base(p)] = vals
	}
	return out
}

// decodeCorpusFile returns the values of a corpus file in the go test
// fuzz v1 format: []byte(…), string(…) and uint8(…) lines.
func decodeCorpusFile(b []byte) ([]any, error) {
	header, rest, _ := strings.Cut(string(b), "\n")
	if header != "go test fuzz v1" {
		return nil, errors.New("not a fuzz corpus file")
	}
	var vals []any
	for _, line := range strings.Split(strings.TrimSpace(rest), "\n") {
		expr, err := parser.ParseExpr(line)
		if err != nil {
			return nil, err
		}
		call, ok := expr.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return nil, fmt.Errorf("%q is not a T(value) line", line)
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok {
			return nil, fmt.Errorf("%q holds no literal", line)
		}
		switch fun := types.ExprString(call.Fun); fun {
		case "[]byte", "string":
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return nil, err
			}
			if fun == "string" {
				vals = append(vals, s)
			} else {
				vals = append(vals, []byte(s))
			}
		case "uint8", "byte":
			// The fuzzing engine writes a byte as a number or as a
			// character literal (byte('\x11')).
			n, err := strconv.ParseUint(lit.Value, 0, 8)
			if lit.Kind == token.CHAR {
				var r rune
				r, _, _, err = strconv.UnquoteChar(lit.Value[1:len(lit.Value)-1], '\'')
				n = uint64(r)
			}
			if err != nil || n > 255 {
				return nil, fmt.Errorf("%q: not a byte", line)
			}
			vals = append(vals, uint8(n))
		default:
			return nil, fmt.Errorf("%q: type %s is not read here", line, fun)
		}
	}
	return vals, nil
}

// TestFuzzCorpusCompiles holds what the fuzz targets cannot check per
// input (a build per execution would be too slow): every committed corpus
// entry of FuzzGenerate and FuzzWith that generates compiles. Each entry's
// persona is renamed (fuzz-0, fuzz-1, …) so that all of them generate into
// one package, which is built and vetted once.
func TestFuzzCorpusCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	specs := make(map[string][]byte)
	for entry, vals := range readFuzzCorpus(t, "FuzzGenerate") {
		if data, ok := vals[0].([]byte); ok && len(vals) == 1 {
			specs["FuzzGenerate-"+entry] = data
		}
	}
	for entry, vals := range readFuzzCorpus(t, "FuzzWith") {
		if len(vals) != 2 {
			continue
		}
		which, ok1 := vals[0].(uint8)
		program, ok2 := vals[1].([]byte)
		if ok1 && ok2 {
			specs["FuzzWith-"+entry] = withSpec(which, program)
		}
	}
	if len(specs) == 0 {
		t.Fatal("no committed corpus entries in testdata/fuzz")
	}
	h := newFuzzHarness(t)
	generated := 0
	for i, entry := range slices.Sorted(maps.Keys(specs)) {
		name := filepath.Join(h.mod, "corpus", entry+".persona.yaml")
		p, diags := spec.Load(name, specs[entry])
		if len(diags) > 0 {
			continue
		}
		p.Name.Value = fmt.Sprintf("fuzz-%d", i)
		files, err := emit([]*spec.Persona{p}, h.host, h.opts)
		var ge *Error
		switch {
		case errors.As(err, &ge):
			continue
		case err != nil:
			t.Fatalf("%s: %v", entry, err)
		}
		writeFile(t, filepath.Join(h.opts.OutDir, files[0].Name), files[0].Content)
		generated++
	}
	if generated == 0 {
		t.Fatal("no corpus entry generates")
	}
	if out, err := goCmd(t, h.mod, "build", "./out"); err != nil {
		t.Fatalf("go build of %d generated corpus entries failed:\n%s", generated, firstLines(out, 40))
	}
	if out, err := goCmd(t, h.mod, "vet", "./out"); err != nil {
		t.Fatalf("go vet of %d generated corpus entries failed:\n%s", generated, firstLines(out, 40))
	}
	t.Logf("%d of %d corpus entries generate and compile", generated, len(specs))
}
