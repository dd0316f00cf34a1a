package docs

import (
	"reflect"
	"testing"
)

func TestSlugIsGitHubsHeadingAnchor(t *testing.T) {
	for _, tc := range []struct{ heading, want string }{
		{"Quick start", "quick-start"},
		{"The demo: -eml", "the-demo--eml"},
		{"Ingesting: mail.Ingest", "ingesting-mailingest"},
		{"thread_summary and compaction", "thread_summary-and-compaction"},
		{"Running a persona (runtime/agent)", "running-a-persona-runtimeagent"},
		{"Appends to one thread: in order, one at a time", "appends-to-one-thread-in-order-one-at-a-time"},
		{"Tools: schemas derived from Go types", "tools-schemas-derived-from-go-types"},
		{"[The spec](spec.md) — v1", "the-spec--v1"},
		{"Zeitzonen und Sommerzeit: März", "zeitzonen-und-sommerzeit-märz"},
	} {
		if got := Slug(tc.heading); got != tc.want {
			t.Errorf("Slug(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

func TestAnchorsNumberRepeatedHeadingsAndSkipCode(t *testing.T) {
	md := "# Title\n\n## `tools`\n\n```sh\n# not a heading\n```\n\n## Tools\n\n### Tools\n\n<!--\n## hidden\n-->\n"
	got := Anchors(md)
	want := map[string]bool{"title": true, "tools": true, "tools-1": true, "tools-2": true}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors = %v, want %v", got, want)
	}
}

func TestBlocksReadInfoStringsAndIndentedFences(t *testing.T) {
	md := "text\n\n```go file=main.go\npackage main\n```\n\n- item:\n\n  ~~~text output\n  a\n    b\n  ~~~\n\n````\n```\n````\n\n```sh tour\nunclosed\n"
	got := Blocks(md)
	want := []Block{
		{Lang: "go", Attrs: map[string]string{"file": "main.go"}, Text: "package main\n", Line: 3},
		{Lang: "text", Flags: []string{"output"}, Attrs: map[string]string{}, Text: "a\n  b\n", Line: 9},
		{Lang: "", Attrs: map[string]string{}, Text: "```\n", Line: 14},
		{Lang: "sh", Flags: []string{"tour"}, Attrs: map[string]string{}, Text: "unclosed\n", Line: 18},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Blocks =\n%#v\nwant\n%#v", got, want)
	}
	if !got[3].Has("tour") || got[3].Has("output") {
		t.Errorf("Has: %v", got[3].Flags)
	}
}

func TestLinksSkipCodeAndComments(t *testing.T) {
	md := "See [the spec](docs/spec.md#top-level) and ![logo](img/logo.png \"Logo\").\n" +
		"`[not](a-link.md)` and ``[nor](this.md)``, <!-- [hidden](x.md) -->\n" +
		"```md\n[in](code.md)\n```\n" +
		"A [link\nacross lines](#quick-start) and an unclosed `[tick](real.md).\n"
	got := Links(md)
	want := []Link{
		{Target: "docs/spec.md#top-level", Line: 1},
		{Target: "img/logo.png", Line: 1},
		{Target: "#quick-start", Line: 7},
		{Target: "real.md", Line: 7},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Links = %#v, want %#v", got, want)
	}
}
