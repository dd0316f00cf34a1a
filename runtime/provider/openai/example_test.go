package openai_test

import (
	"encoding/json"
	"fmt"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/openai"
)

// The Chat Completions request a tool round becomes, without sending it: a failed tool's
// result is marked in its text (the API has no error flag), and max_tokens is sent as
// max_completion_tokens.
func ExampleChatParams() {
	call := chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)}
	req := &chat.Request{
		Model: chat.ModelSettings{Name: "gpt-4.1-mini", MaxTokens: 1024},
		Messages: []chat.Message{
			chat.SystemMessage("You answer questions about orders."),
			chat.UserMessage("Has A-17 shipped?"),
			chat.AssistantMessage("", call),
			chat.ToolErrorMessage("c1", "no order A-17"),
		},
	}
	params, err := openai.ChatParams(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := json.MarshalIndent(params, "", "  ")
	fmt.Println(string(body), err)
	// Output:
	// {
	//   "messages": [
	//     {
	//       "content": "You answer questions about orders.",
	//       "role": "system"
	//     },
	//     {
	//       "content": "Has A-17 shipped?",
	//       "role": "user"
	//     },
	//     {
	//       "tool_calls": [
	//         {
	//           "id": "c1",
	//           "function": {
	//             "arguments": "{\"number\":\"A-17\"}",
	//             "name": "lookup_order"
	//           },
	//           "type": "function"
	//         }
	//       ],
	//       "role": "assistant"
	//     },
	//     {
	//       "content": "[tool error] no order A-17",
	//       "tool_call_id": "c1",
	//       "role": "tool"
	//     }
	//   ],
	//   "model": "gpt-4.1-mini",
	//   "max_completion_tokens": 1024
	// } <nil>
}
