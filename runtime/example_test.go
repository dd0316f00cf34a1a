package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing/fstest"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
	"github.com/personagen/personagen/runtime/transcript"
)

// A persona built by hand, as a generated constructor builds one: a chain of a static text, a
// host resolver and the thread's history, assembled into the request for one inbound email.
func ExampleBuildRequest() {
	ctx := context.Background()
	threads := memory.New()
	earlier := history.Message{ThreadID: "t-1", MessageID: "m-1", Direction: history.Inbound,
		From: "Ada <ada@example.com>", Subject: "Order A-17", Text: "Where is my order?",
		Date: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	if _, err := threads.AppendMessage(ctx, earlier); err != nil {
		fmt.Println(err)
		return
	}
	persona := &runtime.Persona{
		Name: "shop-assistant",
		MessageChain: runtime.NewChain(
			runtime.Step{Kind: "load_text", Resolver: &runtime.LoadText{Text: "You answer questions about orders."}},
			runtime.Step{Kind: "use", Resolver: runtime.ResolverFunc(func(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
				return append(dst, chat.SystemMessage("The customer is on the gold tier.")), nil
			})},
			runtime.Step{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: threads}},
		),
	}
	req, err := runtime.BuildRequest(ctx, &runtime.Invocation{
		Persona: persona,
		Inbound: &history.Message{ThreadID: "t-1", MessageID: "m-2", Direction: history.Inbound,
			From: "Ada <ada@example.com>", Subject: "Re: Order A-17", Text: "Any news?"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(transcript.Print(req.Messages))
	// Output:
	// system:
	// You answer questions about orders.
	//
	// system:
	// The customer is on the gold tier.
	//
	// user:
	// From: Ada <ada@example.com>
	// To:
	// Cc:
	// Date: Mon, 02 Mar 2026 09:00:00 +0000
	// Subject: Order A-17
	//
	// Where is my order?
	//
	// user:
	// Any news?
}

// A failing resolver stops the chain with a *StepError naming the entry and its spec position.
func ExampleStepError() {
	persona := &runtime.Persona{
		Name: "shop-assistant",
		MessageChain: runtime.NewChain(runtime.Step{
			Kind:     "load_file",
			Pos:      "shop-assistant.persona.yaml:8:5",
			Resolver: &runtime.LoadFile{Path: "prompts/missing.md", Files: runtime.FSFiles(fstest.MapFS{})},
		}),
	}
	_, err := runtime.BuildRequest(context.Background(), &runtime.Invocation{
		Persona: persona,
		Inbound: &history.Message{ThreadID: "t-1", MessageID: "m-1", Text: "Hello"},
	})
	var se *runtime.StepError
	if errors.As(err, &se) {
		fmt.Println(se.Kind, se.Pos, errors.Is(err, fs.ErrNotExist))
	}
	fmt.Println(err)
	// Output:
	// load_file shop-assistant.persona.yaml:8:5 true
	// resolver #1 (load_file at shop-assistant.persona.yaml:8:5): file not found: "prompts/missing.md" (resolved to fs:prompts/missing.md)
}

// Clip shortens a text to a number of characters, marking the cut.
func ExampleClip() {
	fmt.Println(runtime.Clip("The order shipped on Monday from the Cologne warehouse.", 30))
	// Output:
	// The order shipped …[truncated]
}
