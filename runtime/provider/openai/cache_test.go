package openai

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/personagen/personagen/internal/golden"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
)

// cacheRequest is a request with a plan: persona prefix after message 2 (1 hour), a thread
// prefix after message 5 (the history's last tool result), and the tail.
func cacheRequest(model string) *chat.Request {
	return &chat.Request{
		Model: chat.ModelSettings{Name: model},
		Messages: []chat.Message{
			chat.SystemMessage("You answer support email."), chat.SystemMessage("Policy: refunds up to EUR 100."),
			chat.UserMessage("Where is A-17?"),
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call("c1", "lookup", `{"q":"A-17"}`)}},
			{Role: chat.RoleTool, ToolCallID: "c1", Text: "shipped"},
			chat.UserMessage("Thanks, and A-18?"),
		},
		Tools: []chat.ToolDefinition{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Cache: &chat.CachePlan{Key: "support-agent/0123456789abcdef01234567", Tail: true, Breakpoints: []chat.CacheBreakpoint{
			{End: 2, Scope: chat.CachePersona, TTL: time.Hour}, {End: 5, Scope: chat.CacheThread, TTL: time.Hour}}},
	}
}

// TestCachePlanOnTheWire pins what each OpenAI adapter sends of a cache plan (golden bodies,
// accepted by the strict servers): for gpt-4.1 the prompt_cache_key and the 24-hour retention
// the plan's hour asks for, nothing else; for gpt-5.6 the key, explicit breakpoints on the last
// system part and on the tool result (12-hour lifetime on Chat, prompt_cache_options.ttl on
// Responses), no retention.
func TestCachePlanOnTheWire(t *testing.T) {
	for _, model := range []string{"gpt-4.1-mini", "gpt-5.6"} {
		for _, api := range []string{provider.OpenAI, provider.OpenAIResponses} {
			t.Run(model+"/"+api, func(t *testing.T) {
				var m chat.Model
				var srv *strict.Server
				if api == provider.OpenAI {
					m, srv = newChat(t)
				} else {
					m, srv = newResponses(t)
				}
				if _, err := m.Generate(context.Background(), cacheRequest(model)); err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join("testdata", "cache", model+"-"+api+".json"), indent(t, srv.Bodies()[0]))
			})
		}
	}
}

func TestExplicitCacheBreakpointsByModel(t *testing.T) {
	for model, want := range map[string]bool{"gpt-5.6": true, "gpt-5.6-mini": true, "gpt-5.10": true, "gpt-6": true, "gpt-5.5": false,
		"gpt-5": false, "gpt-4.1-mini": false, "o3": false, "gpt-": false, "GPT-5.7": true} {
		if got := provider.ExplicitCacheBreakpoints(model); got != want {
			t.Errorf("ExplicitCacheBreakpoints(%q) = %v, want %v", model, got, want)
		}
	}
}
