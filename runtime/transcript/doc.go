// Package transcript reads and writes the transcript format: a human-readable text form of a
// message list, used for few-shot files (the load_transcript resolver, Load), golden test
// fixtures, and printing an assembled request for review. It re-creates scout-ai's chat text
// format (Chat.parse / Chat.print, seed 002) for personagen's four roles, with an escape rule
// that makes Print and Parse exact inverses.
//
// # Example
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
//	assistant:
//	INV-8 duplicates INV-7; I have asked billing to refund it.
//
// reads as a system message, a user message, an assistant message with text and one tool call,
// the tool message answering call_1, and a final assistant message.
//
// # Headers
//
// A header is a line that starts at column 0 with one of eight keywords immediately followed by
// a colon: system, user, assistant (message headers), function_call, function_call_output,
// part, provider_state (JSON lines), and tool (reserved: an error, since tool results are
// function_call_output lines). Nothing else is a header: "foo_bar: x", "x1: y", "User: x",
// " user:" and "meta: x" are ordinary text.
//
// A message header alone on its line ("user:") starts a block: the lines below, up to the next
// header, are the message's text. With text after the colon ("user: hello") it is the inline
// form: that text, trimmed of spaces, tabs and '\r', is the first line of the message and may be
// continued by lines below. Inline text is taken literally (no fences, no escapes).
//
// # Text
//
// A message's text is its lines joined by "\n". Blank lines (only spaces, tabs, '\r') at the
// start and end of a block are dropped, so messages may be separated and padded by blank lines
// freely. Three rules keep any text exact:
//
//   - Escapes. A line starting with '\' whose remainder, after all its leading backslashes, is a
//     header, a blank line or a fence opener, loses exactly one backslash: "\user:" is the text
//     line "user:", "\\user:" is "\user:", a lone "\" is a kept empty line, "\```" is a literal
//     "```" that opens no fence. Any other line starting with a backslash ("\foo", "\d+") is
//     text as is.
//   - Fences. A line starting with three or more '`' (whose rest has no '`') or three or more
//     '~' opens a fenced code block; the first later line of at least as many of the same
//     character followed only by blanks closes it. Lines inside are text verbatim: no headers,
//     no escapes. A fence never closed is an error naming the line that opened it.
//   - Line breaks. A file whose line breaks are all "\r\n" is read as if they were "\n";
//     otherwise '\r' is text (Print's output always holds a bare "\n", so a text's "\r\n"
//     survives).
//
// Print writes text as block lines and escapes exactly the lines Parse would misread: header
// lines, backslash lines of the escape shape, fence openers that the text never closes, and a
// blank first or last line. So the text "user:\n" prints as the lines "\user:" and "\".
//
// # Tool calls and results
//
// Inside an assistant message, after its text, each tool call is one line
//
//	function_call: {"name":"lookup","arguments":{"q":"x"},"id":"call_1"}
//
// and the text and calls stay one message. "arguments" is a JSON object; absent or null means
// {}, and a JSON string holding an object (the OpenAI wire form) is accepted. Text or parts
// after the calls are an error. A tool message is one line
//
//	function_call_output: {"id":"call_1","content":"result text"}
//
// whose "content" is a string, or a list of part objects for a result with parts; absent or
// null means empty text. "is_error": true marks the result of a tool that failed
// (chat.Message.IsError); absent means false. A function_call_output ends any open message
// and is a message by itself; text after it needs a new header. Unknown keys in any JSON line
// are errors.
//
// # Provider state
//
// An assistant message that carries provider state (chat.ProviderState: thinking blocks,
// reasoning items) ends with one line per item, after its function_call lines:
//
//	provider_state: {"provider":"anthropic","data":{"type":"thinking","thinking":"…","signature":"…"}}
//
// "provider" is required; "data" is any JSON value (absent means null). Nothing but more
// provider_state lines may follow in the same message.
//
// # Parts
//
// A message whose content is a list of parts prints its non-text parts as one line each,
// between its text runs:
//
//	user:
//	Here is the invoice.
//	part: {"type":"document","filename":"inv.pdf","media_type":"application/pdf","data":"JVBERi0xLjQ="}
//	What is the total?
//
// The object has "type" (text, image or document), and "text", "filename", "media_type" and
// "data" (standard base64 of the bytes) when set. Each text run between part lines is trimmed
// of blank edge lines and becomes a text part; a message with any part line has parts as its
// content, one without has text. A text part that is empty, or follows another text part, is
// printed as a part line with "type":"text" so the two do not merge.
//
// # Round trip
//
// Parse(Print(msgs)) equals msgs (message by message under chat.Message.Equal) for every list in Print's domain
// (valid roles; calls and state only on assistant messages, ToolCallID and IsError only on tool
// messages; inputs that are JSON objects and state data that is JSON; strings inside JSON lines
// valid UTF-8; see Print). Text lines carry any
// bytes, invalid UTF-8 included. Print is deterministic and canonical: printing a parsed print
// gives the same bytes. FuzzRoundTrip and FuzzParse pin both properties.
package transcript
