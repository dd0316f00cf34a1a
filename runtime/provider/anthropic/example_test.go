package anthropic_test

import (
	"encoding/json"
	"fmt"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/anthropic"
)

// The Messages API request a tool round becomes, without sending it: the system message is the
// top-level prompt, the round's result travels in the user turn after the call, and a blank
// result is never sent blank.
func ExampleParams() {
	call := chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)}
	req := &chat.Request{
		Model: chat.ModelSettings{Name: "claude-sonnet-4-5", MaxTokens: 1024},
		Messages: []chat.Message{
			chat.SystemMessage("You answer questions about orders."),
			chat.UserMessage("Has A-17 shipped?"),
			chat.AssistantMessage("", call),
			chat.ToolMessage("c1", " "),
		},
	}
	params, err := anthropic.Params(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := json.MarshalIndent(params, "", "  ")
	fmt.Println(string(body), err)
	// Output:
	// {
	//   "max_tokens": 1024,
	//   "messages": [
	//     {
	//       "content": [
	//         {
	//           "text": "Has A-17 shipped?",
	//           "type": "text"
	//         }
	//       ],
	//       "role": "user"
	//     },
	//     {
	//       "content": [
	//         {
	//           "id": "c1",
	//           "input": {
	//             "number": "A-17"
	//           },
	//           "name": "lookup_order",
	//           "type": "tool_use"
	//         }
	//       ],
	//       "role": "assistant"
	//     },
	//     {
	//       "content": [
	//         {
	//           "tool_use_id": "c1",
	//           "content": [
	//             {
	//               "text": "[the tool returned no output]",
	//               "type": "text"
	//             }
	//           ],
	//           "type": "tool_result"
	//         }
	//       ],
	//       "role": "user"
	//     }
	//   ],
	//   "model": "claude-sonnet-4-5",
	//   "system": [
	//     {
	//       "text": "You answer questions about orders.",
	//       "type": "text"
	//     }
	//   ]
	// } <nil>
}
