package anthropic

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/personagen/personagen/internal/golden"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
)

// TestCachePlanOnTheWire pins the cache_control markers a plan puts on a Messages request
// (golden body, accepted by the strict server): after the tools, on the last system block of
// the persona prefix (1 hour), on the history's last tool result and reply (1 hour), and the
// top-level marker for the tail (5 minutes, after the 1-hour ones).
func TestCachePlanOnTheWire(t *testing.T) {
	srv := strict.New(t, strict.Anthropic)
	m := New(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
	call := chat.ToolCall{ID: "toolu_1", Name: "lookup", Input: json.RawMessage(`{"q":"A-17"}`)}
	req := &chat.Request{
		Model: chat.ModelSettings{Name: "claude-sonnet-4-5"},
		Messages: []chat.Message{
			chat.SystemMessage("You answer support email."), chat.SystemMessage("Policy: refunds up to EUR 100."),
			chat.UserMessage("Where is A-17?"),
			{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{call}},
			{Role: chat.RoleTool, ToolCallID: "toolu_1", Text: "shipped"},
			{Role: chat.RoleAssistant, Text: "It shipped on Monday."},
			chat.SystemMessage("This message came from ada@example.com."),
			chat.UserMessage("And A-18?"),
		},
		Tools: []chat.ToolDefinition{{Name: "lookup", InputSchema: json.RawMessage(`{"type":"object"}`)}},
		Cache: &chat.CachePlan{Tail: true, Breakpoints: []chat.CacheBreakpoint{
			{End: 2, Scope: chat.CachePersona, TTL: time.Hour}, {End: 5, Scope: chat.CacheThread, TTL: time.Hour}, {End: 6, Scope: chat.CacheThread, TTL: time.Hour}}},
	}
	if _, err := m.Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "cache_request.json"), indent(t, srv.Bodies()[0]))
	bad := *req
	bad.Cache = &chat.CachePlan{Breakpoints: []chat.CacheBreakpoint{{End: 9, Scope: chat.CacheThread}}}
	if _, err := m.Generate(context.Background(), &bad); err == nil || len(srv.Bodies()) != 1 {
		t.Errorf("a malformed plan: %v (requests %d)", err, len(srv.Bodies()))
	}
}
