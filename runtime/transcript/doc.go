// Package transcript reads and writes the transcript format, a human-readable text form of a
// message list: few-shot files for a persona (the load_transcript resolver), golden test
// fixtures, and an assembled request printed for review. Start from Parse (text to
// []chat.Message, or a *ParseError naming the line), Print (the inverse: Parse(Print(msgs))
// equals msgs for every well-formed list, and the same list always prints the same bytes) and
// Load (the load_transcript resolver, reading a file through runtime.Files).
//
// A transcript looks like this:
//
//	system:
//	You answer billing questions for Acme.
//
//	user: Why was I charged twice?
//
//	assistant:
//	Let me look at your invoices.
//	function_call: {"name":"list_invoices","arguments":{"month":"2024-05"},"id":"call_1"}
//
//	function_call_output: {"id":"call_1","content":"INV-7 $20, INV-8 $20 (duplicate)"}
//
// The format — its eight header keywords, the escape and fence rules that keep any text exact,
// tool calls, results, provider state and parts — is specified in docs/transcript.md in the
// module's repository. It re-creates scout-ai's chat text format (Chat.parse / Chat.print, seed
// 002) for personagen's four roles.
package transcript
