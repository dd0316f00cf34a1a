package strict

import "strings"

// Malformed returns 200 answers that are not a message of api, each named for what it is: JSON
// null, an empty body, a JSON array, a JSON string, truncated JSON, an empty object, an object
// lacking what api always sends, a valid message of api sent as text/html, and the valid
// answers of the two other APIs. An adapter must return an error for every one of them.
func Malformed(api API) map[string]Reply {
	valid := map[API]string{
		Anthropic: AnthropicText("msg_1", "OK."),
		Chat:      ChatText("chatcmpl-1", "OK."),
		Responses: ResponsesText("resp_1", "OK."),
	}
	out := map[string]Reply{
		"null":            {Body: "null"},
		"empty body":      {Body: ""},
		"white space":     {Body: " \n"},
		"array":           {Body: "[]"},
		"string":          {Body: `"x"`},
		"number":          {Body: "42"},
		"truncated":       {Body: valid[api][:len(valid[api])/2]},
		"empty object":    {Body: "{}"},
		"html":            {Body: "<html><body>502 Bad Gateway</body></html>", Header: map[string]string{"Content-Type": "text/html"}},
		"json as html":    {Body: valid[api], Header: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
		"error shape 200": {Body: string(ErrorBody(api, "api_error", "", "overloaded"))},
	}
	for other, body := range valid {
		if other != api {
			out["answer of "+other.String()] = Reply{Body: body}
		}
	}
	switch api {
	case Anthropic:
		out["no stop_reason"] = Reply{Body: strings.Replace(valid[api], `"stop_reason":"end_turn"`, `"stop_reason":null`, 1)}
		out["no content"] = Reply{Body: `{"id":"m","type":"message","role":"assistant","model":"c","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`}
		out["content not an array"] = Reply{Body: `{"id":"m","type":"message","role":"assistant","model":"c","content":"OK.","stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`}
		out["user role"] = Reply{Body: strings.Replace(valid[api], `"role":"assistant"`, `"role":"user"`, 1)}
		out["not type message"] = Reply{Body: strings.Replace(valid[api], `"type":"message"`, `"type":"completion"`, 1)}
		out["tool_use without id"] = Reply{Body: AnthropicMessage("m", "tool_use", nil, `{"type":"tool_use","name":"lookup_order","input":{}}`)}
	case Chat:
		out["no choices"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g"}`}
		out["empty choices"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g","choices":[]}`}
		out["choice null"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g","choices":[null]}`}
		out["choice without message"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g","choices":[{"index":0,"finish_reason":"stop"}]}`}
		out["tool call without id"] = Reply{Body: ChatCompletion("c", "tool_calls", `{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"lookup_order","arguments":"{}"}}]}`, nil)}
	case Responses:
		out["no output"] = Reply{Body: `{"id":"r","object":"response","created_at":1,"status":"completed","model":"g"}`}
		out["no status"] = Reply{Body: `{"id":"r","object":"response","created_at":1,"model":"g","output":[]}`}
		out["not object response"] = Reply{Body: strings.Replace(valid[api], `"object":"response"`, `"object":"list"`, 1)}
		out["function_call without call_id"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `{"type":"function_call","id":"fc","name":"lookup_order","arguments":"{}","status":"completed"}`)}
	}
	return out
}

// String names the API ("anthropic", "chat", "responses").
func (a API) String() string {
	switch a {
	case Anthropic:
		return "anthropic"
	case Chat:
		return "chat"
	}
	return "responses"
}
