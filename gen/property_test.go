package gen

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

var (
	propertySpecs = flag.Int("property.specs", 300, "number of random specs TestRandomSpecsCompile generates")
	propertySeed  = flag.Uint64("property.seed", 1, "seed of TestRandomSpecsCompile")
)

const fixtureHost = fixtureModule + "/host"

// specWriter builds the YAML of random valid specs against the fixture
// host. Every string goes through encoding/json, whose output is valid
// YAML 1.2, so arbitrary text (quotes, backslashes, "*/", newlines,
// non-ASCII) reaches the spec loader intact.
type specWriter struct {
	r *rand.Rand
	b strings.Builder
}

func q(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func (w *specWriter) line(format string, args ...any) { fmt.Fprintf(&w.b, format+"\n", args...) }

func (w *specWriter) pick(xs ...string) string { return xs[w.r.IntN(len(xs))] }

// text is random literal text: words, punctuation that matters to Go
// source and comments, non-ASCII, blank and multi-line runs. It never
// holds "{{" (that would start a template action).
func (w *specWriter) text() string {
	pieces := []string{"hello", " ", "world", "\"", "\\", "`", "*/", "/*", "//", "\n", "\t", "ünïcödé", "日本語", "😀", "}", "%d", "$x", "line\r\n", "  "}
	var b strings.Builder
	for range w.r.IntN(6) {
		b.WriteString(pieces[w.r.IntN(len(pieces))])
	}
	return b.String()
}

// template is random text with field references valid in the chain.
func (w *specWriter) template(responsibility bool) string {
	var fields []string
	for _, f := range spec.TemplateFields {
		if f.Scope == spec.ScopeBoth || (f.Scope == spec.ScopeResponsibility) == responsibility && f.Scope != spec.ScopeBoth {
			fields = append(fields, f.Name())
		}
	}
	var b strings.Builder
	for range 1 + w.r.IntN(4) {
		b.WriteString(w.text())
		b.WriteString("{{ " + fields[w.r.IntN(len(fields))] + " }}")
	}
	b.WriteString(w.text())
	return b.String()
}

func (w *specWriter) role() string {
	if w.r.IntN(2) == 0 {
		return ""
	}
	return ", role: " + w.pick("system", "user", "assistant")
}

// withValue is a random valid `with` mapping for host.CustomerContext.
func (w *specWriter) withValue() string {
	fields := []string{
		"tier: " + q(w.text()),
		"Greeting: " + q(w.text()),
		fmt.Sprintf("priority: %d", w.r.IntN(256)-128),
		fmt.Sprintf("weight: %s", w.pick("0", "1.5", "-2.25", "1e3", "7")),
		"verbose: " + w.pick("true", "false"),
		"tags: [" + q(w.text()) + ", " + q(w.text()) + "]",
		fmt.Sprintf("limits: {max_items: %d, window: %s, Labels: [%s]}", w.r.IntN(100), w.pick("90s", "5m", "1h30m", "250ms", "0s"), q(w.text())),
		"backup: " + w.pick("null", "{max_items: 3}", "{}"),
		"extra: {" + q(w.text()) + ": " + q(w.text()) + "}",
		"max_age: " + w.pick("null", "0", "42"),
		"meta: " + w.pick("null", "1", "{a: [1, 2.5, x, true, null]}", q(w.text())),
		"steps: [{max_items: 1}, {Labels: []}]",
	}
	w.r.Shuffle(len(fields), func(i, j int) { fields[i], fields[j] = fields[j], fields[i] })
	return "{" + strings.Join(fields[:w.r.IntN(len(fields)+1)], ", ") + "}"
}

func (w *specWriter) chain(key string, n int, responsibility, env bool) {
	if n == 0 {
		return
	}
	w.line("%s:", key)
	summary, history := false, false
	for range n {
		switch w.r.IntN(10) {
		case 0:
			w.line("  - load_file: {path: %s%s}", q(w.pick("prompts/a.md", "prompts/b.md", "prompts/empty.md")), w.role())
		case 1:
			w.line("  - load_file: {path: %s%s}", q("dyn/"+w.template(responsibility)), w.role())
		case 2:
			if w.r.IntN(2) == 0 {
				w.line("  - load_text: {text: %s%s}", q(w.text()+"x"), w.role())
			} else {
				w.line("  - load_text: {text: %s%s}", q(w.template(responsibility)), w.role())
			}
		case 3:
			loaders := []string{
				"{loader: " + fixtureHost + ".Orders}",
				"{loader: " + fixtureHost + ".Orders, serialize: {func: " + fixtureHost + ".OrderText}}",
				"{loader: " + fixtureHost + ".Orders, serialize: {func: " + fixtureHost + ".OrderLine}}",
				"{loader: " + fixtureHost + ".Notes, serialize: {func: " + fixtureHost + ".NoteText}}",
			}
			if env {
				loaders = append(loaders,
					"{loader: AccountForSender, serialize: {method: LLMText}}",
					"{loader: AccountForSender, serialize: {method: Render}}",
					"{loader: RecentOrders, serialize: {method: Summary}}",
					"{loader: RecentOrders}")
			}
			l := loaders[w.r.IntN(len(loaders))]
			w.line("  - load_record: %s%s}", l[:len(l)-1], w.role())
		case 4:
			if w.r.IntN(2) == 0 {
				w.line("  - load_transcript: {path: prompts/few.chat}")
			} else {
				w.line("  - load_transcript: {path: %s}", q("dyn/"+w.template(responsibility)))
			}
		case 5:
			if !summary && !history {
				summary = true
				w.line("  - thread_summary: {%s}", strings.TrimPrefix(w.role(), ", "))
			}
		case 6:
			if !history {
				history = true
				opts := []string{
					"limit: " + w.pick("null", "1", "50", "1000"),
					"include_tool_calls: " + w.pick("true", "false"),
					fmt.Sprintf("replay_result_limit: %d", 1+w.r.IntN(9999)),
				}
				w.line("  - thread_history: {%s}", strings.Join(opts[:w.r.IntN(4)], ", "))
			}
		case 7:
			w.line("  - use: {resolver: %s.CustomerContext, with: %s}", fixtureHost, w.withValue())
		case 8:
			w.line("  - use: {resolver: %s.ValueResolver, with: {Text: %s}}", fixtureHost, q(w.text()))
		case 9:
			// Aliases, instantiated generics, pointer fields, embedded
			// and dash-named fields, other modules' types.
			w.line("  - %s", w.pick(
				"use: {resolver: "+fixtureHost+".IntPair, with: {First: 1, second: -2}}",
				"use: {resolver: "+fixtureHost+".ContextAlias, with: {tier: "+q(w.text())+", backup: null}}",
				"use: {resolver: "+fixtureHost+".Pointers, with: {any: "+w.pick("null", "1", "{a: [x]}")+", tier: "+q(w.text())+", wait: 2h, twice: 7, labels: ["+q(w.text())+"], tiers: [a, b]}}",
				"use: {resolver: "+fixtureHost+".Embedded, with: {Limits: {max_items: 2, window: 1s}, name: "+q(w.text())+"}}",
				"use: {resolver: "+fixtureHost+".Dashed, with: {\"-\": "+q(w.text())+"}}",
				"use: {resolver: example.com/other/api.Resolver, with: {name: "+q(w.text())+"}}",
				"load_record: {loader: example.com/other/api.Load}",
			))
		}
	}
}

// tools writes a random tools list: value tools (in the string or the
// mapping form) and method and function tools (names from the Go name or
// random valid ones, descriptions from the doc comment or random text),
// with random rules (chains the spec has, approval), in random order.
func (w *specWriter) tools(env, reply, scheduled bool) {
	var entries []string
	if w.r.IntN(2) == 0 {
		entries = append(entries, fixtureHost+".WebFetch", "{value: "+fixtureHost+".SendEmail}")
	}
	derived := []string{
		"{func: " + fixtureHost + ".Compose}",
		"{func: " + fixtureHost + ".Ping, idempotent: " + w.pick("true", "false") + "}",
		"{func: example.com/other/api.Search, name: " + w.pick("search", "find-1", "S_2") + "}",
	}
	if env {
		derived = append(derived,
			"{method: LookupOrder, idempotent: true}",
			"{method: Escalate, name: escalate-x, description: "+q(w.text()+"d")+"}",
			"{method: Cook}",
			"{method: NoDoc, description: "+q("`"+w.text()+"`")+"}")
	}
	w.r.Shuffle(len(derived), func(i, j int) { derived[i], derived[j] = derived[j], derived[i] })
	entries = append(entries, derived[:w.r.IntN(len(derived)+1)]...)
	rules := []string{"", ", approval: required", ", approval: {timeout: 90m, on_timeout: approve, reveal_approver: true}",
		", approval: {on_timeout: deny}"}
	if reply {
		rules = append(rules, ", chains: [reply]", ", chains: [reply, scheduled], approval: {timeout: 2160h}")
	}
	if scheduled {
		rules = append(rules, ", chains: [scheduled]")
	}
	for i, e := range entries {
		if strings.HasPrefix(e, "{") {
			entries[i] = strings.TrimSuffix(e, "}") + w.pick(rules...) + "}"
		}
	}
	w.r.Shuffle(len(entries), func(i, j int) { entries[i], entries[j] = entries[j], entries[i] })
	if len(entries) == 0 {
		return
	}
	w.line("tools:")
	for _, e := range entries {
		w.line("  - %s", e)
	}
}

// spec writes the i-th random spec.
func (w *specWriter) spec(i int) string {
	w.b.Reset()
	words := []string{"support", "agent", "go", "type", "func", "x", "research", "new", "test", "linux", "1a", "map"}
	name := fmt.Sprintf("%s-%d", w.pick(words[:len(words)-2]...), i)
	for range w.r.IntN(3) {
		name += "-" + w.pick(words...)
	}
	env := w.r.IntN(2) == 0
	w.line("version: 1")
	w.line("name: %s", name)
	if w.r.IntN(2) == 0 {
		w.line("description: %s", q(w.text()))
	}
	if env {
		w.line("env: %s.%s", fixtureHost, w.pick("Env", "EnvAlias"))
	}
	if w.r.IntN(2) == 0 {
		w.line("model: {name: %s, max_tokens: %d, temperature: %s, stop: [%s], extra: {k: [1, %s]}}", q(w.text()+"m"), 1+w.r.IntN(10000), w.pick("0", "0.5", "2"), q(w.text()+"s"), q(w.text()))
	}
	replies, fires := w.r.IntN(8), w.r.IntN(8)
	w.tools(env, replies > 0, fires > 0)
	w.chain("message_resolvers", replies, false, env)
	w.chain("responsibility_resolvers", fires, true, env)
	if w.r.IntN(2) == 0 {
		w.line("responsibilities:")
		for j := range 1 + w.r.IntN(3) {
			w.line("  - {name: job-%d, schedule: %s, timezone: %s, enabled: %s}", j, q(w.pick("0 8 * * *", "*/5 * * * *", "@daily")), w.pick("UTC", "Europe/Berlin", "America/New_York"), w.pick("true", "false"))
		}
	}
	return w.b.String()
}

// TestRandomSpecsCompile holds the generator's main property: any valid
// spec whose Go references resolve generates code that compiles. It writes
// -property.specs random valid specs (seeded by -property.seed) against the
// fixture host, generates them all into ONE package, and builds it once
// with `go build` and `go vet`.
func TestRandomSpecsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	mod := scratchModule(t)
	writeFile(t, filepath.Join(mod, "root", "prompts", "a.md"), []byte("Prompt A.\n"))
	writeFile(t, filepath.Join(mod, "root", "prompts", "b.md"), []byte("Prompt */ B.\n"))
	writeFile(t, filepath.Join(mod, "root", "prompts", "empty.md"), nil)
	writeFile(t, filepath.Join(mod, "root", "prompts", "few.chat"), []byte("user: hi\n\nassistant: hello\n"))
	w := &specWriter{r: rand.New(rand.NewPCG(*propertySeed, 0x9e3779b97f4a7c15))}
	for i := range *propertySpecs {
		writeFile(t, filepath.Join(mod, "specs", fmt.Sprintf("s%04d.persona.yaml", i)), []byte(w.spec(i)))
	}
	t.Chdir(mod)
	specs, diags := spec.LoadPaths([]string{"specs"})
	if len(diags) > 0 {
		for _, d := range diags[:min(len(diags), 20)] {
			t.Error(d)
		}
		t.Fatalf("%d diagnostics on generated specs (the spec writer produced invalid specs)", len(diags))
	}
	files, st, err := Generate(context.Background(), specs, Options{Package: "out", OutDir: "out", Root: "root", LineBase: "."})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d specs: loaded %d packages in %v, emitted in %v", len(specs), st.Packages, st.Load, st.Emit)
	for _, f := range files {
		writeFile(t, filepath.Join(mod, "out", f.Name), f.Content)
	}
	if out, err := goCmd(t, mod, "build", "./out"); err != nil {
		t.Fatalf("go build of %d generated files failed:\n%s", len(files), firstLines(out, 40))
	}
	if out, err := goCmd(t, mod, "vet", "./out"); err != nil {
		t.Fatalf("go vet failed:\n%s", firstLines(out, 40))
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
