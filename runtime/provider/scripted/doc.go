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
// Like the real adapters, it refuses a request whose messages break chat.Validate, and with
// Provider set it refuses the settings that provider cannot take (provider.CheckFor), so a test
// fails where production would.
package scripted
