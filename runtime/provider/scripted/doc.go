// Package scripted is a deterministic chat.Model for tests and examples: it answers each
// call with the next Turn of a script (a text, tool calls, an error, a delay, a stop reason,
// usage) and records every request it received, so a test asserts on exactly what the model saw.
//
// Start from New, with the script's turns (Text, Calls, Fail, or a Turn literal):
//
//	m := scripted.New(
//		scripted.Calls(chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"order":"A-17"}`)}),
//		scripted.Text("Your order A-17 has shipped."),
//	)
//	// … run the persona with m …
//	reqs := m.Requests() // the two requests, in order
//
// A turn can also fail the way a provider's API fails, with the *chat.CallError a real adapter
// returns, so that a runner's handling of failures is tested without a network:
// Transient(429, time.Hour) is a rate limit asking to wait an hour, Transient(0, 0) a call that
// got no answer, Permanent(400, "…") a refusal of the request, Permanent(200, "…") a success
// answer that is not an answer (wrapping provider.ErrMalformedResponse). A cancelled or expired
// ctx is a transient CallError too.
//
// Like the real adapters, it refuses a request whose messages break chat.Validate, and with
// Provider set it refuses the settings that provider cannot take (provider.CheckFor), so a test
// fails where production would; these refusals before any call are plain errors.
package scripted
