package strict

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/providertest"
)

// Adapter returns api as providertest sees it: the answers of the API rendered from a
// providertest.Answer, its error shape, its context-window refusal, its request-id header, and
// Check, the strict server's rules (method, path, credentials and every rule of the body). New
// and NewRetrying are left for the adapter's test to set.
func Adapter(api API) providertest.Adapter {
	a := providertest.Adapter{
		Error: func(status int, msg string) []byte { return ErrorBody(api, errorType(api, status), "", msg) },
		Check: func(r *http.Request, body []byte) error {
			if err := checkHTTP(api, r); err != nil {
				return err
			}
			return check(api, body)
		},
		CacheMarks: func(body []byte) (string, []string, error) { return CacheMarks(api, body) },
	}
	switch api {
	case Anthropic:
		a.Provider, a.RequestIDHeader, a.Answer = provider.Anthropic, "request-id", anthropicAnswer
		a.ContextWindow = func() Reply {
			return Reply{Status: 400, Body: string(ErrorBody(api, "invalid_request_error", "", "prompt is too long: 250123 tokens > 200000 maximum"))}
		}
	case Chat:
		a.Provider, a.RequestIDHeader, a.Answer = provider.OpenAI, "x-request-id", chatAnswer
	default:
		a.Provider, a.RequestIDHeader, a.Answer = provider.OpenAIResponses, "x-request-id", responsesAnswer
	}
	if api != Anthropic {
		a.ContextWindow = func() Reply {
			return Reply{Status: 400, Body: string(ErrorBody(api, "invalid_request_error", "context_length_exceeded",
				"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens."))}
		}
	}
	return a
}

// check runs api's body rules.
func check(api API, body []byte) error {
	switch api {
	case Anthropic:
		return CheckAnthropic(body)
	case Chat:
		return CheckChat(body)
	}
	return CheckResponses(body)
}

// errorType is the error "type" the API sends with status.
func errorType(api API, status int) string {
	if api == Anthropic {
		switch status {
		case 401:
			return "authentication_error"
		case 403:
			return "permission_error"
		case 404:
			return "not_found_error"
		case 413:
			return "request_too_large"
		case 429:
			return "rate_limit_error"
		case 529:
			return "overloaded_error"
		}
		if status >= 500 {
			return "api_error"
		}
		return "invalid_request_error"
	}
	switch {
	case status == 429:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func unsupported(api string, s chat.StopReason) error {
	return fmt.Errorf("the %s API has no stop reason %q: %w", api, s, errors.ErrUnsupported)
}

// anthropicAnswer renders ans as a Messages API message.
func anthropicAnswer(ans providertest.Answer) (Reply, error) {
	reasons := map[chat.StopReason]string{
		chat.StopEndTurn: "end_turn", chat.StopToolUse: "tool_use", chat.StopMaxTokens: "max_tokens", chat.StopSequence: "stop_sequence",
		chat.StopRefusal: "refusal", chat.StopPause: "pause_turn", chat.StopContextWindow: "model_context_window_exceeded",
	}
	reason, ok := reasons[ans.StopReason]
	if !ok {
		return Reply{}, unsupported("Messages", ans.StopReason)
	}
	var blocks []string
	if ans.Text != "" {
		blocks = append(blocks, mustJSON(map[string]string{"type": "text", "text": ans.Text}))
	}
	for _, c := range ans.Calls {
		blocks = append(blocks, mustJSON(map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": rawJSON(c.Arguments)}))
	}
	u := ans.Usage
	body := AnthropicMessage("msg_providertest", reason, map[string]int64{
		"input_tokens": u.InputTokens - u.CacheReadTokens - u.CacheWriteTokens, "output_tokens": u.OutputTokens,
		"cache_read_input_tokens": u.CacheReadTokens, "cache_creation_input_tokens": u.CacheWriteTokens,
	}, blocks...)
	if ans.Refusal != "" {
		body = body[:len(body)-1] + `,"stop_details":` + mustJSON(map[string]string{"type": "refusal", "explanation": ans.Refusal}) + "}"
	}
	return Reply{Body: body}, nil
}

// chatAnswer renders ans as a chat completion.
func chatAnswer(ans providertest.Answer) (Reply, error) {
	reasons := map[chat.StopReason]string{
		chat.StopEndTurn: "stop", chat.StopToolUse: "tool_calls", chat.StopMaxTokens: "length", chat.StopRefusal: "stop",
	}
	reason, ok := reasons[ans.StopReason]
	if !ok {
		return Reply{}, unsupported("Chat Completions", ans.StopReason)
	}
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil}
	if ans.Text != "" {
		msg["content"] = ans.Text
	}
	if ans.Refusal != "" {
		msg["refusal"] = ans.Refusal
	}
	var calls []any
	for _, c := range ans.Calls {
		calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]string{"name": c.Name, "arguments": c.Arguments}})
	}
	if calls != nil {
		msg["tool_calls"] = calls
	}
	u := ans.Usage
	return Reply{Body: ChatCompletion("chatcmpl-providertest", reason, mustJSON(msg), map[string]any{
		"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
		"prompt_tokens_details": map[string]int64{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
	})}, nil
}

// responsesAnswer renders ans as a Responses API response.
func responsesAnswer(ans providertest.Answer) (Reply, error) {
	status, incomplete := "completed", map[string]string(nil)
	switch ans.StopReason {
	case chat.StopEndTurn, chat.StopToolUse, chat.StopRefusal:
	case chat.StopMaxTokens:
		status, incomplete = "incomplete", map[string]string{"reason": "max_output_tokens"}
	default:
		return Reply{}, unsupported("Responses", ans.StopReason)
	}
	var items []string
	var parts []any
	if ans.Text != "" {
		parts = append(parts, map[string]any{"type": "output_text", "text": ans.Text, "annotations": []any{}})
	}
	if ans.Refusal != "" {
		parts = append(parts, map[string]any{"type": "refusal", "refusal": ans.Refusal})
	}
	if parts != nil {
		items = append(items, mustJSON(map[string]any{"type": "message", "id": "msg_providertest", "role": "assistant", "status": status, "content": parts}))
	}
	for i, c := range ans.Calls {
		items = append(items, mustJSON(map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i+1), "call_id": c.ID,
			"name": c.Name, "arguments": c.Arguments, "status": "completed"}))
	}
	u := ans.Usage
	return Reply{Body: ResponsesOutput("resp_providertest", status, incomplete, map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens,
		"input_tokens_details": map[string]int64{"cached_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens},
	}, items...)}, nil
}

// rawJSON is arguments as a JSON value: itself when it is JSON, else a JSON string of it.
func rawJSON(arguments string) json.RawMessage {
	if json.Valid([]byte(arguments)) {
		return json.RawMessage(arguments)
	}
	return json.RawMessage(mustJSON(arguments))
}
