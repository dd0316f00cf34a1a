package spec

import (
	"go/token"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestGoNameDerivesExportedIdentifiers(t *testing.T) {
	tests := []struct{ in, want string }{
		{"support-agent", "SupportAgent"},
		{"support_agent", "SupportAgent"},
		{"support agent", "SupportAgent"},
		{"supportAgent", "SupportAgent"},
		{"agent-v2", "AgentV2"},
		{"a-b-1", "AB1"},
		{"2fa-helper", "X2faHelper"},
		{"type", "Type"},
		{"nil", "Nil"},
		{"-", "X"},
		{"", "X"},
		{"über-agent", "ÜberAgent"},
		{"日本-agent", "X日本Agent"},
		{"a.b/c", "ABC"},
		{"e\u0301clair", "EClair"},
		{"\xff\xfeok", "Ok"},
	}
	for _, tt := range tests {
		if got := GoName(tt.in); got != tt.want {
			t.Errorf("GoName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzGoName(f *testing.F) {
	for _, s := range []string{"support-agent", "", "9", "_", "日本", "type", "\xff", "a\u0301", "ǆemal", "Σ-σ"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := GoName(s)
		if !token.IsIdentifier(got) || !token.IsExported(got) {
			t.Fatalf("GoName(%q) = %q: not an exported identifier", s, got)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("GoName(%q) = %q: invalid UTF-8", s, got)
		}
		if r, _ := utf8.DecodeRuneInString(got); !unicode.IsUpper(r) {
			t.Fatalf("GoName(%q) = %q starts with %q", s, got, r)
		}
		if again := GoName(s); again != got {
			t.Fatalf("GoName(%q) not deterministic: %q then %q", s, got, again)
		}
	})
}

func TestToolNameIsSnakeCase(t *testing.T) {
	tests := []struct{ in, want string }{
		{"LookupOrder", "lookup_order"},
		{"GetHTTPStatus", "get_http_status"},
		{"URL", "url"},
		{"URLFetch", "url_fetch"},
		{"Fetch2FACode", "fetch2_fa_code"},
		{"Web2Text", "web2_text"},
		{"Lookup_Order", "lookup_order"},
		{"Lookup__Order_", "lookup_order"},
		{"A", "a"},
		{"ABc", "a_bc"},
		{"Search", "search"},
	}
	for _, tt := range tests {
		if got := ToolName(tt.in); got != tt.want {
			t.Errorf("ToolName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzToolName holds that the default name of any exported Go name
// matches ToolNamePattern once it fits in 64 characters.
func FuzzToolName(f *testing.F) {
	for _, s := range []string{"LookupOrder", "A", "X_", "HTTP2Server", "A__B"} {
		f.Add(s)
	}
	pattern := regexp.MustCompile(ToolNamePattern)
	f.Fuzz(func(t *testing.T, s string) {
		if !validExportedASCII(s) {
			return
		}
		got := ToolName(s)
		if len(got) <= 64 && !pattern.MatchString(got) {
			t.Fatalf("ToolName(%q) = %q does not match %s", s, got, ToolNamePattern)
		}
		if strings.Contains(got, "__") || strings.HasPrefix(got, "_") || strings.HasSuffix(got, "_") {
			t.Fatalf("ToolName(%q) = %q has a stray underscore", s, got)
		}
	})
}
