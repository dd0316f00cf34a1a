package transcript

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/personagen/personagen/internal/golden"
	"github.com/personagen/personagen/runtime/chat"
)

func partsMessage(r chat.Role, parts ...chat.Part) chat.Message {
	return chat.Message{Role: r, Parts: parts}
}

func call(id, name, input string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}
}

// printCases are the message lists whose printed form is pinned in testdata/print/<name>.golden.
var printCases = map[string][]chat.Message{
	"conversation": {
		chat.SystemMessage("You answer billing questions for Acme."),
		chat.UserMessage("Why was I charged twice?"),
		chat.AssistantMessage("Let me look at your invoices.", call("call_1", "list_invoices", `{ "month": "2024-05" }`)),
		chat.ToolMessage("call_1", "INV-7 $20, INV-8 $20 (duplicate)"),
		chat.AssistantMessage("INV-8 duplicates INV-7; I have asked billing to refund it."),
	},
	"escapes": {
		chat.UserMessage("user:\n\\user:\nassistant: hi\nfoo_bar: x\nx1: y\nfunction_call: {}\npart: x\ntool:\n\\foo\n\\\n~~~\nUser: x"),
		chat.AssistantMessage("\n\nleading and trailing blank lines\n\n"),
		chat.UserMessage("\n"),
		chat.UserMessage(" \r"),
	},
	"fences": {
		chat.AssistantMessage("Balanced:\n```go\nuser:\n\\user:\n```\nUnclosed:\n~~~\nsystem:"),
		chat.UserMessage("````\n```\nstill inside\n````\n```x```\nuser:"),
	},
	"parts": {
		partsMessage(chat.RoleUser, chat.TextPart("Here is the invoice."),
			chat.DocumentPart("inv.pdf", "application/pdf", []byte("%PDF-1.4")),
			chat.TextPart("What is the total?"),
			chat.TextPart("And the due date?"),
			chat.ImagePart("image/png", []byte{0x89, 'P', 'N', 'G'}),
			chat.TextPart(""),
		),
		{Role: chat.RoleTool, ToolCallID: "call_9", Parts: []chat.Part{chat.ImagePart("image/png", []byte{1, 2})}},
	},
	"tool_rounds": {
		chat.AssistantMessage("", call("a", "search", `{"q":"<b>&"}`), call("b", "fetch", "")),
		chat.ToolMessage("a", "line one\nline two"),
		chat.ToolMessage("b", ""),
		chat.AssistantMessage("Two results.", call("a", "search", `{}`)),
		chat.ToolMessage("a", "again"),
		chat.SystemMessage(""),
		chat.UserMessage(""),
	},
	"errors_and_state": {
		chat.UserMessage("Refund INV-8."),
		{Role: chat.RoleAssistant, Text: "Checking.", ToolCalls: []chat.ToolCall{call("t1", "refund", `{"invoice": "INV-8"}`)},
			State: []chat.ProviderState{
				{Provider: "anthropic", Data: json.RawMessage(`{"type": "thinking", "thinking": "The user wants a refund.", "signature": "c2ln"}`)},
				{Provider: "openai-responses", Data: json.RawMessage(`{"type":"reasoning","summary":[],"encrypted_content":"ZW5j"}`)},
			}},
		chat.ToolErrorMessage("t1", "refund service unavailable"),
		{Role: chat.RoleAssistant, Text: "I could not refund it yet.", State: []chat.ProviderState{{Provider: "anthropic"}}},
	},
}

func TestPrintGolden(t *testing.T) {
	for name, msgs := range printCases {
		t.Run(name, func(t *testing.T) {
			got := Print(msgs)
			checkGolden(t, filepath.Join("testdata", "print", name+".golden"), got)
			back, err := Parse(got)
			if err != nil {
				t.Fatalf("Parse(Print): %v", err)
			}
			if !slices.EqualFunc(back, msgs, chat.Message.Equal) {
				t.Fatalf("Parse(Print) differs:\nwant %s\ngot  %s", dump(msgs), dump(back))
			}
		})
	}
}

// TestParseGolden parses every testdata/parse/<name>.chat and compares the messages with
// <name>.json (the messages as encoding/json writes them).
func TestParseGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "parse", "*.chat"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no parse cases: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".chat"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := Parse(string(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			out, err := json.MarshalIndent(msgs, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, strings.TrimSuffix(f, ".chat")+".json", string(out)+"\n")
			checkRoundTrip(t, msgs)
		})
	}
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	golden.Check(t, path, []byte(got))
}

// TestPrintEscapesExactlyTheLinesParseWouldMisread pins, for one text line (or a few), the
// block Print writes under "user:" and that the text comes back.
func TestPrintEscapesExactlyTheLinesParseWouldMisread(t *testing.T) {
	tests := []struct {
		name, text, block string
	}{
		{"plain line as is", "hello", "hello\n"},
		{"role header", "user:", "\\user:\n"},
		{"inline role header", "assistant: hi", "\\assistant: hi\n"},
		{"system header", "system:x", "\\system:x\n"},
		{"reserved tool header", "tool: x", "\\tool: x\n"},
		{"function_call keyword", "function_call: {}", "\\function_call: {}\n"},
		{"function_call_output keyword", "function_call_output:", "\\function_call_output:\n"},
		{"part keyword", "part: {}", "\\part: {}\n"},
		{"provider_state keyword", "provider_state: {}", "\\provider_state: {}\n"},
		{"provider_state prefix is not a header", "provider_states: x", "provider_states: x\n"},
		{"unknown word is not a header", "foo_bar: x", "foo_bar: x\n"},
		{"word with digit is not a header", "x1: y", "x1: y\n"},
		{"capitalised role is not a header", "User: x", "User: x\n"},
		{"indented role is not a header", " user:", " user:\n"},
		{"keyword prefix is not a header", "function_call_output_x: y", "function_call_output_x: y\n"},
		{"escaped header gains a backslash", "\\user:", "\\\\user:\n"},
		{"double escaped header", "\\\\user: x", "\\\\\\user: x\n"},
		{"backslash before ordinary text as is", "\\foo", "\\foo\n"},
		{"lone backslash", "\\", "\\\\\n"},
		{"backslash and blanks", "\\ \t", "\\\\ \t\n"},
		{"escaped fence", "\\```", "\\\\```\n"},
		{"unclosed backtick fence", "```go\nuser:", "\\```go\n\\user:\n"},
		{"unclosed tilde fence", "~~~", "\\~~~\n"},
		{"balanced fence verbatim", "```\nuser:\n\\user:\n```", "```\nuser:\n\\user:\n```\n"},
		{"shorter closer does not close", "````\n```", "\\````\n\\```\n"},
		{"inline code is no fence", "```x```", "```x```\n"},
		{"two backticks are no fence", "``", "``\n"},
		{"leading blank line", "\nx", "\\\nx\n"},
		{"trailing newline", "x\n", "x\n\\\n"},
		{"interior blank line as is", "a\n\nb", "a\n\nb\n"},
		{"blank edge with spaces", "  \nx\n\t", "\\  \nx\n\\\t\n"},
		{"only newlines", "\n\n", "\\\n\n\\\n"},
		{"carriage returns kept", "a\r\nb\r", "a\r\nb\r\n"},
		{"lone carriage return", "\r", "\\\r\n"},
		{"invalid UTF-8 as is", "\xff\xfe", "\xff\xfe\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs := []chat.Message{chat.UserMessage(tt.text)}
			got := Print(msgs)
			if want := "user:\n" + tt.block; got != want {
				t.Errorf("Print = %q, want %q", got, want)
			}
			checkRoundTrip(t, msgs)
		})
	}
}

// TestParseReadsHandWrittenForms pins the forgiving rules for files written by hand.
func TestParseReadsHandWrittenForms(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []chat.Message
	}{
		{"empty file", "", nil},
		{"blank file", "\n \n\t\n", nil},
		{"inline headers", "system: Be brief.\nuser:   hi  \nassistant:hello", []chat.Message{
			chat.SystemMessage("Be brief."), chat.UserMessage("hi"), chat.AssistantMessage("hello")}},
		{"inline header continued by lines", "user: first\nsecond\n\n", []chat.Message{chat.UserMessage("first\nsecond")}},
		{"block with surrounding blank lines", "\n\nuser:\n\n  \nhi\n\nthere\n\n\nassistant:\n\nok\n", []chat.Message{
			chat.UserMessage("hi\n\nthere"), chat.AssistantMessage("ok")}},
		{"CRLF file", "user:\r\nhi\r\nthere\r\n\r\nassistant: ok\r\n", []chat.Message{
			chat.UserMessage("hi\nthere"), chat.AssistantMessage("ok")}},
		{"leading byte order mark dropped", "\ufeffuser: hi\n", []chat.Message{chat.UserMessage("hi")}},
		{"byte order mark and CRLF", "\ufeffsystem:\r\nBe brief.\r\n", []chat.Message{chat.SystemMessage("Be brief.")}},
		{"byte order mark inside text kept", "user:\n\ufeffhi\n", []chat.Message{chat.UserMessage("\ufeffhi")}},
		{"mixed line breaks keep carriage returns", "user:\r\nhi\r\nthere\n", []chat.Message{chat.UserMessage("hi\r\nthere")}},
		{"header without content", "user:\nassistant:", []chat.Message{chat.UserMessage(""), chat.AssistantMessage("")}},
		{"escaped lines", "user:\n\\user: x\n\\\\\n\\foo\n\\", []chat.Message{chat.UserMessage("user: x\n\\\n\\foo\n")}},
		{"fence protects headers", "assistant:\n~~~\nuser:\n\\x:\n\\user:\n~~~~\nuser: next", []chat.Message{
			chat.AssistantMessage("~~~\nuser:\n\\x:\n\\user:\n~~~~"), chat.UserMessage("next")}},
		{"inline text is literal", "user: \\user: ```", []chat.Message{chat.UserMessage("\\user: ```")}},
		{"calls with text stay one message", "assistant:\nChecking.\n\nfunction_call: {\"name\":\"f\",\"arguments\":{\"a\": 1},\"id\":\"1\"}\n\nfunction_call: {\"name\":\"g\",\"id\":\"2\"}\nfunction_call_output: {\"id\":\"1\",\"content\":\"r1\"}\nfunction_call_output: {\"id\":\"2\"}\n",
			[]chat.Message{
				chat.AssistantMessage("Checking.", call("1", "f", `{"a":1}`), call("2", "g", `{}`)),
				chat.ToolMessage("1", "r1"), chat.ToolMessage("2", ""),
			}},
		{"arguments as a JSON string", `assistant: function_call: x` + "\n" + `function_call: {"name":"f","arguments":"{\"q\":\"x\"}","id":"1"}`,
			[]chat.Message{chat.AssistantMessage("function_call: x", call("1", "f", `{"q":"x"}`))}},
		{"null arguments and content", "assistant:\nfunction_call: {\"name\":\"f\",\"arguments\":null,\"id\":\"1\"}\nfunction_call_output: {\"id\":\"1\",\"content\":null}",
			[]chat.Message{chat.AssistantMessage("", call("1", "f", `{}`)), chat.ToolMessage("1", "")}},
		{"parts between text runs", "user:\nlook:\n\npart: {\"type\":\"image\",\"media_type\":\"image/png\",\"data\":\"AQI=\"}\n\nwhat is it?\n",
			[]chat.Message{partsMessage(chat.RoleUser, chat.TextPart("look:"),
				chat.ImagePart("image/png", []byte{1, 2}), chat.TextPart("what is it?"))}},
		{"tool result with parts", `function_call_output: {"id":"c","content":[{"type":"text","text":"t"},{"type":"document","filename":"a.pdf","media_type":"application/pdf","data":"JVBE"}]}`,
			[]chat.Message{{Role: chat.RoleTool, ToolCallID: "c", Parts: []chat.Part{
				chat.TextPart("t"), chat.DocumentPart("a.pdf", "application/pdf", []byte("%PD"))}}}},
		{"error result and provider state", "assistant:\nfunction_call: {\"name\":\"f\",\"id\":\"1\"}\nprovider_state: {\"provider\":\"anthropic\",\"data\":{\"a\": 1}}\n\nprovider_state: {\"provider\":\"x\"}\nfunction_call_output: {\"id\":\"1\",\"content\":\"boom\",\"is_error\":true}",
			[]chat.Message{
				{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call("1", "f", "{}")}, State: []chat.ProviderState{
					{Provider: "anthropic", Data: json.RawMessage(`{"a":1}`)}, {Provider: "x", Data: json.RawMessage("null")}}},
				chat.ToolErrorMessage("1", "boom")}},
		{"is_error false is no error", `function_call_output: {"id":"1","content":"ok","is_error":false}`, []chat.Message{chat.ToolMessage("1", "ok")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.text)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !slices.EqualFunc(got, tt.want, chat.Message.Equal) {
				t.Fatalf("Parse:\ngot  %s\nwant %s", dump(got), dump(tt.want))
			}
			checkRoundTrip(t, got)
		})
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	tests := []struct {
		name, text, want string
	}{
		{"text before the first header", "\nhello\nuser: hi", "line 2: text before the first role header (system:, user: or assistant:)"},
		{"escaped line before the first header", "\\user:", "line 1: text before the first role header (system:, user: or assistant:)"},
		{"text after a tool output", "function_call_output: {\"id\":\"1\"}\n\nmore", "line 3: text after the function_call_output on line 1; start a new message with a role header"},
		{"tool header", "user: x\ntool: r", `line 2: "tool:" is not a message header; write a tool result as function_call_output: {"id":…,"content":…}`},
		{"function_call in a user message", "user:\nfunction_call: {\"name\":\"f\",\"id\":\"1\"}", "line 2: function_call outside an assistant message; put it under an assistant: header"},
		{"function_call before any header", "function_call: {\"name\":\"f\",\"id\":\"1\"}", "line 1: function_call outside an assistant message; put it under an assistant: header"},
		{"function_call after a tool output", "assistant:\nfunction_call: {\"name\":\"f\",\"id\":\"1\"}\nfunction_call_output: {\"id\":\"1\"}\nfunction_call: {\"name\":\"f\",\"id\":\"2\"}", "line 4: function_call outside an assistant message; put it under an assistant: header"},
		{"function_call invalid JSON", "assistant:\nfunction_call: {\"name\":", "line 2: function_call: invalid JSON: unexpected EOF"},
		{"function_call not an object", "assistant:\nfunction_call: [1]", "line 2: function_call: expected a JSON object"},
		{"function_call block form", "assistant:\nfunction_call:\n{}", "line 2: function_call: expected a JSON object on the same line, found nothing"},
		{"function_call unknown key", "assistant:\nfunction_call: {\"name\":\"f\",\"id\":\"1\",\"type\":\"x\"}", `line 2: function_call: invalid JSON: json: unknown field "type"`},
		{"function_call without name", "assistant:\nfunction_call: {\"id\":\"1\"}", `line 2: function_call: missing "name"`},
		{"function_call without id", "assistant:\nfunction_call: {\"name\":\"f\"}", `line 2: function_call: missing "id"`},
		{"arguments not an object", "assistant:\nfunction_call: {\"name\":\"f\",\"arguments\":[1],\"id\":\"1\"}", `line 2: function_call: "arguments" must be a JSON object (a string holding one is accepted)`},
		{"arguments string not JSON", "assistant:\nfunction_call: {\"name\":\"f\",\"arguments\":\"x\",\"id\":\"1\"}", `line 2: function_call: "arguments" must be a JSON object (a string holding one is accepted)`},
		{"trailing data after JSON", "assistant:\nfunction_call: {\"name\":\"f\",\"id\":\"1\"} x", "line 2: function_call: invalid JSON: unexpected data after the object"},
		{"text after calls", "assistant:\nfunction_call: {\"name\":\"f\",\"id\":\"1\"}\n\nmore text", "line 4: text after function_call lines; start a new message with a role header"},
		{"part after calls", "assistant:\nfunction_call: {\"name\":\"f\",\"id\":\"1\"}\npart: {\"type\":\"text\"}", "line 3: part after function_call lines; parts come before an assistant's calls"},
		{"tool output invalid JSON", "user: x\n\nfunction_call_output: {\"id\": 1}", "line 3: function_call_output: invalid JSON: json: cannot unmarshal number into Go struct field wireOutput.id of type string"},
		{"tool output without id", "function_call_output: {\"content\":\"x\"}", `line 1: function_call_output: missing "id"`},
		{"tool output content number", "function_call_output: {\"id\":\"1\",\"content\":5}", `line 1: function_call_output: "content" must be a string or a list of parts`},
		{"tool output bad part", "function_call_output: {\"id\":\"1\",\"content\":[{\"type\":\"video\"}]}", `line 1: function_call_output: "content" part 1: unknown part type "video" (use text, image or document)`},
		{"part outside a message", "part: {\"type\":\"text\"}", "line 1: part outside a message; put it under a system:, user: or assistant: header"},
		{"part without type", "user:\npart: {}", `line 2: part: missing "type" (text, image or document)`},
		{"part bad base64", "user:\npart: {\"type\":\"image\",\"data\":\"!!\"}", "line 2: part: invalid JSON: illegal base64 data at input byte 0"},
		{"provider_state in a user message", "user:\nprovider_state: {\"provider\":\"a\"}", "line 2: provider_state outside an assistant message; put it under an assistant: header"},
		{"provider_state after a tool output", "assistant:\nfunction_call: {\"name\":\"f\",\"id\":\"1\"}\nfunction_call_output: {\"id\":\"1\"}\nprovider_state: {\"provider\":\"a\"}", "line 4: provider_state outside an assistant message; put it under an assistant: header"},
		{"provider_state without provider", "assistant:\nprovider_state: {\"data\":1}", `line 2: provider_state: missing "provider"`},
		{"provider_state unknown key", "assistant:\nprovider_state: {\"provider\":\"a\",\"id\":\"x\"}", `line 2: provider_state: invalid JSON: json: unknown field "id"`},
		{"provider_state block form", "assistant:\nprovider_state:\n{}", "line 2: provider_state: expected a JSON object on the same line, found nothing"},
		{"text after provider_state", "assistant:\nok\nprovider_state: {\"provider\":\"a\"}\nmore", "line 4: text after provider_state lines; start a new message with a role header"},
		{"function_call after provider_state", "assistant:\nprovider_state: {\"provider\":\"a\"}\nfunction_call: {\"name\":\"f\",\"id\":\"1\"}", "line 3: function_call after provider_state lines; an assistant's calls come before its provider state"},
		{"part after provider_state", "assistant:\nprovider_state: {\"provider\":\"a\"}\npart: {\"type\":\"text\"}", "line 3: part after provider_state lines; parts come before an assistant's provider state"},
		{"tool output is_error not a boolean", `function_call_output: {"id":"1","is_error":"yes"}`, "line 1: function_call_output: invalid JSON: json: cannot unmarshal string into Go struct field wireOutput.is_error of type bool"},
		{"unclosed fence", "user:\nok\n```go\nuser:\n", "line 3: code fence ``` opened here is never closed"},
		{"unclosed longer fence", "user:\n~~~~\n~~~\n", "line 2: code fence ~~~~ opened here is never closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.text)
			if err == nil {
				t.Fatalf("Parse succeeded, want %q", tt.want)
			}
			pe, ok := err.(*ParseError)
			if !ok {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q\nwant    %q", err.Error(), tt.want)
			}
			if !strings.HasPrefix(tt.want, "line ") || pe.Line < 1 {
				t.Errorf("line = %d", pe.Line)
			}
		})
	}
}
