package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transcript"
)

// A store opened on the embedded SQLite default, a thread appended to it — a message, a second
// delivery of the same message, the tool round of the run that answered it, the reply — and
// replayed by the thread_history resolver as the next run's request would hold it.
func ExampleOpen() {
	ctx := context.Background()
	st, err := store.Open(ctx, ":memory:") // or a file ("app.db"), or a MySQL DSN
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	question := store.Message{Mailbox: "shop", Message: history.Message{ThreadID: "t-1", MessageID: "q1@example.com",
		Direction: history.Inbound, From: "Ada <ada@example.com>", To: []string{"shop@example.com"},
		Subject: "A-17", Text: "Has A-17 shipped?", Date: at}}
	var seq int64
	for range 2 { // a redelivery stores nothing and returns the stored seq
		a, err := st.AppendMessage(ctx, question)
		fmt.Println(a.Seq, a.Outcome, err)
		seq = a.Seq
	}
	_, err = st.RecordRound(ctx, store.Round{
		Owner: store.Owner{Type: store.OwnerMessage, ID: seq}, Persona: "shop-assistant", RunID: "run-1",
		Calls:   []chat.ToolCall{{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{"number":"A-17"}`)}},
		Results: []store.Result{{Content: "shipped on Monday", Succeeded: true}},
	})
	fmt.Println(err)
	reply := store.Message{Mailbox: "shop", Message: history.Message{ThreadID: "t-1", MessageID: "r1@example.com",
		InReplyTo: "q1@example.com", Direction: history.Outbound, From: "shop@example.com",
		To: []string{"Ada <ada@example.com>"}, Subject: "Re: A-17", Text: "Yes, on Monday.", Date: at.Add(time.Minute)}}
	if _, err := st.AppendMessage(ctx, reply); err != nil {
		fmt.Println(err)
		return
	}

	replay := &runtime.ThreadHistory{Source: st}
	msgs, err := replay.Resolve(ctx, &runtime.Invocation{Inbound: &history.Message{ThreadID: "t-1", MessageID: "q2@example.com"}}, nil)
	fmt.Print(transcript.Print(msgs), err, "\n")
	// Output:
	// 1 stored <nil>
	// 1 already stored <nil>
	// <nil>
	// user:
	// From: Ada <ada@example.com>
	// To: shop@example.com
	// Cc:
	// Date: Mon, 02 Mar 2026 09:00:00 +0000
	// Subject: A-17
	//
	// Has A-17 shipped?
	//
	// assistant:
	// function_call: {"name":"lookup_order","arguments":{"number":"A-17"},"id":"c1"}
	//
	// function_call_output: {"id":"c1","content":"shipped on Monday"}
	//
	// assistant:
	// From: shop@example.com
	// To: Ada <ada@example.com>
	// Cc:
	// Date: Mon, 02 Mar 2026 09:01:00 +0000
	// Subject: Re: A-17
	//
	// Yes, on Monday.
	// <nil>
}
