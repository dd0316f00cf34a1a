package spec

import (
	"go/token"
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
