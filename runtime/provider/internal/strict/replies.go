package strict

import (
	"encoding/json"
)

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// AnthropicMessage returns a Messages API response body with the given content blocks (raw
// JSON objects), stop reason and usage.
func AnthropicMessage(id, stopReason string, usage map[string]int64, content ...string) string {
	blocks := make([]json.RawMessage, len(content))
	for i, c := range content {
		blocks[i] = json.RawMessage(c)
	}
	u := map[string]int64{"input_tokens": 10, "output_tokens": 5}
	for k, v := range usage {
		u[k] = v
	}
	return mustJSON(map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": "claude-strict",
		"content": blocks, "stop_reason": stopReason, "stop_sequence": nil, "usage": u,
	})
}

// AnthropicText returns a Messages API response with one text block and stop reason end_turn.
func AnthropicText(id, text string) string {
	return AnthropicMessage(id, "end_turn", nil, mustJSON(map[string]string{"type": "text", "text": text}))
}

// ChatText returns a Chat Completions response with one text answer.
func ChatText(id, text string) string {
	return ChatCompletion(id, "stop", mustJSON(map[string]any{"role": "assistant", "content": text, "refusal": nil}), nil)
}

// ChatCompletion returns a Chat Completions response with one choice: the message (a raw JSON
// object), its finish reason and usage (nil for a default).
func ChatCompletion(id, finishReason, message string, usage map[string]any) string {
	u := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	for k, v := range usage {
		u[k] = v
	}
	return mustJSON(map[string]any{
		"id": id, "object": "chat.completion", "created": 1767225600, "model": "gpt-strict",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finishReason, "logprobs": nil, "message": json.RawMessage(message)}},
		"usage":   u,
	})
}

// ResponsesText returns a Responses API response with one assistant message of text.
func ResponsesText(id, text string) string {
	return ResponsesOutput(id, "completed", nil, nil, mustJSON(map[string]any{
		"type": "message", "id": "msg_" + id, "role": "assistant", "status": "completed",
		"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}},
	}))
}

// ResponsesOutput returns a Responses API response with the given output items (raw JSON
// objects), status, incomplete details (nil when none) and usage (nil for a default).
func ResponsesOutput(id, status string, incomplete map[string]string, usage map[string]any, output ...string) string {
	items := make([]json.RawMessage, len(output))
	for i, o := range output {
		items[i] = json.RawMessage(o)
	}
	u := map[string]any{"input_tokens": 10, "output_tokens": 5, "total_tokens": 15,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	for k, v := range usage {
		u[k] = v
	}
	var inc any
	if incomplete != nil {
		inc = incomplete
	}
	return mustJSON(map[string]any{
		"id": id, "object": "response", "created_at": 1767225600, "status": status, "model": "gpt-strict",
		"output": items, "usage": u, "incomplete_details": inc, "error": nil,
		"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "temperature": 1, "top_p": 1,
	})
}
