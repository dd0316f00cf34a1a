package console

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// hostileArgs are a refund call's arguments as a model might write them: an ANSI escape, a
// right-to-left override and a line separator inside a string, and spacing between tokens.
const hostileArgs = `{ "order": "A-17",` + "\n" + ` "note": "\u001b[31mred\u001b[0m ` + "\u202e" + `gnp.exe ` + "\u2028" + `end" }`

func TestVisibleEscapesWhatATerminalOrABrowserWouldObey(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode, 日本, עברית": "plain text, ünïcode, 日本, עברית",
		"\x1b[2J\x07bell\r\n\t":          `\u001b[2J\u0007bell\u000d\u000a\u0009`,
		"\u202eright-to-left\u2066":      `\u202eright-to-left\u2066`,
		"zero\u200bwidth\ufeff":          `zero\u200bwidth\ufeff`,
		"line\u2028para\u2029":           `line\u2028para\u2029`,
		"\U000e0041 tag":                 `\udb40\udc41 tag`,
		"bad \xff byte, c1 \u0085":       `bad \ufffd byte, c1 \u0085`,
	} {
		if got := Visible(in); got != want {
			t.Errorf("Visible(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSegmentsMarkEachHiddenCharacterAndKeepLineBreaks: the page's form of a call's arguments
// is the JSON indented, each hidden character a segment of its own holding its escape, and the
// indentation's line breaks kept.
func TestSegmentsMarkEachHiddenCharacterAndKeepLineBreaks(t *testing.T) {
	got := segments(hostileArgs)
	want := []segment{
		{Text: "{\n  \"order\": \"A-17\",\n  \"note\": \"\\u001b[31mred\\u001b[0m "},
		{Text: `\u202e`, Hidden: true},
		{Text: "gnp.exe "},
		{Text: `\u2028`, Hidden: true},
		{Text: "end\"\n}"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("segments =\n%+v\nwant\n%+v", got, want)
	}
	note := segments("Over the limit.\r\nOffer\u200b credit.")
	want = []segment{{Text: "Over the limit."}, {Text: `\u000d`, Hidden: true}, {Text: "\nOffer"}, {Text: `\u200b`, Hidden: true}, {Text: " credit."}}
	if !reflect.DeepEqual(note, want) {
		t.Errorf("segments of a note =\n%+v\nwant\n%+v", note, want)
	}
}

// FuzzVisibleJSON holds that what `personagen approvals` prints of a call's arguments has no
// hidden character, that arguments that are JSON stay the same JSON value, and that the page's
// segments of any text hold no hidden character but line breaks and tabs outside their
// escapes, and spell the text.
func FuzzVisibleJSON(f *testing.F) {
	for _, s := range []string{hostileArgs, `{"a":1}`, "plain \x1b[1m text", `{"s":"\u202e"}`, "{\"s\":\"\u2028\u200b\U000e0041\"}", `[1, "x"]`, "\xff\xfe"} {
		f.Add(s)
	}
	// obeyed is what a terminal or a browser's bidi algorithm acts on, spelled out apart from
	// the rule under test.
	obeyed := func(r rune) bool {
		return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := VisibleJSON(s)
		for _, r := range out {
			if obeyed(r) {
				t.Fatalf("VisibleJSON(%q) = %q keeps %U", s, out, r)
			}
		}
		var plain strings.Builder
		for _, seg := range segments(s) {
			for _, r := range seg.Text {
				if obeyed(r) && r != '\n' && r != '\t' {
					t.Fatalf("segments(%q) keep %U in %q", s, r, seg.Text)
				}
			}
			if !seg.Hidden {
				plain.WriteString(seg.Text)
			}
		}
		if want := strings.Map(func(r rune) rune {
			if hidden(r) && r != '\n' && r != '\t' {
				return -1
			}
			return r
		}, pretty(s)); plain.String() != want {
			t.Fatalf("the plain segments of %q spell %q, want %q", s, plain.String(), want)
		}
		if !json.Valid([]byte(s)) {
			return
		}
		var want, got any
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("VisibleJSON(%q) = %q is not JSON: %v", s, out, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("VisibleJSON(%q) = %q decodes to %v, want %v", s, out, got, want)
		}
	})
}
