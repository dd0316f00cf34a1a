package spec

import (
	"fmt"
	"testing"
)

// BenchmarkLoad1000Specs loads and checks 1,000 distinct specs (schema,
// templates, cron, timezones) and the cross-file collision check, as
// `personagen validate` does for a large repository; files are in memory,
// so disk time is excluded.
func BenchmarkLoad1000Specs(b *testing.B) {
	specs := make([][]byte, 1000)
	for i := range specs {
		specs[i] = []byte(fmt.Sprintf(`version: 1
name: agent-%d
description: Agent number %d.
env: example.com/host/agents.Env
model: {name: m, max_tokens: %d, temperature: 0.2}
tools: [example.com/host/tools.Fetch]
message_resolvers:
  - load_file: {path: prompts/agent-%d.md}
  - load_text: {text: "You are {{ .Persona.Name }}; re {{ .Inbound.Subject }}"}
  - load_record: {loader: Accounts, serialize: {method: LLMText}}
  - thread_summary: {}
  - thread_history: {limit: %d}
  - use: {resolver: example.com/host/agents.Ctx, with: {tier: gold, n: [1, 2, 3]}}
responsibility_resolvers:
  - load_text: {text: "Digest for {{ .Responsibility.Name }}"}
responsibilities:
  - {name: digest, schedule: "%d 8 * * *", timezone: Europe/Berlin}
`, i, i, 100+i, i, 1+i%50, i%60))
	}
	b.ReportAllocs()
	for b.Loop() {
		ps := make([]*Persona, 0, len(specs))
		for i, s := range specs {
			p, diags := Load(fmt.Sprintf("agent-%d.persona.yaml", i), s)
			if len(diags) > 0 {
				b.Fatal(diags)
			}
			ps = append(ps, p)
		}
		if d := CheckCollisions(ps); len(d) > 0 {
			b.Fatal(d)
		}
	}
}
