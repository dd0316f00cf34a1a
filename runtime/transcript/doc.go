// Package transcript reads and writes the transcript format, a human-readable text form of a
// message list: few-shot files for a persona (the load_transcript resolver), golden test
// fixtures, and an assembled request printed for review. Start from Parse (text to
// []chat.Message, or a *ParseError naming the line), Print (the inverse: Parse(Print(msgs))
// equals msgs for every well-formed list, and the same list always prints the same bytes) and
// Load (the load_transcript resolver, reading a file through runtime.Files).
//
// A transcript looks like this:
//
//	system: You answer questions about orders.
//
//	user: Has A-17 shipped?
//
//	assistant:
//	function_call: {"name":"lookup_order","arguments":{"number":"A-17"},"id":"c1"}
//
//	function_call_output: {"id":"c1","content":"shipped on Monday"}
//
// The format — its eight header keywords, the escape and fence rules that keep any text exact,
// tool calls, results, provider state and parts — is specified in docs/transcript.md in the
// module's repository. It re-creates scout-ai's chat text format (Chat.parse / Chat.print, seed
// 002) for personagen's four roles.
package transcript
