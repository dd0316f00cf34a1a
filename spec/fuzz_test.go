package spec

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadHostileInputsFinishFast pins Load's bounds on inputs too large
// to use as fuzz seeds (the fuzzer would spend its time minimizing them).
func TestLoadHostileInputsFinishFast(t *testing.T) {
	inputs := map[string]string{
		"deep flow nesting":    "version: 1\nname: a\nmodel: {name: m, extra: {x: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "}}\n",
		"deep block nesting":   strings.Repeat("- ", 3000) + "x\n",
		"unbalanced brackets":  strings.Repeat("[", 20000),
		"long flat list":       "version: 1\nname: a\ntools: [" + strings.Repeat("example.com/a.B, ", 20000) + "]\n",
		"wide alias expansion": "a: &a [" + strings.Repeat("x, ", 1000) + "]\nb: [" + strings.Repeat("*a, ", 1000) + "]\n",
	}
	for name, in := range inputs {
		start := time.Now()
		p, diags := Load("f", []byte(in))
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: Load took %v", name, d)
		}
		if p != nil || len(diags) == 0 {
			t.Errorf("%s: want diagnostics, got persona %v", name, p != nil)
		}
	}
}

// FuzzLoad holds that no input makes Load panic or hang, and that Load
// returns either a persona or diagnostics, every one positioned in the
// file. Seeds: the valid specs, the CLI's invalid corpus, and hostile
// inputs (alias bombs, deep nesting, huge numbers).
func FuzzLoad(f *testing.F) {
	seeds := []string{
		"version: 1\nname: a\n",
		"a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
		"version: 1\nname: a\nmodel: {name: m, extra: {x: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}\n",
		"version: 1e999999\nname: a\nmodel: {name: m, max_tokens: 123456789012345678901234567890, temperature: -1e-400}\n",
		"version: 0x7fffffffffffffff\nname: a\n",
		"version: 1\nname: a\nmessage_resolvers: [{load_text: {text: \"{{{{{{ .Persona.Name }}}}}}\"}}]\n",
		"&a a: *a\n",
		"a: &a {b: *a}\n",
		"\xff\xfe\x00\x00",
		"version: 1\nname: a\n---\n---\n",
		"? [a, b]\n: c\n",
		"version: !!binary aGk=\nname: !!str 1\n",
		"%YAML 1.2\n---\nversion: 010\nname: ! 12\nmodel: !!map {name: !!str x, max_tokens: !!int 0x10}\n",
		"\xef\xbb\xbfversion: 1\r\nname: a\rdescription: \"\\ud83d\\ude00 \\x00\"\n",
		"version: 1\nname: a\nmodel: &m {name: m, bogus: 1}\nx: *m\ny: *nope\n",
		"version: 1\nname: a\ndescription: caf\xe9\u2028\x07\n",
		"version: 1\nname: a\nmessage_resolvers: [{load_file: {path: \"../{{ .Persona.Name }}/{{.Inbound.From}}\"}}]\n",
		"version: 1\nname: a\nresponsibilities: [{name: d, schedule: \" CRON_TZ=X @every 1500ms\", timezone: right/UTC}]\n",
		"version: 1\nname: a: b\n`x`: @y\n",
		"version: 1\nname: a\ncache: {ttl: 1h}\nmessage_resolvers: [{use: {resolver: x.y/z.R, changes: per_thread}}, {thread_history: {limit: 3, step: 4}}, {load_record: {loader: x.y/z.L, changes: per_persona}}]\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, glob := range []string{"testdata/valid/*.persona.yaml", "../cmd/personagen/testdata/validate/*/*.persona.y*ml"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		start := time.Now()
		p, diags := Load("f.persona.yaml", data)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("Load took %v", d)
		}
		if (p == nil) == (len(diags) == 0) {
			t.Fatalf("Load returned persona %v with %d diagnostics", p != nil, len(diags))
		}
		lines := len(newSource(data).lines)
		for i, d := range diags {
			if d.Pos.File != "f.persona.yaml" || d.Pos.Line < 1 || d.Pos.Col < 1 || d.Message == "" {
				t.Fatalf("diagnostic without position or message: %+v", d)
			}
			if d.Pos.Line > lines+1 {
				t.Fatalf("diagnostic past the end of the file (%d lines): %v", lines, d)
			}
			if strings.HasPrefix(d.Message, "YAML parser failed") {
				t.Fatalf("the parser panicked: %v", d)
			}
			if i > 0 && d.Pos.Before(diags[i-1].Pos) {
				t.Fatalf("diagnostics not sorted: %v before %v", diags[i-1], d)
			}
		}
		// Load is deterministic: the same input gives the same answer.
		p2, diags2 := Load("f.persona.yaml", data)
		if (p2 == nil) != (p == nil) || !slices.Equal(diags, diags2) {
			t.Fatalf("second Load differs: %v vs %v", diags, diags2)
		}
		if p != nil && p.Name.Value == "" {
			t.Fatalf("accepted persona without a name")
		}
	})
}
