package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
)

// An in-memory thread: two messages appended, a tool round recorded for the first, and the
// thread read back in the order it was received, whatever the messages' Date headers say.
func ExampleNew() {
	ctx := context.Background()
	src := memory.New()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	q, _ := src.AppendMessage(ctx, history.Message{ThreadID: "t-1", MessageID: "q1", Direction: history.Inbound,
		From: "ada@example.com", Date: at.Add(3 * time.Hour), Text: "Has A-17 shipped?"}) // a clock three hours fast
	_ = src.RecordToolUses(ctx, q, history.ToolUse{RunID: "run-1", ToolCallID: "c1", ToolName: "lookup_order",
		Arguments: `{"number":"A-17"}`, Result: "shipped on Monday", HasResult: true, Succeeded: true})
	_, _ = src.AppendMessage(ctx, history.Message{ThreadID: "t-1", MessageID: "r1", Direction: history.Outbound,
		From: "shop@example.com", Date: at.Add(5 * time.Minute), Text: "Yes, on Monday."})

	w, err := src.History(ctx, history.Query{ThreadID: "t-1", ToolUses: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range w.Messages {
		fmt.Println(m.Seq, m.Direction, m.MessageID, len(m.ToolUses))
	}
	// Output:
	// 1 inbound q1 1
	// 3 outbound r1 0
}
