package runtime

import (
	"slices"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

// equalMessages reports whether two lists hold Equal messages in order.
func equalMessages(a, b []chat.Message) bool { return slices.EqualFunc(a, b, chat.Message.Equal) }

// partsMessage is a message of role r whose content is parts.
func partsMessage(r chat.Role, parts ...chat.Part) chat.Message {
	return chat.Message{Role: r, Parts: parts}
}

// mustCall is chat.NewToolCall, failing t on an error.
func mustCall(t testing.TB, id, name string, input any) chat.ToolCall {
	t.Helper()
	c, err := chat.NewToolCall(id, name, input)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
