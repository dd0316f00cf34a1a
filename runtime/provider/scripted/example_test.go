package scripted_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/scripted"
)

// A scripted model answers each call with the next turn of its script and records what it was
// sent, so a test asserts on exactly what the model saw.
func ExampleNew() {
	ctx := context.Background()
	call := chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)}
	m := scripted.New(
		scripted.Calls(call),
		scripted.Text("A-17 shipped on Monday."),
	)
	req := &chat.Request{Model: chat.ModelSettings{Name: "any"}, Messages: []chat.Message{chat.UserMessage("Has A-17 shipped?")}}
	resp, err := m.Generate(ctx, req)
	fmt.Println(resp.StopReason, resp.Message.ToolCalls[0].Name, err)

	req.Messages = append(req.Messages, resp.Message, chat.ToolMessage("c1", "shipped on Monday"))
	resp, err = m.Generate(ctx, req)
	fmt.Println(resp.StopReason, resp.Message.Text, err)

	_, err = m.Generate(ctx, req)
	fmt.Println(err)
	fmt.Println(len(m.Requests()), "requests recorded")
	// Output:
	// tool_use lookup_order <nil>
	// end_turn A-17 shipped on Monday. <nil>
	// scripted model: the script has no turn left (request 3, 2 turns scripted)
	// 3 requests recorded
}
