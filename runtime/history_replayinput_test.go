package runtime

import (
	"bytes"
	"testing"
)

func FuzzAppendReplayInputMatchesReplayInput(f *testing.F) {
	for _, s := range []string{"", " ", "{}", `{"a":1}`, `{"a":` + "…[truncated]", "x\u2028y\x01\"\\<>&\xff", "[1]", "\t{\"a\":1}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, _ := appendReplayInput(nil, s)
		if want := ReplayInput(s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}
