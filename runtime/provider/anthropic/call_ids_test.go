package anthropic

import (
	"context"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider/internal/fixture"
)

// TestRenamedCallIDsReachTheServer sends a conversation whose stored ids the Messages API
// refuses (a "~", one id in two rounds) through the SDK: the strict server accepts it, with
// each tool_result carrying its tool_use's mapped id.
func TestRenamedCallIDsReachTheServer(t *testing.T) {
	m, srv := newModel(t)
	msgs := []chat.Message{chat.UserMessage("Where is A-17?"),
		chat.AssistantMessage("", call("c1", "lookup_order", `{"order":"A-17"}`), call("c1~1", "lookup_order", `{"order":"A-18"}`)),
		chat.ToolMessage("c1~1", "A-18 shipped."), chat.ToolMessage("c1", "A-17 shipped."),
		chat.UserMessage("And A-19?"),
		chat.AssistantMessage("", call("c1", "lookup_order", `{"order":"A-19"}`)),
		chat.ToolMessage("c1", "A-19 is late."),
	}
	if _, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Name: "c"}, Messages: msgs, Tools: fixture.Definitions}); err != nil {
		t.Fatalf("Generate: %v (rejections %q)", err, srv.Rejections())
	}
	body := string(srv.Bodies()[0])
	for _, want := range []string{
		`{"id":"c1","input":{"order":"A-17"}`, `{"id":"c11_a73ef835e3","input":{"order":"A-18"}`,
		`"tool_use_id":"c11_a73ef835e3"`, `"tool_use_id":"c1",`,
		`{"id":"c1_d0f631ca1d","input":{"order":"A-19"}`, `"tool_use_id":"c1_d0f631ca1d"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s:\n%s", want, body)
		}
	}
}
