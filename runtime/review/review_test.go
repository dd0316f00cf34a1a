package review

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

func writeFixture(t *testing.T, body string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), FixtureDir, "helper")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadFixtureReportsEveryProblemAtItsLine(t *testing.T) {
	tests := []struct {
		name, body string
		want       []string
	}{
		{"two kinds", "fire: digest\ntranscript: x.chat\n", []string{":1:1: a fixture has exactly one of mail", ":2:13: cannot read x.chat"}},
		{"unknown key", "fire: digest\nthreads: []\n", []string{`:2:1: unknown key "threads" in the fixture`}},
		{"answer not in mail", "mail: [a.eml]\nanswer: b.eml\n", []string{":1:8: cannot read a.eml", `:2:9: "b.eml" is not one of the fixture's mail files`}},
		{"a call without a name", "fire: d\nrounds:\n  - answers: x.eml\n    calls: [{id: c1, input: '[1]'}]\n", []string{`:3:14: "x.eml" is not one of the fixture's mail files`, ":4:13: a call needs an id and a name", ":4:29: input must be a JSON object"}},
		{"a stub naming both", "fire: d\nstubs: [{load_record: A, use: b.C, text: x}]\n", []string{":2:9: a stub names exactly one of load_record"}},
		{"bad env", "fire: d\nenv: NewEnv\n", []string{`:2:6: env "NewEnv" must be a qualified Go function`}},
		{"bad at", "fire: d\nat: tomorrow\n", []string{`:2:5: at "tomorrow" is not an RFC 3339 time`}},
		{"not a mapping", "- a\n", []string{":1:1: a fixture is a mapping"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFixture(t, tt.body)
			f, problems := LoadFixture(path)
			if f != nil {
				t.Errorf("a fixture with problems was returned")
			}
			var got []string
			for _, p := range problems {
				got = append(got, strings.TrimPrefix(p.Error(), path))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("problems %q\nwant %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("problem %d: %q, want it to start %q", i, got[i], tt.want[i])
				}
			}
		})
	}
}

// FuzzLoadFixture holds that any file either loads or reports problems, never panics.
func FuzzLoadFixture(f *testing.F) {
	for _, s := range []string{"fire: d\n", "mail: [a.eml]\nanswer: a.eml\n", "rounds: [{answers: a, calls: [{id: x, name: y, input: {a: 1}}]}]\n", "stubs: [{use: a.B}]\n", ": :\n", "summary: {through: a}\n"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		path := filepath.Join(dir, FixtureDir, "p", "f.yaml")
		_ = os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Skip()
		}
		fx, problems := LoadFixture(path)
		if (fx == nil) == (len(problems) == 0) {
			t.Errorf("fixture %v with %d problems", fx != nil, len(problems))
		}
	})
}

// TestTranscriptFixtureRendersTheRunnersRequest seeds a transcript fixture and renders its
// request: the history of two turns with the round replayed, the answered question last, the
// plan's line after the persona prefix.
func TestTranscriptFixtureRendersTheRunnersRequest(t *testing.T) {
	ctx := context.Background()
	fx, problems := LoadFixture("testdata/fixtures/helper/transcript.yaml")
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	st, err := store.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	p := &runtime.Persona{Name: "helper", MessageChain: runtime.NewChain(
		runtime.Step{Kind: "load_text", Changes: runtime.PerPersona, Resolver: &runtime.LoadText{Text: "You help with orders."}},
		runtime.Step{Kind: "thread_history", Changes: runtime.PerThread, Resolver: &runtime.ThreadHistory{Source: st}},
	)}
	p.Mailbox.Address = "help@example.com"
	inv, answered, err := Seed(ctx, st, p, fx)
	if err != nil {
		t.Fatal(err)
	}
	req, err := runtime.BuildRequest(ctx, inv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Render(ctx, req, "")
	if err != nil {
		t.Fatal(err)
	}
	want := `system:
You help with orders.

=== cache breakpoint 1 of 2 (default ttl): the persona prefix above ends here, ~9 tokens ===

user:
From: Ada <ada@example.com>
To: help@example.com
Cc:
Date: Mon, 06 Jan 2025 08:01:00 +0000
Subject: Orders

Where is order A-17?

assistant:
function_call: {"name":"lookup","arguments":{"q":"A-17"},"id":"c1"}

function_call_output: {"id":"c1","content":"shipped"}

assistant:
From: help@example.com
To: Ada <ada@example.com>
Cc:
Date: Mon, 06 Jan 2025 08:02:00 +0000
Subject: Orders

It shipped on Monday.

=== cache breakpoint 2 of 2 (default ttl): the thread prefix above ends here, ~`
	if answered != "reply to the last user turn" || !strings.HasPrefix(r.Text, want) || !strings.HasSuffix(r.Text, "user:\nAnd A-18?\n") {
		t.Errorf("answered %q, text:\n%s", answered, r.Text)
	}
	if r.Tokens <= 0 || r.Chars != len([]rune(r.Text)) || len(r.Plan) != 2 {
		t.Errorf("tokens %d, chars %d, plan %q", r.Tokens, r.Chars, r.Plan)
	}
	body, err := WireBody(ctx, req, "anthropic")
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		System []map[string]any `json:"system"`
	}
	if err := json.Unmarshal(body, &b); err != nil || len(b.System) != 1 || b.System[0]["cache_control"] == nil {
		t.Errorf("anthropic body (%v): %s", err, body)
	}
	if _, err := WireBody(ctx, &chat.Request{Messages: req.Messages}, "gemini"); err == nil {
		t.Error("an unknown wire format was accepted")
	}
}
