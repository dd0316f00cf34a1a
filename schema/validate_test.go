package schema

import (
	"encoding/json"
	"strings"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestValidateReportsEachProblemOnce(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, in string
		want     []string
	}{
		{"valid minimal", `{"version":1,"name":"a"}`, nil},
		{"unknown key with suggestion", `{"version":1,"name":"a","message_resolvers":[{"histroy":{}}]}`,
			[]string{`/message_resolvers/0/histroy unknown: unknown key "histroy"; did you mean "thread_history"?`}},
		{"wrong type reported by walk only", `{"version":"1","name":"a"}`,
			[]string{`/version type: expected an integer, got a string`}},
		{"missing required", `{"version":1}`, []string{`/ invalid: missing required key "name"`}},
		{"pattern uses x-message", `{"version":1,"name":"Bad Name"}`,
			[]string{`/name invalid: must be kebab-case: lower-case letters and digits joined by single hyphens, starting with a letter (support-agent) (got "Bad Name")`}},
		{"too long a kebab-case name says so", `{"version":1,"name":"` + strings.Repeat("a", 65) + `"}`,
			[]string{`/name invalid: must be at most 64 characters (got 65)`}},
		{"too long and not kebab-case: both", `{"version":1,"name":"` + strings.Repeat("A", 65) + `"}`,
			[]string{`/name invalid: must be at most 64 characters (got 65)`,
				`/name invalid: must be kebab-case: lower-case letters and digits joined by single hyphens, starting with a letter (support-agent) (got "` + strings.Repeat("A", 65) + `")`}},
		{"too long an address says so", `{"version":1,"name":"a","mailbox":{"address":"` + strings.Repeat("é", 250) + `@x.io"}}`,
			[]string{`/mailbox/address invalid: must be at most 254 characters (got 255)`}},
		{"enum", `{"version":1,"name":"a","message_resolvers":[{"load_text":{"text":"x","role":"admin"}}]}`,
			[]string{`/message_resolvers/0/load_text/role invalid: must be one of system, user, assistant (got "admin")`}},
		{"two keys in a resolver", `{"version":1,"name":"a","message_resolvers":[{"thread_summary":{},"thread_history":{}}]}`,
			[]string{`/message_resolvers/0 invalid: a resolver entry must have exactly one key: load_file, load_text, load_record, load_transcript, thread_history, thread_summary or use`}},
		{"null limit allowed", `{"version":1,"name":"a","message_resolvers":[{"thread_history":{"limit":null}}]}`, nil},
		{"far unknown key lists keys", `{"version":1,"name":"a","model":{"name":"m","zzzzzzzzzz":1}}`,
			[]string{`/model/zzzzzzzzzz unknown: unknown key "zzzzzzzzzz"; expected one of: extra, max_tokens, name, provider, stop, temperature, top_p`}},
		{"null root names its required keys", `null`,
			[]string{`/ type: expected a mapping, got null; write a mapping with its required keys version, name`}},
		{"null body with a required key names it", `{"version":1,"name":"a","message_resolvers":[{"load_file":null}]}`,
			[]string{`/message_resolvers/0/load_file type: expected a mapping, got null; write a mapping with its required key path`}},
		{"null body without required keys suggests {}", `{"version":1,"name":"a","message_resolvers":[{"thread_summary":null}]}`,
			[]string{`/message_resolvers/0/thread_summary type: expected a mapping, got null; write {} for a mapping with every field at its default`}},
	}
	kinds := map[Kind]string{Invalid: "invalid", UnknownKey: "unknown", WrongType: "type"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, vi := range v.Validate(decode(t, tt.in)) {
				p := pointer(vi.Path)
				if p == "" {
					p = "/"
				}
				got = append(got, p+" "+kinds[vi.Kind]+": "+vi.Message)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestEveryPropertyHasADescription(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	var check func(path string, s map[string]any)
	check = func(path string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		for k, p := range props {
			pm := p.(map[string]any)
			if _, ok := pm["description"].(string); !ok {
				t.Errorf("%s/%s has no description", path, k)
			}
			check(path+"/"+k, pm)
		}
		if s["type"] == "object" && len(props) > 0 && s["additionalProperties"] != false {
			t.Errorf("%s is not closed", path)
		}
	}
	check("#", v.doc)
	for name, d := range v.doc["$defs"].(map[string]any) {
		check("#/$defs/"+name, d.(map[string]any))
	}
}

// TestWrongTypeSaysWhetherTheKeyIsOptional pins Violation.Optional: only a
// key its mapping may omit can be fixed by removing it.
func TestWrongTypeSaysWhetherTheKeyIsOptional(t *testing.T) {
	v, err := New()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, vi := range v.Validate(decode(t, `{"version":null,"name":null,"description":null,"tools":[null],"model":{"name":null,"stop":null}}`)) {
		if vi.Kind == WrongType {
			got[pointer(vi.Path)] = vi.Optional
		}
	}
	want := map[string]bool{"/version": false, "/name": false, "/description": true, "/tools/0": false, "/model/name": false, "/model/stop": true}
	for p, opt := range want {
		if g, ok := got[p]; !ok || g != opt {
			t.Errorf("%s: Optional = %v (reported %v), want %v", p, g, ok, opt)
		}
	}
}
