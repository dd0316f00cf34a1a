package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/provider/scripted"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/tool"
)

// OrderQuery is the input of lookup_order.
type OrderQuery struct {
	Number string `json:"number"`
}

// A reply run: the runner answers a stored email with a scripted model that calls a tool once,
// records the round and the reply, and finishes the run. Calling Reply again for the same
// message — a redelivery — returns the finished run without calling the model.
func ExampleRunner_Reply() {
	ctx := context.Background()
	st, err := store.Open(ctx, ":memory:")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	lookup := tool.Must(tool.New(tool.Def{
		Name:        "lookup_order",
		Description: "Look up an order by its number.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"string"}},"required":["number"],"additionalProperties":false}`),
		Idempotent:  true,
	}, func(ctx context.Context, inv *runtime.Invocation, in OrderQuery) (string, error) {
		return "order " + in.Number + ": shipped on Monday", nil
	}))
	persona := &runtime.Persona{
		Name:         "shop-assistant",
		Tools:        []runtime.Tool{lookup},
		MessageChain: runtime.NewChain(runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "You answer questions about orders."}}),
	}
	persona.Mailbox.Address = "shop@example.com"

	in := store.Message{Mailbox: "shop-assistant", Message: history.Message{ThreadID: "t-1", MessageID: "q1@example.com",
		Direction: history.Inbound, From: "Ada <ada@example.com>", Subject: "A-17", Text: "Has A-17 shipped?",
		Date: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}}
	a, err := st.AppendMessage(ctx, in)
	if err != nil {
		fmt.Println(err)
		return
	}
	in.Seq = a.Seq

	model := scripted.New(
		scripted.Calls(chat.ToolCall{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)}),
		scripted.Text("Yes: A-17 shipped on Monday."),
	)
	runner := &agent.Runner{Store: st, Model: model, Holder: "worker-1", Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return time.Date(2026, 3, 2, 9, 1, 0, 0, time.UTC) }}
	for range 2 {
		res, err := runner.Reply(ctx, agent.Inbound{Persona: persona, Message: in})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s %s: %q, %d model calls, already finished: %v\n", res.Run.Key, res.Run.Status, res.Text, len(res.Turns), res.AlreadyFinished)
		fmt.Printf("reply %s to %s, in reply to %s\n", res.Reply.MessageID, res.Reply.To[0], res.Reply.InReplyTo)
	}
	fmt.Println(len(model.Requests()), "requests sent")
	// Output:
	// reply:shop-assistant/6dd6691600689a7cde4cb565b8804e2c succeeded: "Yes: A-17 shipped on Monday.", 2 model calls, already finished: false
	// reply a0461c230b156ef68df72b7268660d9f@example.com to Ada <ada@example.com>, in reply to q1@example.com
	// reply:shop-assistant/6dd6691600689a7cde4cb565b8804e2c succeeded: "Yes: A-17 shipped on Monday.", 2 model calls, already finished: true
	// reply a0461c230b156ef68df72b7268660d9f@example.com to Ada <ada@example.com>, in reply to q1@example.com
	// 2 requests sent
}
