package generation

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/personagen/personagen/gen"
	"github.com/personagen/personagen/spec"
)

// Specs is the number of specs generated per op.
const Specs = 1000

// specText is spec number i: every resolver kind the generator compiles to Go that references
// host code (env loader with a method serializer, a typed `use` with nested with-values, value
// tools and env-method tools whose input schemas are derived, templates), plus thread history
// and a scheduled responsibility.
func specText(i int) []byte {
	return fmt.Appendf(nil, `version: 1
name: agent-%d
description: Agent number %d.
env: github.com/personagen/personagen/examples/host.Env
model: {name: claude-sonnet-4-5, max_tokens: %d, temperature: 0.2}
tools:
  - github.com/personagen/personagen/examples/host.SearchHelpCenter
  - github.com/personagen/personagen/examples/host.WebFetch
  - {method: LookupOrder, idempotent: true}
  - {method: EscalateTicket}
message_resolvers:
  - load_file: {path: "personas/{{ .Persona.Name }}/PERSONA.md"}
  - load_text: {text: "You are {{ .Persona.Name }}; this is about {{ .Inbound.Subject }} from {{ .Inbound.From }}."}
  - load_record: {loader: AccountForSender, serialize: {method: LLMText}}
  - thread_summary: {}
  - thread_history: {limit: %d, include_tool_calls: true}
  - use:
      resolver: github.com/personagen/personagen/examples/host.SupportPolicy
      with:
        first_response: 4h
        languages: [en, de]
        tiers: {business: {refund_limit_eur: %d, phone_support: true}}
responsibility_resolvers:
  - load_text: {text: "Digest for {{ .Responsibility.Name }}"}
responsibilities:
  - {name: digest, schedule: "%d 8 * * *", timezone: Europe/Berlin}
`, i, i, 100+i, 1+i%50, 100+i, i%60)
}

// BenchmarkGeneration measures, for 1,000 specs: "generate", what `personagen generate` does
// through gen.Generate, the generator's one entry point — loading the spec files (YAML, schema,
// checks), loading the host packages with go/packages, checking and emitting the Go files; the
// package-loading part of each op is reported apart as load-ns/op (from gen.Stats); "go_build",
// `go build` of the emitted package with its dependencies cached (each op touches one file, so
// the package itself is compiled again).
func BenchmarkGeneration(b *testing.B) {
	ctx := context.Background()
	out := filepath.Join("testdata", "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(filepath.Join("testdata")) })
	opts := gen.Options{Package: "out", OutDir: out, Root: "."}
	var files []gen.File
	b.Run("generate", func(b *testing.B) {
		b.ReportAllocs()
		var load time.Duration
		for b.Loop() {
			specs := make([]*spec.Persona, Specs)
			for i := range specs {
				p, diags := spec.Load(fmt.Sprintf("specs/agent-%d.persona.yaml", i), specText(i))
				if len(diags) > 0 {
					b.Fatal(diags)
				}
				specs[i] = p
			}
			var st gen.Stats
			var err error
			if files, st, err = gen.Generate(ctx, specs, opts); err != nil {
				b.Fatal(err)
			}
			load += st.Load
		}
		b.ReportMetric(float64(load.Nanoseconds())/float64(b.N), "load-ns/op")
	})
	if len(files) != Specs+1 { // the specs' files and personas.go
		b.Fatalf("emitted %d files", len(files))
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(out, f.Name), f.Content, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	build := func() {
		cmd := exec.Command("go", "build", "./"+filepath.ToSlash(out))
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, msg)
		}
	}
	build() // warm the cache for the dependencies
	b.Run("go_build", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			// A nonce no earlier run used (-count repeats this function): with a content the
			// build cache has seen, `go build` would compile nothing and take a few ms.
			touched := append(append([]byte(nil), files[0].Content...), fmt.Sprintf("\n// build %d\n", time.Now().UnixNano())...)
			if err := os.WriteFile(filepath.Join(out, files[0].Name), touched, 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			build()
		}
	})
}
