package spec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/personagen/personagen/internal/golden"
)

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

// TestValidSpecsLoadToGoldenModel loads every spec in testdata/valid and
// compares the whole typed model, positions included, with its
// .golden.json.
func TestValidSpecsLoadToGoldenModel(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.persona.yaml")
	if len(files) < 2 {
		t.Fatalf("want valid specs in testdata/valid, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			p, diags := ReadFile(f)
			if len(diags) > 0 || p == nil {
				t.Fatalf("diagnostics: %v", diags)
			}
			got, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".persona.yaml")+".golden.json", append(got, '\n'))
		})
	}
}

func mustLoad(t *testing.T, src string) *Persona {
	t.Helper()
	p, diags := Load("x.persona.yaml", []byte(src))
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics: %v", diags)
	}
	return p
}

func TestThreadHistoryLimitDistinguishesAbsentNullAndNumber(t *testing.T) {
	p := mustLoad(t, `version: 1
name: a
message_resolvers:
  - thread_history: {}
responsibility_resolvers:
  - thread_history: {limit: null, include_tool_calls: false, replay_result_limit: 10}
`)
	def := p.MessageResolvers[0].ThreadHistory
	if def.Limit != (Limit{State: LimitDefault, Value: 50}) {
		t.Errorf("absent limit = %+v", def.Limit)
	}
	if def.IncludeToolCalls != (Bool{Value: true}) || def.ReplayResultLimit != (Int{Value: 4000}) {
		t.Errorf("defaults = %+v %+v", def.IncludeToolCalls, def.ReplayResultLimit)
	}
	null := p.ResponsibilityResolvers[0].ThreadHistory
	if null.Limit != (Limit{State: LimitUnlimited, Pos: Pos{"x.persona.yaml", 6, 29}}) {
		t.Errorf("null limit = %+v", null.Limit)
	}
	if null.IncludeToolCalls.Value || null.ReplayResultLimit.Value != 10 {
		t.Errorf("set values = %+v %+v", null.IncludeToolCalls, null.ReplayResultLimit)
	}
	n := mustLoad(t, "version: 1\nname: a\nmessage_resolvers: [{thread_history: {limit: 7}}]\n")
	if got := n.MessageResolvers[0].ThreadHistory.Limit; got.State != LimitSet || got.Value != 7 {
		t.Errorf("limit 7 = %+v", got)
	}
}

func TestRolesDefaultPerKind(t *testing.T) {
	p := mustLoad(t, `version: 1
name: a
env: example.com/h.Env
message_resolvers:
  - load_file: {path: a.md}
  - load_text: {text: t, role: assistant}
  - load_record: {loader: Rows}
  - thread_summary: {}
`)
	r := p.MessageResolvers
	got := []RoleValue{r[0].LoadFile.Role, r[1].LoadText.Role, r[2].LoadRecord.Role, r[3].ThreadSummary.Role}
	want := []RoleValue{{Value: RoleSystem}, {Value: RoleAssistant, Pos: Pos{"x.persona.yaml", 6, 32}}, {Value: RoleSystem}, {Value: RoleUser}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("roles = %+v, want %+v", got, want)
	}
	if r[2].LoadRecord.Loader != (GoRef{Name: "Rows", Pos: Pos{"x.persona.yaml", 7, 27}}) || r[2].LoadRecord.Serialize != nil {
		t.Errorf("loader = %+v", r[2].LoadRecord)
	}
}

func TestWithAndExtraKeepOrderKindsAndDatesAsStrings(t *testing.T) {
	p := mustLoad(t, `version: 1
name: a
model:
  name: m
  extra: {z: 1, a: [true, null], m: 1.5}
message_resolvers:
  - use:
      resolver: example.com/h.Ctx
      with: {since: 2024-01-02, n: 0x10, big: 99999999999999999999.0, s: "x"}
`)
	var keys []string
	for _, e := range p.Model.Extra {
		keys = append(keys, e.Key.Value)
	}
	if strings.Join(keys, ",") != "z,a,m" {
		t.Errorf("extra key order = %v", keys)
	}
	if l := p.Model.Extra[1].Value.List; len(l) != 2 || l[0].Kind != ValueBool || !l[0].Bool || l[1].Kind != ValueNull {
		t.Errorf("extra.a = %+v", p.Model.Extra[1].Value)
	}
	w := p.MessageResolvers[0].Use.With.Map
	got := []Value{w[0].Value, w[1].Value, w[2].Value}
	if got[0].Kind != ValueString || got[0].Str != "2024-01-02" {
		t.Errorf("date = %+v, want the string 2024-01-02", got[0])
	}
	if got[1].Kind != ValueInt || got[1].Int != 16 || got[1].Str != "16" {
		t.Errorf("hex = %+v", got[1])
	}
	if got[2].Kind != ValueFloat || got[2].Str != "99999999999999999999.0" {
		t.Errorf("big = %+v", got[2])
	}
	if w[0].Key.Pos != (Pos{"x.persona.yaml", 9, 14}) || w[0].Value.Pos != (Pos{"x.persona.yaml", 9, 21}) {
		t.Errorf("positions key %v value %v", w[0].Key.Pos, w[0].Value.Pos)
	}
}

// TestColumnsCountCharactersNotBytes pins the unit of Pos.Col: yaml.v3
// counts runes (a multi-byte character is one column) and a tab is one
// column.
func TestColumnsCountCharactersNotBytes(t *testing.T) {
	p := mustLoad(t, "version: 1\nname: a\ndescription: \"日本\"\nmodel: {name: \"é\",\tmax_tokens: 5}\n")
	if p.Model.MaxTokens.Pos != (Pos{"x.persona.yaml", 4, 32}) {
		t.Errorf("max_tokens at %v; want col 32 (runes, tab = 1); bytes would give 33", p.Model.MaxTokens.Pos)
	}
	_, diags := Load("x", []byte("version: 1\nname: a\ndescription: 日本語 {{\nmodel: {name: 日本, zz: 1}\n"))
	if len(diags) != 1 || diags[0].Pos != (Pos{"x", 4, 19}) {
		t.Errorf("diags = %v, want one at 4:19 (bytes would give 4:23)", diags)
	}
}

func TestTemplatePartsArePositioned(t *testing.T) {
	p := mustLoad(t, `version: 1
name: a
message_resolvers:
  - load_text: {text: "Hi {{ .Persona.Name }}, re {{.Inbound.Subject}}!"}
  - load_file:
      path: plain/{{ .CorrelationID }}.md
`)
	text := p.MessageResolvers[0].LoadText.Text
	want := []TemplatePart{
		{Literal: "Hi ", Pos: Pos{"x.persona.yaml", 4, 24}},
		{Field: []string{"Persona", "Name"}, Pos: Pos{"x.persona.yaml", 4, 27}},
		{Literal: ", re ", Pos: Pos{"x.persona.yaml", 4, 46}},
		{Field: []string{"Inbound", "Subject"}, Pos: Pos{"x.persona.yaml", 4, 51}},
		{Literal: "!", Pos: Pos{"x.persona.yaml", 4, 71}},
	}
	if !reflect.DeepEqual(text.Parts, want) {
		t.Errorf("parts = %+v\nwant %+v", text.Parts, want)
	}
	path := p.MessageResolvers[1].LoadFile.Path
	if path.IsStatic() || path.Parts[1].Pos != (Pos{"x.persona.yaml", 6, 19}) {
		t.Errorf("path = %+v", path)
	}
	if !mustLoad(t, "version: 1\nname: a\nmessage_resolvers: [{load_file: {path: a.md}}]\n").MessageResolvers[0].LoadFile.Path.IsStatic() {
		t.Error("a.md is not static")
	}
}

func TestParseTemplateRejectsEverythingOutsideTheSubset(t *testing.T) {
	tests := []struct{ src, want string }{
		{"{{ .Persona.Name }}", ""},
		{"{{.Inbound.Cc}}{{ .Inbound.To }}", ""},
		{"a }} b", ""},
		{"{{ .Persona.Name", "unterminated"},
		{"{{ .Persona.Name | printf }}", "outside the template subset"},
		{"{{ printf \"%s\" .Persona.Name }}", "outside the template subset"},
		{"{{- .Persona.Name -}}", "outside the template subset"},
		{"{{/* c */}}", "outside the template subset"},
		{"{{ . }}", "outside the template subset"},
		{"{{ $x }}", "outside the template subset"},
		{"{{ .Persona }}", "unknown template field .Persona"},
		{"{{ .Inbound.Subjekt }}", "did you mean .Inbound.Subject?"},
	}
	for _, tt := range tests {
		_, errs := ParseTemplate(tt.src, Pos{"f", 1, 1}, ColumnsExact)
		var got string
		if len(errs) > 0 {
			got = errs[0].Message
		}
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("ParseTemplate(%q) error %q, want containing %q", tt.src, got, tt.want)
		}
	}
}

func TestParseGoRefSplitsAtLastDot(t *testing.T) {
	tests := []struct {
		in   string
		want GoRef
		ok   bool
	}{
		{"github.com/acme/app/agents.Env", GoRef{Path: "github.com/acme/app/agents", Name: "Env"}, true},
		{"gopkg.in/x.v3.Func", GoRef{Path: "gopkg.in/x.v3", Name: "Func"}, true},
		{"fmt.Stringer", GoRef{Path: "fmt", Name: "Stringer"}, true},
		{"LLMText", GoRef{Name: "LLMText"}, true},
		{"llmText", GoRef{}, false},
		{"a/../b.X", GoRef{}, false},
		{"a//b.X", GoRef{}, false},
		{".X", GoRef{}, false},
		{"a.b.", GoRef{}, false},
		{"a b.X", GoRef{}, false},
		{"", GoRef{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseGoRef(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseGoRef(%q) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
		if ok && got.String() != tt.in {
			t.Errorf("String() = %q, want %q", got.String(), tt.in)
		}
	}
}

func TestLoadReportsOnlyOnePersonaOrDiagnostics(t *testing.T) {
	p, diags := Load("x", []byte("version: 1\nname: a\nfoo: 1\nbar: 2\n"))
	if p != nil || len(diags) != 2 || diags[0].Pos.Line != 3 || diags[1].Pos.Line != 4 {
		t.Errorf("Load = %v, %v; want nil and two sorted diagnostics", p, diags)
	}
}

func TestLoadPathsFindsSpecsAndCollisions(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.persona.yaml", "version: 1\nname: one\n")
	write("sub/b.persona.yml", "version: 1\nname: two\n")
	write("vendor/c.persona.yaml", "broken")
	write("_skip/c.persona.yaml", "broken")
	write("other.yaml", "broken")
	ps, diags := LoadPaths([]string{dir, filepath.Join(dir, "a.persona.yaml")})
	if len(diags) != 0 || len(ps) != 2 || ps[0].Name.Value != "one" || ps[1].Name.Value != "two" {
		t.Fatalf("LoadPaths = %d personas, %v", len(ps), diags)
	}
	write("sub/c.persona.yaml", "version: 1\nname: one\n")
	_, diags = LoadPaths([]string{dir})
	if len(diags) != 2 || !strings.Contains(diags[0].Message, "sub/c.persona.yaml:2:7") {
		t.Errorf("collision diagnostics = %v", diags)
	}
}

// TestSpecFilesCountsEachFileOnceAndFollowsALinkedRoot pins how arguments
// name files: the same spec reached by a relative, an absolute or a
// symlinked path is one spec (it must not collide with itself), and a
// directory argument that is a symlink is walked like the directory it
// points to (links met while walking are still not followed).
func TestSpecFilesCountsEachFileOnceAndFollowsALinkedRoot(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(real, 0o755); err != nil {
		t.Fatal(err)
	}
	spec := filepath.Join(real, "a.persona.yaml")
	if err := os.WriteFile(spec, []byte("version: 1\nname: one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []struct{ target, name string }{
		{"real", "linkdir"},
		{"real/a.persona.yaml", "link.persona.yaml"},
		{"..", "real/loop"},
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Skipf("symlinks unavailable: %v", err)
		}
	}
	t.Chdir(dir)
	tests := []struct {
		name  string
		paths []string
		files []string
		diags int
	}{
		{"relative and absolute", []string{"real/a.persona.yaml", spec}, []string{"real/a.persona.yaml"}, 0},
		{"dot-slash", []string{"./real/a.persona.yaml", "real/a.persona.yaml"}, []string{"./real/a.persona.yaml"}, 0},
		{"file and symlink to it", []string{"real/a.persona.yaml", "link.persona.yaml"}, []string{"real/a.persona.yaml"}, 0},
		{"symlinked directory", []string{"linkdir"}, []string{"linkdir/a.persona.yaml"}, 0},
		{"directory and its symlink", []string{"real", "linkdir"}, []string{"real/a.persona.yaml"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files, diags := SpecFiles(tt.paths)
			if !slices.Equal(files, tt.files) || len(diags) != tt.diags {
				t.Errorf("SpecFiles(%q) = %q, %v; want %q and %d diagnostics", tt.paths, files, diags, tt.files, tt.diags)
			}
			if _, diags := LoadPaths(tt.paths); len(diags) != 0 {
				t.Errorf("LoadPaths(%q) = %v; want no diagnostics", tt.paths, diags)
			}
		})
	}
}

// TestSpecFilesReportsAnUnreadableDirectoryAndGoesOn pins that one
// unreadable directory is a diagnostic at its path while the rest of the
// tree is still walked, so validate still reports every other error.
// Root reads everything, so as root (CI runs as root) the test runs itself
// again as an ordinary user (see runAsNobody).
func TestSpecFilesReportsAnUnreadableDirectoryAndGoesOn(t *testing.T) {
	if os.Geteuid() == 0 {
		runAsNobody(t, "TestSpecFilesReportsAnUnreadableDirectoryAndGoesOn")
		return
	}
	dir := t.TempDir()
	locked := filepath.Join(dir, "a-locked")
	for _, d := range []string{locked, filepath.Join(dir, "b")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(locked, "x.persona.yaml"), filepath.Join(dir, "b", "y.persona.yaml")} {
		if err := os.WriteFile(f, []byte("version: 1\nname: y\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	files, diags := SpecFiles([]string{dir})
	want := []string{filepath.Join(dir, "b", "y.persona.yaml")}
	if !slices.Equal(files, want) || len(diags) != 1 || diags[0].Pos.File != locked ||
		!strings.Contains(diags[0].Message, "permission denied") {
		t.Errorf("SpecFiles = %q, %v; want %q and one permission diagnostic at %s", files, diags, want, locked)
	}
}
