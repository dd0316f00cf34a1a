package chat

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/personagen/personagen/internal/golden"
)

// equalMessages reports whether two lists hold Equal messages in order.
func equalMessages(a, b []Message) bool { return slices.EqualFunc(a, b, Message.Equal) }

// partsMessage is a message of role r whose content is parts.
func partsMessage(r Role, parts ...Part) Message { return Message{Role: r, Parts: parts} }

// checkGolden compares got with testdata/name, rewriting the file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}
