package fakeapi_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/fakeapi"
)

// The same long system prompt sent twice with a cache breakpoint after it: the first call
// writes the prefix to the fake's prompt cache, the second reads it, as the bill would show.
func Example() {
	srv := fakeapi.New(fakeapi.Anthropic)
	defer srv.Close()
	model := anthropic.New(option.WithBaseURL(srv.URL), option.WithAPIKey("test"))
	req := &chat.Request{
		Model: chat.ModelSettings{Name: "claude-sonnet-4-5", MaxTokens: 256},
		Messages: []chat.Message{
			chat.SystemMessage(strings.Repeat("You answer customer email for Acme Tracker, politely and briefly. ", 150)),
			chat.UserMessage("Where is my order A-17?"),
		},
		Cache: &chat.CachePlan{Breakpoints: []chat.CacheBreakpoint{{End: 1, Scope: chat.CachePersona}}},
	}
	for range 2 {
		srv.Queue(fakeapi.Answer{Text: "It shipped on Monday."})
		resp, err := model.Generate(context.Background(), req)
		if err != nil {
			fmt.Println(err)
			return
		}
		u := resp.Usage
		fmt.Printf("%s: cache write %t, cache read %t\n", resp.Message.Text, u.CacheWriteTokens > 0, u.CacheReadTokens > 0)
	}
	// Output:
	// It shipped on Monday.: cache write true, cache read false
	// It shipped on Monday.: cache write false, cache read true
}
