package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/personagen/personagen/internal/golden"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// TestDemoRunsTheThreeRuns runs the demo on the in-memory SQLite store with the
// scripted model and compares its output, transcript and JSON, with the golden
// files: the example .eml files as mail.Ingest stored them, the generated
// pipelines, the store's replay (summary, HTML-only message, tool rounds,
// attachment), the PDF as a document part, the tools executed against the
// host's data, the stored replies and their renderings as the outbox sent
// them, the follow-up .eml replaying the first run's rounds, and the digest
// through the scheduler with its status trail.
func TestDemoRunsTheThreeRuns(t *testing.T) {
	for _, tc := range []struct {
		name   string
		asJSON bool
	}{{"transcript", false}, {"json", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), config{json: tc.asJSON}, &out); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tc.name+".golden"), out.Bytes())
		})
	}
}

// TestDemoOnMySQLMatchesSQLite runs the demo against MariaDB (twice, so the
// reseeding of a reused database is covered) and expects the very output
// of the SQLite run. It skips when no server answers, except under CI=true.
func TestDemoOnMySQLMatchesSQLite(t *testing.T) {
	dsn := storetest.MySQL(t)
	var want bytes.Buffer
	if err := run(context.Background(), config{}, &want); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var got bytes.Buffer
		if err := run(context.Background(), config{dsn: dsn}, &got); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		g := strings.Replace(got.String(), "(mysql store)", "(sqlite store)", 1)
		if g != want.String() {
			t.Errorf("run %d on MySQL differs from SQLite:\n%s", i+1, g)
		}
	}
}

// TestDemoRunsThroughTheRealSDKs runs the demo with -model for each provider
// against a local server that answers every call with a text: the runs go
// through the real SDK clients, configured by their standard environment
// variables, with the persona's tools in each request.
func TestDemoRunsThroughTheRealSDKs(t *testing.T) {
	for _, tc := range []struct {
		model, path, key, url, body string
	}{
		{"anthropic", "/v1/messages", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL",
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Answered by the server."}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`},
		{"openai", "/v1/chat/completions", "OPENAI_API_KEY", "OPENAI_BASE_URL",
			`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"Answered by the server."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`},
		{"openai-responses", "/v1/responses", "OPENAI_API_KEY", "OPENAI_BASE_URL",
			`{"id":"resp_1","object":"response","created_at":1,"model":"gpt-test","status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Answered by the server.","annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}}`},
	} {
		t.Run(tc.model, func(t *testing.T) {
			var mu sync.Mutex
			var bodies []map[string]any
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var body map[string]any
				if r.URL.Path != tc.path || json.NewDecoder(r.Body).Decode(&body) != nil {
					http.Error(w, "unexpected request "+r.URL.Path, http.StatusBadRequest)
					return
				}
				mu.Lock()
				bodies = append(bodies, body)
				mu.Unlock()
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			base := srv.URL
			if tc.model != "anthropic" {
				base += "/v1"
			}
			t.Setenv(tc.key, "test-key")
			t.Setenv(tc.url, base)
			var out bytes.Buffer
			if err := run(context.Background(), config{model: tc.model, modelName: "test-model"}, &out); err != nil {
				t.Fatal(err)
			}
			// Three answers, the first reply again in the second run's history, and the two replies
			// as the outbox rendered them.
			if n := strings.Count(out.String(), "Answered by the server."); n != 6 {
				t.Errorf("the output holds %d answers, want 6:\n%s", n, out.String())
			}
			if len(bodies) != 3 {
				t.Fatalf("%d requests, want 3", len(bodies))
			}
			for _, b := range bodies {
				if b["model"] != "test-model" || b["tools"] == nil {
					t.Errorf("request model %v, tools %v", b["model"], b["tools"] != nil)
				}
			}
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

// TestFakeAPIBillsTheCache runs the demo with -fake: every call goes through the real Anthropic
// adapter to the cache-honest fake, whose bill the usage lines show. The support agent's runs
// read their persona prefix and history from the cache; the digest's prefix is below Claude
// Sonnet's 1,024-token minimum and caches nothing.
func TestFakeAPIBillsTheCache(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), config{fake: true}, &out); err != nil {
		t.Fatal(err)
	}
	var usage []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "# usage: ") {
			usage = append(usage, l)
		}
	}
	want := []string{
		"# usage: 11007 input tokens (7093 from the cache), 267 output tokens; stop reason end_turn",
		"# usage: 3003 input tokens (1690 from the cache), 73 output tokens; stop reason end_turn",
		"# usage: 2383 input tokens (0 from the cache), 226 output tokens; stop reason end_turn",
	}
	if strings.Join(usage, "\n") != strings.Join(want, "\n") {
		t.Errorf("usage lines:\n%s\nwant\n%s", strings.Join(usage, "\n"), strings.Join(want, "\n"))
	}
}
