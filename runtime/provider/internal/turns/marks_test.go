package turns

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

// TestNormalizeMarkedFindsTheLastElementOfEachPrefix pins where message prefixes end among the
// normalised turns: merged system turns, a blank message dropped, a round's results, the
// opening turn put first.
func TestNormalizeMarkedFindsTheLastElementOfEachPrefix(t *testing.T) {
	msgs := []chat.Message{
		chat.SystemMessage("a"), chat.SystemMessage("b"), // turn 0, parts 2
		{Role: chat.RoleAssistant, Text: "earlier reply"}, // turn 2 after the opening user turn 1
		chat.UserMessage("q"),                             // turn 3
		{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "1", Name: "x", Input: json.RawMessage(`{}`)}, {ID: "2", Name: "x", Input: json.RawMessage(`{}`)}}}, // turn 4
		{Role: chat.RoleTool, ToolCallID: "1", Text: "r1"}, {Role: chat.RoleTool, ToolCallID: "2", Text: "r2"}, // turn 5
		chat.UserMessage("  "), // dropped
	}
	ts, marks, err := NormalizeMarked(nil, msgs, []int{0, 1, 2, 3, 4, 5, 6, 7, 8})
	if err != nil {
		t.Fatal(err)
	}
	want := "[{-1 0 0 0} {0 1 0 0} {0 2 0 0} {2 1 0 0} {3 1 0 0} {4 0 2 0} {5 0 0 1} {5 0 0 2} {5 0 0 2}]"
	if got := fmt.Sprint(marks); got != want || len(ts) != 6 || ts[1].Parts[0].Text != OpeningText {
		t.Errorf("marks %s (%d turns)\nwant  %s", got, len(ts), want)
	}
}
