package spec

import (
	"strings"
	"testing"
)

func TestResolverChangesByWhatTheyRead(t *testing.T) {
	tests := []struct {
		entry string
		want  Changes
	}{
		{"load_file: {path: prompts/system.md}", PerPersona},
		{`load_file: {path: "personas/{{ .Persona.Name }}.md"}`, PerPersona},
		{`load_file: {path: "prompts/{{ .Responsibility.Name }}.md"}`, PerMessage}, // a message chain has no responsibility: refused below
		{`load_text: {text: "Thread {{ .Inbound.ThreadID }}"}`, PerThread},
		{`load_text: {text: "From {{ .Inbound.From }}"}`, PerMessage},
		{`load_text: {text: "Run {{ .CorrelationID }}"}`, PerMessage},
		{"thread_summary: {}", PerThread},
		{"thread_history: {limit: 10}", PerThread},
		{"load_record: {loader: example.com/h.Accounts}", PerMessage},
		{"load_record: {loader: example.com/h.Accounts, changes: per_persona}", PerPersona},
		{"use: {resolver: example.com/h.Policy, changes: per_thread}", PerThread},
		{"use: {resolver: example.com/h.Policy}", PerMessage},
	}
	for _, tt := range tests {
		p, diags := Load("f.persona.yaml", []byte("version: 1\nname: a\nmessage_resolvers:\n  - "+tt.entry+"\n"))
		if strings.Contains(tt.entry, "Responsibility") {
			if len(diags) == 0 {
				t.Errorf("%s: a responsibility field in the message chain was accepted", tt.entry)
			}
			continue
		}
		if len(diags) > 0 {
			t.Fatalf("%s: %v", tt.entry, diags)
		}
		if got := p.MessageResolvers[0].Changes(); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.entry, got, tt.want)
		}
	}
}

func TestCacheWarningsOnePerChainAtTheFirstMisplacedEntry(t *testing.T) {
	src := `version: 1
name: a
message_resolvers:
  - load_text: {text: "From {{ .Inbound.From }}"}
  - load_record: {loader: example.com/h.Accounts}
  - thread_history: {}
  - load_file: {path: prompts/system.md}
responsibility_resolvers:
  - load_record: {loader: example.com/h.Accounts}
  - load_text: {text: "Run {{ .Responsibility.Name }}"}
`
	p, diags := Load("f.persona.yaml", []byte(src))
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	var got []string
	for _, d := range CacheWarnings(p) {
		got = append(got, d.String())
	}
	want := []string{
		"f.persona.yaml:4:5: warning: load_text changes per message but comes before load_file at line 7, which changes per persona: every request differs from here on, so the prompt cache serves nothing after it; move the entry at line 7 before this one, or this one after it",
		"f.persona.yaml:9:5: warning: load_record changes per message but comes before load_text at line 10, which changes per thread: every request differs from here on, so the prompt cache serves nothing after it; move the entry at line 10 before this one, or this one after it, or declare changes: per_thread here if its output is the same for every thread",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	none, _ := Load("f.persona.yaml", []byte(src+"cache: {ttl: none}\n"))
	if ws := CacheWarnings(none); len(ws) != 0 {
		t.Errorf("cache.ttl none: %v", ws)
	}
}

func TestCacheKeysRefuseBadValues(t *testing.T) {
	tests := []struct{ yaml, want string }{
		{"cache: {ttl: 10m}", `f:3:14: cache.ttl: must be one of 5m, 1h, none (got "10m")`},
		{"message_resolvers: [{thread_history: {limit: 5, step: 6}}]", "f:3:55: step 6 is larger than the limit 5: the window's start advances in steps of at most the window's size; use a step from 1 to 5"},
		{"message_resolvers: [{thread_history: {limit: null, step: 2}}]", "f:3:58: step needs a limit: with limit null the whole thread is replayed and there is no window to advance; remove step or set a limit"},
		{"message_resolvers: [{use: {resolver: example.com/h.P, changes: sometimes}}]", `f:3:64: message_resolvers[0].use.changes: must be one of per_persona, per_thread, per_message (got "sometimes")`},
	}
	for _, tt := range tests {
		_, diags := Load("f", []byte("version: 1\nname: a\n"+tt.yaml+"\n"))
		var got []string
		for _, d := range diags {
			got = append(got, d.String())
		}
		if strings.Join(got, "\n") != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.yaml, strings.Join(got, "\n"), tt.want)
		}
	}
}
