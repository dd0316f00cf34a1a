package chatgolden

import (
	"os"
	"slices"
	"testing"

	"github.com/personagen/personagen/internal/golden"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/transcript"
)

// Check compares transcript.Print(msgs) with the file at path byte for byte (rewriting it under
// -update, see package golden), then parses the file and requires messages Equal to msgs, so a
// golden file is both what a reviewer reads and an exact expectation.
func Check(t testing.TB, path string, msgs []chat.Message) {
	t.Helper()
	golden.Check(t, path, []byte(transcript.Print(msgs)))
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := transcript.Parse(string(want))
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if !slices.EqualFunc(parsed, msgs, chat.Message.Equal) {
		t.Errorf("%s parses to messages that differ from the output", path)
	}
}
