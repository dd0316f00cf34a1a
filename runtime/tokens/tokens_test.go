package tokens

import "testing"

func TestCountIsO200kBase(t *testing.T) {
	tests := map[string]int{"": 0, "hello": 1, "Hello, world!": 4, "Köln, März": 5}
	for s, want := range tests {
		if got := Count(s); got != want {
			t.Errorf("Count(%q) = %d, want %d", s, got, want)
		}
		if got := len(Encode(s)); got != want {
			t.Errorf("len(Encode(%q)) = %d, want %d", s, got, want)
		}
	}
}
