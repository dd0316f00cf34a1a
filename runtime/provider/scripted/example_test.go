package scripted_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/scripted"
)

// A scripted tool round: the model calls a tool, then answers with the result in view.
func Example() {
	m := scripted.New(
		scripted.Calls(chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"order":"A-17"}`)}),
		scripted.Text("Your order A-17 has shipped."),
	)
	ctx := context.Background()
	req := &chat.Request{Model: chat.ModelSettings{Name: "test-model"}, Messages: []chat.Message{chat.UserMessage("Where is A-17?")}}
	r, _ := m.Generate(ctx, req)
	fmt.Println(r.StopReason, r.Message.ToolCalls[0].Name)
	req.Messages = append(req.Messages, r.Message, chat.ToolMessage("c1", `{"status":"shipped"}`))
	r, _ = m.Generate(ctx, req)
	fmt.Println(r.StopReason, r.Message.Text)
	fmt.Println(len(m.Requests()), "requests")
	// Output:
	// tool_use lookup_order
	// end_turn Your order A-17 has shipped.
	// 2 requests
}

// Failures as a provider's API returns them: a rate limit with its wait, a refusal, then the
// answer. A caller tells them apart by the *chat.CallError.
func Example_failures() {
	m := scripted.New(
		scripted.Transient(429, 30*time.Second),
		scripted.Permanent(400, "messages: roles must alternate"),
		scripted.Text("Your order A-17 has shipped."),
	)
	req := &chat.Request{Model: chat.ModelSettings{Name: "test-model"}, Messages: []chat.Message{chat.UserMessage("Where is A-17?")}}
	for range 3 {
		r, err := m.Generate(context.Background(), req)
		var ce *chat.CallError
		switch {
		case errors.As(err, &ce) && ce.Transient:
			fmt.Printf("transient: status %d, retry after %s\n", ce.StatusCode, ce.RetryAfter)
		case err != nil:
			fmt.Println("permanent:", err)
		default:
			fmt.Println("answer:", r.Message.Text)
		}
	}
	// Output:
	// transient: status 429, retry after 30s
	// permanent: scripted: status 400 (permanent): messages: roles must alternate
	// answer: Your order A-17 has shipped.
}
