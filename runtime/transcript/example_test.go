package transcript_test

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/transcript"
)

// A message list printed in the transcript format and parsed back. A text line that would read
// as a header is escaped, so the round trip is exact.
func ExamplePrint() {
	msgs := []chat.Message{
		chat.SystemMessage("You answer questions about orders."),
		chat.UserMessage("Has A-17 shipped?\nuser: this line is text, not a header"),
		chat.AssistantMessage("Let me look.", chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)}),
		chat.ToolMessage("c1", "shipped on Monday"),
		chat.AssistantMessage("Yes, on Monday."),
	}
	text := transcript.Print(msgs)
	fmt.Print(text)

	back, err := transcript.Parse(text)
	fmt.Println(err, slices.EqualFunc(back, msgs, chat.Message.Equal))
	// Output:
	// system:
	// You answer questions about orders.
	//
	// user:
	// Has A-17 shipped?
	// \user: this line is text, not a header
	//
	// assistant:
	// Let me look.
	// function_call: {"name":"lookup_order","arguments":{"number":"A-17"},"id":"c1"}
	//
	// function_call_output: {"id":"c1","content":"shipped on Monday"}
	//
	// assistant:
	// Yes, on Monday.
	// <nil> true
}

// A parse error names the line and says what to do.
func ExampleParse() {
	_, err := transcript.Parse("user: Has A-17 shipped?\nfunction_call: {\"name\":\"lookup_order\",\"id\":\"c1\"}\n")
	fmt.Println(err)
	// Output:
	// line 2: function_call outside an assistant message; put it under an assistant: header
}
