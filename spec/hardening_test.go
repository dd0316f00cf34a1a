package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestScalarsFollowTheYAML12CoreSchema pins how every plain and tagged
// scalar spelling is read (YAML 1.2.2, 10.3.2), against yaml.v3's own
// YAML 1.1-flavoured resolution.
func TestScalarsFollowTheYAML12CoreSchema(t *testing.T) {
	tests := []struct {
		yaml string
		kind ValueKind
		str  string // Value.Str, or the error's start
		err  bool
	}{
		{"12", ValueInt, "12", false},
		{"+12", ValueInt, "12", false},
		{"-9223372036854775808", ValueInt, "-9223372036854775808", false},
		{"9223372036854775807", ValueInt, "9223372036854775807", false},
		{"0o17", ValueInt, "15", false},
		{"0x1F", ValueInt, "31", false},
		{"0", ValueInt, "0", false},
		{"-0", ValueInt, "0", false},
		{"1.5", ValueFloat, "1.5", false},
		{"1.", ValueFloat, "1", false},
		{".5", ValueFloat, "0.5", false},
		{"-1e3", ValueFloat, "-1e3", false},
		{"01.5", ValueFloat, "1.5", false},
		{"0e-99999999", ValueFloat, "0", false},
		{"-0.0", ValueFloat, "-0", false},
		{"1.00000000000000000000000000000000000001", ValueFloat, "1", false},
		{"4.9e-324", ValueFloat, "4.9e-324", false},
		{"1e-1000100", 0, "number 1e-1000100 is too small for 64-bit floating point", true},
		{"2.4e-324", 0, "is too small for 64-bit floating point", true},
		{"true", ValueBool, "true", false},
		{"TRUE", ValueBool, "TRUE", false},
		{"False", ValueBool, "False", false},
		{"~", ValueNull, "", false},
		{"Null", ValueNull, "", false},
		{"", ValueNull, "", false},
		// Strings in YAML 1.2, numbers or booleans in 1.1.
		{"yes", ValueString, "yes", false},
		{"1_000", ValueString, "1_000", false},
		{"0b101", ValueString, "0b101", false},
		{"0X1F", ValueString, "0X1F", false},
		{"-0x1", ValueString, "-0x1", false},
		{"+0o7", ValueString, "+0o7", false},
		{"12:30", ValueString, "12:30", false},
		{"2024-01-02", ValueString, "2024-01-02", false},
		{".NAn", ValueString, ".NAn", false},
		{"<<", ValueString, "<<", false},
		{"! 12", ValueString, "12", false},
		{"&a ! 12", ValueString, "12", false},
		{`"12"`, ValueString, "12", false},
		{"!!str 12", ValueString, "12", false},
		{"!!int \"12\"", ValueInt, "12", false},
		{"!!float 1", ValueFloat, "1", false},
		{"!!bool true", ValueBool, "true", false},
		{"!!null", ValueNull, "", false},
		// Errors.
		{"010", 0, "010 has a leading zero", true},
		{"-010", 0, "-010 has a leading zero", true},
		{"00", 0, "00 has a leading zero", true},
		{"9223372036854775808", 0, "integer 9223372036854775808 is out of range", true},
		{"0xFFFFFFFFFFFFFFFF", 0, "integer 0xFFFFFFFFFFFFFFFF is out of range", true},
		{"1e400", 0, "number 1e400 is out of range", true},
		{".inf", 0, ".inf is not a number JSON can hold", true},
		{"-.Inf", 0, "-.Inf is not a number JSON can hold", true},
		{".nan", 0, ".nan is not a number JSON can hold", true},
		{"!!bool yes", 0, "!!bool yes is not a boolean", true},
		{"!!int fifty", 0, "!!int fifty is not an integer", true},
		{"!!int 010", 0, "010 has a leading zero", true},
		{"!!float x", 0, "!!float x is not a number", true},
		{"!!null x", 0, "!!null x is not null", true},
		{"!!timestamp 2024-01-02", 0, "YAML tag !!timestamp is not supported", true},
		{"!!binary aGk=", 0, "YAML tag !!binary is not supported", true},
		{"!env X", 0, "YAML tag !env is not supported", true},
		{"!!map x", 0, "YAML tag !!map is for mappings", true},
		{"!custom {a: 1}", ValueMap, "YAML tag !custom is not supported on a mapping", true},
		{"!!set {a}", ValueMap, "YAML tag !!set is not supported on a mapping", true},
		{"!!str [a]", ValueList, "YAML tag !!str is not supported on a list", true},
	}
	for _, tt := range tests {
		src := "version: 1\nname: a\nmessage_resolvers: [{use: {resolver: example.com/h.R, with: {v: " + tt.yaml + " }}}]\n"
		p, diags := Load("f", []byte(src))
		if tt.err {
			if len(diags) == 0 || !strings.Contains(diags[0].Message, tt.str) || diags[0].Pos.Line != 3 {
				t.Errorf("%s: diagnostics %v, want one on line 3 containing %q", tt.yaml, diags, tt.str)
			}
			continue
		}
		if len(diags) > 0 {
			t.Errorf("%s: unexpected diagnostics %v", tt.yaml, diags)
			continue
		}
		v := p.MessageResolvers[0].Use.With.Map[0].Value
		if v.Kind != tt.kind || v.Str != tt.str && tt.kind != ValueBool {
			t.Errorf("%s: kind %d str %q, want kind %d str %q", tt.yaml, v.Kind, v.Str, tt.kind, tt.str)
		}
	}
}

// TestTypeErrorsNameTheirKey pins that a value of the wrong type is named by
// its key whatever made it wrong: an explicit tag (!!bool yes), a spelling
// the core schema reads as another type, a tag that is not supported on a
// scalar, a mapping or a list, or a key that is not a string (named by its
// mapping's key). Each tagged form says what the untagged one says first.
func TestTypeErrorsNameTheirKey(t *testing.T) {
	const tags = "(only the YAML 1.2 core schema's !!str, !!int, !!float, !!bool, !!null, !!map and !!seq are; remove the tag)"
	tests := []struct{ yaml, want string }{
		// The findings: with a tag, these did not name their key.
		{`responsibilities: [{name: d, schedule: "0 8 * * *", enabled: !!bool yes}]`,
			"f:3:62: responsibilities[0].enabled: !!bool yes is not a boolean; YAML 1.2 booleans are true and false"},
		{`responsibilities: [{name: d, schedule: "0 8 * * *", enabled: yes}]`,
			"f:3:62: responsibilities[0].enabled: yes is a YAML 1.1 boolean, read as a string; use true or false"},
		{"message_resolvers: [{thread_history: {limit: !!int fifty}}]",
			"f:3:46: message_resolvers[0].thread_history.limit: !!int fifty is not an integer (YAML 1.2 writes 12, 0o14 or 0xC)"},
		{"message_resolvers: [{thread_history: {limit: fifty}}]",
			"f:3:46: message_resolvers[0].thread_history.limit: expected an integer or null, got a string"},
		// Every other tag.
		{"model: {name: m, temperature: !!float warm}",
			"f:3:31: model.temperature: !!float warm is not a number (YAML 1.2 writes 1.5, -2e3 or .5)"},
		{"model: {name: m, temperature: warm}",
			"f:3:31: model.temperature: expected a number, got a string"},
		{"model: {name: m, max_tokens: !!null none}",
			"f:3:30: model.max_tokens: !!null none is not null; a null is written ~, null or nothing"},
		{"model: {name: m, max_tokens: !!str 12}",
			"f:3:30: model.max_tokens: expected an integer, got a string"},
		{"model: {name: m, max_tokens: ! 12}",
			"f:3:30: model.max_tokens: expected an integer, got a string"},
		{"model: {name: m, max_tokens: !<tag:yaml.org,2002:int> fifty}",
			"f:3:30: model.max_tokens: !!int fifty is not an integer (YAML 1.2 writes 12, 0o14 or 0xC)"},
		{"model: {name: !!map x}", "f:3:15: model.name: YAML tag !!map is for mappings, not a single value"},
		{"model: {name: !!seq x}", "f:3:15: model.name: YAML tag !!seq is for lists, not a single value"},
		{"description: !env X", "f:3:14: description: YAML tag !env is not supported " + tags},
		{"description: !!binary aGk=", "f:3:14: description: YAML tag !!binary is not supported " + tags},
		{"description: !!timestamp 2024-01-02", "f:3:14: description: YAML tag !!timestamp is not supported " + tags},
		{"model: !!str {name: m}", "f:3:8: model: YAML tag !!str is not supported on a mapping " + tags},
		{"message_resolvers: !!map [{thread_history: {}}]", "f:3:20: message_resolvers: YAML tag !!map is not supported on a list " + tags},
		{"message_resolvers: [{use: {resolver: example.com/h.R, with: {v: !!bool yes, w: [1, !!int x]}}}]",
			"f:3:65: message_resolvers[0].use.with.v: !!bool yes is not a boolean; YAML 1.2 booleans are true and false\n" +
				"f:3:84: message_resolvers[0].use.with.w[1]: !!int x is not an integer (YAML 1.2 writes 12, 0o14 or 0xC)"},
		{"x: &a !!int fifty\nmodel: {name: m, max_tokens: *a}",
			`f:3:1: unknown key "x"; expected one of: cache, description, env, mailbox, message_resolvers, model, name, responsibilities, responsibility_resolvers, tools, version` + "\n" +
				"f:3:4: x: !!int fifty is not an integer (YAML 1.2 writes 12, 0o14 or 0xC)"},
		// Values the core schema reads as a type they cannot be.
		{"model: {name: m, max_tokens: 99999999999999999999}",
			"f:3:30: model.max_tokens: integer 99999999999999999999 is out of range (64-bit signed: -9223372036854775808 to 9223372036854775807)"},
		{"description: !!float 1e400", "f:3:14: description: number 1e400 is out of range (64-bit floating point)"},
		{"model: {name: m, temperature: .nan}", "f:3:31: model.temperature: .nan is not a number JSON can hold (NaN and infinities are not allowed)"},
		{"model: {name: m, max_tokens: 010}",
			"f:3:30: model.max_tokens: 010 has a leading zero, which YAML 1.1 reads as octal 8 and YAML 1.2 as decimal 10; write 10, 0o10 for octal, or quote it for a string"},
		// Keys that are not strings, named by their mapping's key.
		{"model: {name: m, 1: x}", "f:3:18: model: mapping keys must be strings; 1 is an integer (quote it)"},
		{"model: {name: m, [a]: x}", "f:3:18: model: mapping keys must be strings, not a list"},
		{"model: {name: m, <<: {a: 1}}", "f:3:18: model: merge keys (<<) are not supported; write the keys out"},
		{"!!int 12: x", "f:3:1: mapping keys must be strings; 12 is an integer (quote it)"},
	}
	for _, tt := range tests {
		_, diags := Load("f", []byte("version: 1\nname: a\n"+tt.yaml+"\n"))
		var got []string
		for _, d := range diags {
			got = append(got, d.String())
		}
		if strings.Join(got, "\n") != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.yaml, strings.Join(got, "\n     "), strings.ReplaceAll(tt.want, "\n", "\n     "))
		}
	}
}

// TestMappingKeysFollowTheCoreSchema pins that only string keys are keys:
// numbers, booleans and nulls by the core schema are refused, dates and
// YAML 1.1 booleans are strings.
func TestMappingKeysFollowTheCoreSchema(t *testing.T) {
	for key, ok := range map[string]bool{
		"1": false, "true": false, "~": false, "0x1": false, "1.5": false,
		"2024-01-02": true, "yes": true, "1_000": true, `"1"`: true, "!!str 1": true,
	} {
		_, diags := Load("f", []byte("version: 1\nname: a\nmodel: {name: m, extra: {"+key+": 1}}\n"))
		if ok != (len(diags) == 0) {
			t.Errorf("key %s: diagnostics %v, want accepted=%v", key, diags, ok)
		}
	}
}

func TestCheckTextNamesEncodingAndCharacters(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a: 1\n", ""},
		{"\xef\xbb\xbfa: 1\n", ""},
		{"a: \"\t\"\r\nb: 2\rc: 3\n", ""},
		{"a: é\n", ""},
		{"\xff\xfea\x00", "f:1:1: the file is UTF-16"},
		{"\xfe\xff\x00a", "f:1:1: the file is UTF-16"},
		{"\x00\x00\xfe\xff", "f:1:1: the file is UTF-32"},
		{"a: 1\nb: 2\nc: 3\n# caf\xe9\n", "f:4:6: the file is not UTF-8: byte 0xE9"},
		{"a: \xc3\n", "f:1:4: the file is not UTF-8: byte 0xC3"},
		{"a: \xed\xa0\x80\n", "f:1:4: the file is not UTF-8: byte 0xED"}, // an encoded surrogate
		{"a: x\x00\n", "f:1:5: U+0000 is a control character"},
		{"a: 1\r\nb: \x07\n", "f:2:4: U+0007 is a control character"},
		{"a: \x7f\n", "f:1:4: U+007F is a control character"},
		{"a: \u0085\n", "f:1:4: U+0085 is a line break to YAML 1.1 parsers"},
		{"a: 日本\u2028\n", "f:1:6: U+2028 LINE SEPARATOR is a line break"},
		{"a: \u2029\n", "f:1:4: U+2029 PARAGRAPH SEPARATOR is a line break"},
		{"a: \uffff\n", "f:1:4: U+FFFF is not a character"},
	}
	for _, tt := range tests {
		diags := checkText("f", []byte(tt.in))
		got := ""
		if len(diags) > 0 {
			got = diags[0].String()
		}
		if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
			t.Errorf("checkText(%q) = %q, want prefix %q", tt.in, got, tt.want)
		}
	}
	if n := len(checkText("f", []byte(strings.Repeat("\x01", 1000)))); n != maxTextDiagnostics {
		t.Errorf("1000 control characters gave %d diagnostics, want %d", n, maxTextDiagnostics)
	}
}

func TestPathProblemRefusesPathsThatCanNeverBeRead(t *testing.T) {
	tests := []struct {
		path string
		want string
	}{
		{"prompts/a.md", ""},
		{"/etc/prompts/a.md", ""},
		{"prompts/../a.md", ""},
		{"./a.md", ""},
		{"{{ .Persona.Name }}.md", ""},
		{"..{{ .Persona.Name }}.md", ""},
		{"{{ .Persona.Name }}/../../a.md", ""},
		{"a/{{ .Persona.Name }}/../../../x", ""},
		{"../a.md", "leaves the prompt root"},
		{"a/../../b.md", "leaves the prompt root"},
		{"..", "leaves the prompt root"},
		{"a\x00b", "holds U+0000"},
		{"/{{ .Persona.Name }}.md", "must be relative"},
		{"../{{ .Persona.Name }}.md", "always leaves the prompt root"},
		{"./../{{ .Persona.Name }}", "always leaves the prompt root"},
		{"a/../../{{ .Persona.Name }}", "always leaves the prompt root"},
		{"a/b/../../../{{ .Persona.Name }}", "always leaves the prompt root"},
	}
	for _, tt := range tests {
		tpl, errs := ParseTemplate(tt.path, Pos{}, ColumnsAtStart)
		if len(errs) > 0 {
			t.Fatalf("%q: %v", tt.path, errs)
		}
		got := pathProblem(tpl)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("pathProblem(%q) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

func TestCheckGoRefFollowsGoImportPathRules(t *testing.T) {
	tests := []struct{ in, want string }{
		{"github.com/acme/app/agents.Env", ""},
		{"gopkg.in/yaml.v3.Node", ""},
		{"example.com/a+b/c~d.X", ""},
		{"Env", ""},
		{"github.com/acme/app./agents.Env", "trailing dot in path element"},
		{"-x.com/a.B", "leading dash"},
		{"x.com//a.B", "double slash"},
		{"x.com/a/.B", "trailing slash"},
		{"x.com/../a.B", `invalid path element ".."`},
		{"x.com/aux/a.B", `"aux" disallowed as path element component on Windows`},
		{"x.com/abc~12/a.B", "trailing tilde and digits"},
		{"x.com/a b.C", "invalid char ' '"},
		{"x.com/ä.C", "invalid char 'ä'"},
		{"x.com/a.b", `"b" is not an exported Go name`},
		{"x.com/a.", "the name after the last dot is missing"},
		{"x.com/a.Bé", `"Bé" is not an exported Go name`},
	}
	for _, tt := range tests {
		_, err := CheckGoRef(tt.in)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("CheckGoRef(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if _, ok := ParseGoRef(tt.in); ok != (tt.want == "") {
			t.Errorf("ParseGoRef(%q) ok = %v", tt.in, ok)
		}
	}
}

func TestCheckScheduleMatchesWhatRobfigRuns(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0 8 * * *", ""},
		{"@daily", ""},
		{"@every 90s", ""},
		{"@every 1h30m", ""},
		{"@every 1500ms", "must be whole seconds (got 1.5s; robfig/cron would drop the 500ms and run every 1s)"},
		{"@every 1m0.001s", "must be whole seconds"},
		{"@every 999ms", "must be at least 1s"},
		{" CRON_TZ=UTC 0 8 * * *", "sets a timezone"},
		{"cron_tz=UTC 0 8 * * *", "sets a timezone"},
		{"TZ=UTC 0 8 * * *", "sets a timezone"},
		{"0 8 31 2 *", "never fires"},
		{"0 8 * * * *", "not a valid 5-field cron expression"},
	}
	for _, tt := range tests {
		got := checkSchedule(tt.in)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("checkSchedule(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestAliasedValuesArePlacedAtTheAlias pins that a value reused through an
// alias carries the alias's position (where it is used), so its errors and
// the generator's line directives point there, and that an error inside it
// names the anchor.
func TestAliasedValuesArePlacedAtTheAlias(t *testing.T) {
	src := "version: 1\nname: a\nmodel: {name: m, extra: {t: &t {text: hi, role: user}}}\nmessage_resolvers:\n  - load_text: *t\n"
	p := mustLoad(t, src)
	lt := p.MessageResolvers[0].LoadText
	want := Pos{"x.persona.yaml", 5, 16}
	if lt.Pos != want || lt.Text.Raw.Pos != want || lt.Role.Pos != want {
		t.Errorf("aliased load_text at %v, text %v, role %v; want all at %v", lt.Pos, lt.Text.Raw.Pos, lt.Role.Pos, want)
	}
	if ex := p.Model.Extra[0].Value; ex.Pos != (Pos{"x.persona.yaml", 3, 29}) {
		t.Errorf("anchor stays at %v", ex.Pos)
	}
	_, diags := Load("f", []byte("version: 1\nname: a\nmodel: {name: m, extra: {t: &t {text: hi, role: bogus}}}\nmessage_resolvers:\n  - load_text: *t\n"))
	if len(diags) != 1 || diags[0].String() != `f:5:16: message_resolvers[0].load_text.role: must be one of system, user, assistant (got "bogus") (in the value of alias *t, anchored at line 3:29)` {
		t.Errorf("diagnostics %v", diags)
	}
}

func TestGoFileNameCollisionsAreReported(t *testing.T) {
	for name, want := range map[string]string{
		"support-agent": "support_agent.go", "bot-test": "bot_test_persona.go", "bot-linux": "bot_linux_persona.go",
		"bot-test-persona": "bot_test_persona.go", "test": "test.go", "a-b-arm64": "a_b_arm64_persona.go",
	} {
		if got := GoFileName(name); got != want {
			t.Errorf("GoFileName(%q) = %q, want %q", name, got, want)
		}
	}
	a := mustLoad(t, "version: 1\nname: bot-test\n")
	b := mustLoad(t, "version: 1\nname: bot-test-persona\n")
	b.Name.Pos.File = "y.persona.yaml"
	diags := CheckCollisions([]*Persona{a, b})
	if len(diags) != 2 || !strings.Contains(diags[0].Message, "bot_test_persona.go") || diags[0].Pos.File == diags[1].Pos.File {
		t.Errorf("collisions = %v", diags)
	}
}

func TestReadFileReadsAtMostTheLimit(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err == nil {
		_, diags := ReadFile("/dev/zero")
		if len(diags) != 1 || diags[0].String() != "/dev/zero:1:1: spec file is larger than 1048576 bytes (1 MiB)" {
			t.Errorf("ReadFile(/dev/zero) = %v", diags)
		}
	}
	data, err := readSpec(writeTemp(t, "big.persona.yaml", strings.Repeat("x", 3*MaxFileSize)), false)
	if err != nil || len(data) != MaxFileSize+1 {
		t.Errorf("readSpec read %d bytes (%v), want %d", len(data), err, MaxFileSize+1)
	}
	exact := strings.Repeat("#", MaxFileSize-len("version: 1\nname: a\n")) + "\nversion: 1\nname: a"
	if _, diags := ReadFile(writeTemp(t, "exact.persona.yaml", exact[:MaxFileSize])); len(diags) != 0 && strings.Contains(diags[0].Message, "larger") {
		t.Errorf("a file of exactly MaxFileSize bytes is refused: %v", diags)
	}
}

func writeTemp(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWalkSkipsJunkAndCountsHardLinksOnce pins file selection in walked
// directories: editor and OS leftovers (names starting with . or _) are
// not specs, and a hard link to a spec is the same spec.
func TestWalkSkipsJunkAndCountsHardLinksOnce(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"a.persona.yaml":      "version: 1\nname: a\n",
		".#a.persona.yaml":    "broken: [",
		"._a.persona.yaml":    "\x00\x05\x16\x07",
		".a.persona.yaml.swp": "x",
		"_draft.persona.yaml": "broken: [",
		"a.persona.yaml~":     "broken: [",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Link(filepath.Join(dir, "a.persona.yaml"), filepath.Join(dir, "b.persona.yaml")); err != nil {
		t.Skipf("hard links unavailable: %v", err)
	}
	files, diags := SpecFiles([]string{dir, filepath.Join(dir, "b.persona.yaml")})
	if want := []string{filepath.Join(dir, "a.persona.yaml")}; !slices.Equal(files, want) || len(diags) != 0 {
		t.Errorf("SpecFiles = %q, %v; want %q", files, diags, want)
	}
	if ps, diags := LoadPaths([]string{dir}); len(ps) != 1 || len(diags) != 0 {
		t.Errorf("LoadPaths = %d personas, %v; want one, no collision with itself", len(ps), diags)
	}
	// Named explicitly, a junk name is read: the user asked for it.
	if files, _ := SpecFiles([]string{filepath.Join(dir, "_draft.persona.yaml")}); len(files) != 1 {
		t.Errorf("explicit _draft.persona.yaml not taken: %q", files)
	}
}

func TestSpecFilesRefusesStandardInput(t *testing.T) {
	files, diags := SpecFiles([]string{"-"})
	if len(files) != 0 || len(diags) != 1 || diags[0].Pos.File != "-" || !strings.Contains(diags[0].Message, "standard input") {
		t.Errorf("SpecFiles(-) = %q, %v", files, diags)
	}
}
