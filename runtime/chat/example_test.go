package chat_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime/chat"
)

// A conversation with one tool round, checked with Validate: whole, and cut off after the
// model's call, before its result.
func ExampleValidate() {
	call := chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)}
	msgs := []chat.Message{
		chat.SystemMessage("You answer questions about orders."),
		chat.UserMessage("Has A-17 shipped?"),
		chat.AssistantMessage("", call),
		chat.ToolMessage("c1", "shipped on Monday"),
		chat.AssistantMessage("Yes, on Monday."),
	}
	fmt.Println("whole:", chat.Validate(msgs))

	err := chat.Validate(msgs[:3])
	var pe *chat.PairingError
	if errors.As(err, &pe) {
		fmt.Printf("cut: message %d, call %s: %s\n", pe.Index, pe.ID, pe.Problem)
	}
	// Output:
	// whole: <nil>
	// cut: message 2, call c1: tool call without a result
}

// Equal treats a text and one text part as the same content, and compares tool inputs as JSON.
func ExampleMessage_Equal() {
	a := chat.Message{Role: chat.RoleUser, Text: "Has A-17 shipped?"}
	b := chat.Message{Role: chat.RoleUser, Parts: []chat.Part{chat.TextPart("Has A-17 shipped?")}}
	fmt.Println(a.Equal(b))

	c := chat.AssistantMessage("", chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number": "A-17"}`)})
	d := chat.AssistantMessage("", chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)})
	fmt.Println(c.Equal(d))
	// Output:
	// true
	// true
}
