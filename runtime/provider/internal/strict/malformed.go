package strict

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
)

// Malformed returns 200 answers that are not a message of api, each named for what it is: JSON
// null, an empty body, a JSON array, a JSON string, truncated JSON, an empty object, an object
// lacking what api always sends, one whose content blocks, output items or tool calls have a
// missing or unknown type or call a tool the adapter never offers, one whose stop reason says
// tool use without a tool call, a valid message of api sent as text/html, and the valid
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
		out["block without type"] = Reply{Body: AnthropicMessage("m", "end_turn", nil, `{"name":"lookup_order","input":{}}`)}
		out["block without type, stop tool_use"] = Reply{Body: AnthropicMessage("m", "tool_use", nil, `{"name":"f","input":{}}`)}
		out["block null"] = Reply{Body: AnthropicMessage("m", "end_turn", nil, `null`)}
		out["only a block of unknown type"] = Reply{Body: AnthropicMessage("m", "end_turn", nil, `{"type":"brand_new","text":"x"}`)}
		out["stop tool_use without tool_use"] = Reply{Body: AnthropicMessage("m", "tool_use", nil, `{"type":"text","text":"Let me look."}`)}
		out["stop tool_use with server_tool_use only"] = Reply{Body: AnthropicMessage("m", "tool_use", nil, `{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"x"}}`)}
	case Chat:
		out["no choices"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g"}`}
		out["empty choices"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g","choices":[]}`}
		out["choice null"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g","choices":[null]}`}
		out["choice without message"] = Reply{Body: `{"id":"c","object":"chat.completion","created":1,"model":"g","choices":[{"index":0,"finish_reason":"stop"}]}`}
		out["tool call without id"] = Reply{Body: ChatCompletion("c", "tool_calls", `{"role":"assistant","content":null,"tool_calls":[{"type":"function","function":{"name":"lookup_order","arguments":"{}"}}]}`, nil)}
		out["tool call without type"] = Reply{Body: ChatCompletion("c", "tool_calls", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","function":{"name":"lookup_order","arguments":"{}"}}]}`, nil)}
		out["tool call without type or id"] = Reply{Body: `{"choices":[{"message":{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`}
		out["custom tool call"] = Reply{Body: ChatCompletion("c", "tool_calls", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"custom","custom":{"name":"lookup_order","input":"A-17"}}]}`, nil)}
		out["tool call of unknown type"] = Reply{Body: ChatCompletion("c", "tool_calls", `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"brand_new","function":{"name":"lookup_order","arguments":"{}"}}]}`, nil)}
		out["tool call null"] = Reply{Body: ChatCompletion("c", "tool_calls", `{"role":"assistant","content":null,"tool_calls":[null]}`, nil)}
		out["finish tool_calls without tool calls"] = Reply{Body: ChatCompletion("c", "tool_calls", `{"role":"assistant","content":"Let me look."}`, nil)}
		out["finish function_call without tool calls"] = Reply{Body: ChatCompletion("c", "function_call", `{"role":"assistant","content":null,"function_call":{"name":"lookup_order","arguments":"{}"}}`, nil)}
		out["empty message"] = Reply{Body: `{"choices":[{"message":{}}]}`}
		out["message without role"] = Reply{Body: ChatCompletion("c", "stop", `{"content":"OK."}`, nil)}
		out["user role"] = Reply{Body: ChatCompletion("c", "stop", `{"role":"user","content":"OK."}`, nil)}
	case Responses:
		out["no output"] = Reply{Body: `{"id":"r","object":"response","created_at":1,"status":"completed","model":"g"}`}
		out["no status"] = Reply{Body: `{"id":"r","object":"response","created_at":1,"model":"g","output":[]}`}
		out["not object response"] = Reply{Body: strings.Replace(valid[api], `"object":"response"`, `"object":"list"`, 1)}
		out["function_call without call_id"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `{"type":"function_call","id":"fc","name":"lookup_order","arguments":"{}","status":"completed"}`)}
		out["item without type"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `{"name":"f","arguments":"{}"}`)}
		out["item null"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `null`)}
		out["only an item of unknown type"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `{"type":"brand_new","id":"x"}`)}
		out["custom_tool_call"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `{"type":"custom_tool_call","id":"ctc","call_id":"call_1","name":"lookup_order","input":"A-17","status":"completed"}`)}
		out["computer_call"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `{"type":"computer_call","id":"cc","call_id":"call_1","action":{"type":"screenshot"},"pending_safety_checks":[],"status":"completed"}`)}
		out["message part without type"] = Reply{Body: ResponsesOutput("r", "completed", nil, nil, `{"type":"message","id":"m","role":"assistant","status":"completed","content":[{"text":"OK.","annotations":[]}]}`)}
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

// BodyStart is how a malformed-answer error starts showing body: "empty body" for an empty or
// white-space body, else "body " and the quoted first 40 bytes without the closing quote.
func BodyStart(body string) string {
	if strings.TrimSpace(body) == "" {
		return "empty body"
	}
	q := strconv.Quote(body[:min(len(body), 40)])
	return "body " + q[:len(q)-1]
}

// CheckMalformed fails t unless r and err are what the adapter of provider returns for the
// malformed answer body: no response, a *chat.CallError of Provider provider, StatusCode 200,
// permanent, with no wait, whose cause matches provider.ErrMalformedResponse, whose text says
// the body is what (how the adapter names the API's answer, e.g. "not a chat completion") and
// shows the start of body (BodyStart).
func CheckMalformed(t *testing.T, r *chat.Response, err error, body, name, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; response %+v", r)
	}
	if r != nil {
		t.Errorf("a response with the error: %+v", r)
	}
	var ce *chat.CallError
	if !errors.As(err, &ce) || ce.Provider != name || ce.StatusCode != 200 || ce.Transient || ce.RetryAfter != 0 {
		t.Errorf("err = %#v, want a permanent *chat.CallError of %s with status 200", err, name)
	}
	if !errors.Is(err, provider.ErrMalformedResponse) {
		t.Errorf("err = %v, want provider.ErrMalformedResponse", err)
	}
	msg := err.Error()
	t.Log(msg)
	if prefix := name + ": status 200 (permanent): "; !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, what) {
		t.Errorf("err = %q, want it to start %q and say the body is %s", msg, prefix, what)
	}
	if want := BodyStart(body); !strings.Contains(msg, want) {
		t.Errorf("err = %q, want the start of the body %s", msg, want)
	}
}
