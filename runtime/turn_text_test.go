package runtime_test

import (
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

// The To and Cc lines of a replayed turn are the addresses joined with ", ", line breaks made
// spaces, trimmed as a whole: whether written address by address (the common case) or joined
// first (values with line breaks or surrounding white space), the line is the same.
func FuzzTurnTextListHeader(f *testing.F) {
	for _, seed := range [][3]string{
		{"a@x.test", "b@x.test", ""}, {"", "b@x.test", ""}, {"a@x.test", "", ""}, {" a@x.test", "b", ""},
		{"a", "b ", ""}, {"a\nb", "c", ""}, {"a", "b\u2028", ""}, {"\u00a0a", "b", ""}, {"a", "b\u3000", ""},
		{"", "", ""}, {"a", "b", "c"}, {"Ada <a@x.test>", "Grace Hopper <g@x.test>", " "},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	breaks := strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\u2028", " ", "\u2029", " ")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		for _, values := range [][]string{{a, b}, {a, b, c}} {
			m := &history.Message{From: "f", To: values, Date: time.Unix(0, 0), Text: "body"}
			text, ok := runtime.TurnText(m)
			if !ok {
				t.Fatal("no turn for a message with a body")
			}
			want := "To:"
			if v := strings.TrimSpace(breaks.Replace(strings.Join(values, ", "))); v != "" {
				want += " " + v
			}
			lines := strings.SplitN(text, "\nCc:", 2)
			got := strings.TrimPrefix(lines[0], "From: f\n")
			if got != want {
				t.Fatalf("To %q: line %q, want %q", values, got, want)
			}
		}
	})
}
