package runtime

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipKeepsTextWithinTheLimit(t *testing.T) {
	tests := []struct {
		name  string
		s     string
		limit int
		want  string
	}{
		{"empty", "", 5, ""},
		{"shorter", "abc", 5, "abc"},
		{"exactly the limit", strings.Repeat("a", 20), 20, strings.Repeat("a", 20)},
		{"one over the limit", strings.Repeat("a", 21), 20, strings.Repeat("a", 8) + truncationMarker},
		{"limit equals marker length", strings.Repeat("a", 13), 12, truncationMarker},
		{"marker length plus one", strings.Repeat("a", 14), 13, "a" + truncationMarker},
		{"multi-byte within the limit", strings.Repeat("é", 20), 20, strings.Repeat("é", 20)},
		{"é counts as one character", strings.Repeat("é", 21), 20, strings.Repeat("é", 8) + truncationMarker},
		{"CJK", strings.Repeat("日本", 10) + "語", 20, "日本日本日本日本" + truncationMarker},
		{"emoji", strings.Repeat("🎉", 30), 14, "🎉🎉" + truncationMarker},
		{"CJK extension B", strings.Repeat("𠀋", 30), 15, "𠀋𠀋𠀋" + truncationMarker},
		{"mixed widths", "a" + "é" + "日" + "🎉" + strings.Repeat("x", 20), 16, "aé日🎉" + truncationMarker},
		{"the marker itself fits", truncationMarker, 12, truncationMarker},
		{"invalid bytes count one each", "\xff\xfe" + strings.Repeat("a", 20), 14, "\xff\xfe" + truncationMarker},
		{"invalid bytes within the limit kept", "a\xffb", 3, "a\xffb"},
		{"truncated sequence counts per byte", "\xe6\x97" + strings.Repeat("b", 20), 13, "\xe6" + truncationMarker},
		{"limit below the marker: plain prefix", "abcdefghijklmnop", 5, "abcde"},
		{"limit below the marker keeps whole characters", "日本語のテキストです。長い", 3, "日本語"},
		{"limit below the marker, text fits", "abc", 5, "abc"},
		{"limit 1", "🎉🎉", 1, "🎉"},
		{"limit 0", "abc", 0, ""},
		{"negative limit", "abc", -4, ""},
		{"limit 0 of empty", "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Clip(tt.s, tt.limit)
			if got != tt.want {
				t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.limit, got, tt.want)
			}
			if tt.limit > 0 && utf8.RuneCountInString(got) > tt.limit {
				t.Errorf("result has %d characters, limit %d", utf8.RuneCountInString(got), tt.limit)
			}
		})
	}
}

func TestClipResultHasExactlyLimitCharacters(t *testing.T) {
	s := strings.Repeat("日本語🎉é", 10000) // 50,000 characters, 4 encodings
	for _, limit := range []int{12, 13, 100, 4000, 16000, 49999} {
		got := Clip(s, limit)
		if n := utf8.RuneCountInString(got); n != limit {
			t.Errorf("limit %d: %d characters", limit, n)
		}
		if !strings.HasSuffix(got, truncationMarker) || !utf8.ValidString(got) {
			t.Errorf("limit %d: bad result tail %q", limit, got[max(0, len(got)-20):])
		}
	}
	if got := Clip(s, 50000); got != s {
		t.Error("text of exactly limit characters must come back unchanged")
	}
}

func TestTruncationMarkerLength(t *testing.T) {
	if n := utf8.RuneCountInString(truncationMarker); n != markerLen {
		t.Fatalf("truncationMarker has %d characters, markerLen says %d", n, markerLen)
	}
}

// FuzzClip holds Clip's contract for any text and limit: valid UTF-8 stays valid, the result
// never exceeds the limit, a clipped result has exactly limit characters when the marker fits,
// clipping is idempotent, and what is kept is a prefix of the input.
func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "hello", strings.Repeat("é", 40), "日本語のテキスト" + strings.Repeat("🎉", 9), "\xff\xfe\xe6\x97abc", "𠀋𠀋𠀋𠀋𠀋𠀋𠀋𠀋𠀋𠀋𠀋𠀋𠀋𠀋",
		strings.Repeat("a", 29) + "é" + strings.Repeat("b", 20), strings.Repeat("x", 64) + "\xff" + strings.Repeat("🎉", 9)} {
		for _, n := range []int{-1, 0, 1, 5, 11, 12, 13, 20, 29, 30, 31, 40, 64, 65} {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, limit int) {
		got := Clip(s, limit)
		if want := referenceClip(s, limit); got != want {
			t.Fatalf("Clip(%q, %d) = %q, the plain character loop gives %q", s, limit, got, want)
		}
		n := utf8.RuneCountInString(got)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Clip(%q, %d) = %q: invalid UTF-8 from valid input", s, limit, got)
		}
		if limit <= 0 {
			if got != "" {
				t.Fatalf("Clip(%q, %d) = %q, want empty", s, limit, got)
			}
			return
		}
		if n > limit {
			t.Fatalf("Clip(%q, %d) has %d characters", s, limit, n)
		}
		if utf8.RuneCountInString(s) <= limit {
			if got != s {
				t.Fatalf("Clip(%q, %d) = %q, want the input unchanged", s, limit, got)
			}
		} else if limit >= markerLen {
			if n != limit || !strings.HasSuffix(got, truncationMarker) {
				t.Fatalf("Clip(%q, %d) = %q: want exactly %d characters ending in the marker", s, limit, got, limit)
			}
			if !strings.HasPrefix(s, strings.TrimSuffix(got, truncationMarker)) {
				t.Fatalf("Clip(%q, %d) = %q does not keep a prefix", s, limit, got)
			}
		} else if !strings.HasPrefix(s, got) || n != limit {
			t.Fatalf("Clip(%q, %d) = %q: want the first %d characters", s, limit, got, limit)
		}
		if again := Clip(got, limit); again != got {
			t.Fatalf("not idempotent: Clip(%q, %d) = %q, then %q", s, limit, got, again)
		}
	})
}

// referenceClip is Clip written as the plain character loop, without the ASCII fast path.
func referenceClip(s string, limit int) string {
	if limit <= 0 {
		return ""
	}
	keep := max(limit-markerLen, 0)
	if limit < markerLen {
		keep = limit
	}
	n, cut := 0, 0
	for i := range s {
		if n == keep {
			cut = i
		}
		if n == limit {
			if keep == limit {
				return s[:cut]
			}
			return s[:cut] + truncationMarker
		}
		n++
	}
	return s
}
