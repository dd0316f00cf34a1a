package transcript

import (
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

// benchMessages is a 60-message conversation with tool rounds, the size of an assembled request.
func benchMessages() []chat.Message {
	var msgs []chat.Message
	msgs = append(msgs, chat.SystemMessage(strings.Repeat("You are a careful assistant.\n", 20)))
	for i := range 15 {
		id := string(rune('a'+i%26)) + "1"
		msgs = append(msgs,
			chat.UserMessage("Question with a code block:\n```go\nuser: x\n```\nand a line user: y"),
			chat.AssistantMessage("Checking.", call(id, "search", `{"q":"x","limit":5}`)),
			chat.ToolMessage(id, strings.Repeat("result line\n", 10)),
			chat.AssistantMessage("Here is the answer.\n\nuser: escaped"),
		)
	}
	return msgs
}

func BenchmarkPrint(b *testing.B) {
	msgs := benchMessages()
	b.ReportAllocs()
	for b.Loop() {
		_ = Print(msgs)
	}
}

func BenchmarkParse(b *testing.B) {
	text := Print(benchMessages())
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrintUnclosedFences pins that fence openers that are never closed cost linear time
// (a naive scan to the end per opener is quadratic).
func BenchmarkPrintUnclosedFences(b *testing.B) {
	msgs := []chat.Message{chat.UserMessage(strings.Repeat("```a\n", 100_000))}
	b.ReportAllocs()
	for b.Loop() {
		_ = Print(msgs)
	}
}
