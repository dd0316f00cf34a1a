package assembly

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cloudwego/eino/schema"
	"github.com/tmc/langchaingo/llms"

	"github.com/personagen/personagen/runtime/chat"
)

// msg is the common form the three pipelines' messages are compared in: every field that at
// least two of them can carry. Inputs are compared as the exact bytes each side sends.
type msg struct {
	Role, Text, ToolCallID string
	Calls                  []call
}

type call struct{ ID, Name, Input string }

func fromPersonagen(ms []chat.Message) []msg {
	out := make([]msg, len(ms))
	for i, m := range ms {
		out[i] = msg{Role: string(m.Role), Text: m.Text, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			out[i].Calls = append(out[i].Calls, call{c.ID, c.Name, string(c.Input)})
		}
	}
	return out
}

func fromLangChainGo(t *testing.T, ms []llms.ChatMessage) []msg {
	out := make([]msg, len(ms))
	for i, m := range ms {
		switch m := m.(type) {
		case llms.SystemChatMessage:
			out[i] = msg{Role: "system", Text: m.Content}
		case llms.HumanChatMessage:
			out[i] = msg{Role: "user", Text: m.Content}
		case llms.AIChatMessage:
			out[i] = msg{Role: "assistant", Text: m.Content}
			for _, c := range m.ToolCalls {
				out[i].Calls = append(out[i].Calls, call{c.ID, c.FunctionCall.Name, c.FunctionCall.Arguments})
			}
		case llms.ToolChatMessage:
			out[i] = msg{Role: "tool", Text: m.Content, ToolCallID: m.ID}
		default:
			t.Fatalf("langchaingo message %d has type %T", i, m)
		}
	}
	return out
}

func fromEino(ms []*schema.Message) []msg {
	out := make([]msg, len(ms))
	for i, m := range ms {
		out[i] = msg{Role: string(m.Role), Text: m.Content, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			out[i].Calls = append(out[i].Calls, call{c.ID, c.Function.Name, c.Function.Arguments})
		}
	}
	return out
}

// personagenMessages returns the messages of the request the generated pipeline builds from f.
func personagenMessages(t *testing.T, f *Fixture) []chat.Message {
	t.Helper()
	p, err := NewPersonagen(f)
	if err != nil {
		t.Fatal(err)
	}
	req, err := p.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return req.Messages
}

func buildAll(t *testing.T) (ours, lc, eino []msg) {
	t.Helper()
	ctx := context.Background()
	f := NewFixture()
	pm := personagenMessages(t, f)
	if err := chat.Validate(pm); err != nil {
		t.Fatalf("personagen request does not validate: %v", err)
	}
	l, err := NewLangChainGo(f).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewEino(f).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fromPersonagen(pm), fromLangChainGo(t, l), fromEino(e)
}

// TestPipelinesAgree holds the comparison honest: the three pipelines produce the same
// messages — count, roles, texts, tool call ids, names and inputs, tool results.
func TestPipelinesAgree(t *testing.T) {
	ours, lc, eino := buildAll(t)
	for _, peer := range []struct {
		name string
		msgs []msg
	}{{"langchaingo", lc}, {"eino", eino}} {
		if len(peer.msgs) != len(ours) {
			t.Errorf("%s: %d messages, personagen %d", peer.name, len(peer.msgs), len(ours))
			continue
		}
		for i := range ours {
			if !equalMsg(ours[i], peer.msgs[i]) {
				t.Errorf("%s: message %d differs:\n personagen %s\n %s %s", peer.name, i, short(ours[i]), peer.name, short(peer.msgs[i]))
			}
		}
	}
}

func equalMsg(a, b msg) bool {
	return a.Role == b.Role && a.Text == b.Text && a.ToolCallID == b.ToolCallID && slices.Equal(a.Calls, b.Calls)
}

func short(m msg) string {
	text := m.Text
	if len(text) > 80 {
		text = text[:80] + "…"
	}
	return fmt.Sprintf("%s %q id=%q calls=%v", m.Role, text, m.ToolCallID, m.Calls)
}

// TestFixtureExercisesTheReplayRules pins the request's shape, so that the benchmark measures
// what it claims: 2 system messages, 50 history turns, 20 rounds (an assistant message with 5
// calls, 5 tool messages), the current message; some results clipped to exactly 4,000
// characters, some arguments wrapped, some turns with attachment notes and Cc headers.
func TestFixtureExercisesTheReplayRules(t *testing.T) {
	ours, _, _ := buildAll(t)
	count := map[string]int{}
	var clipped, wrapped, attachments, ccs, calls int
	for _, m := range ours {
		count[m.Role]++
		calls += len(m.Calls)
		if m.Role == "tool" && strings.HasSuffix(m.Text, "…[truncated]") {
			clipped++
			if n := utf8.RuneCountInString(m.Text); n != ResultLimit {
				t.Errorf("clipped result has %d characters, want %d", n, ResultLimit)
			}
		}
		for _, c := range m.Calls {
			if strings.HasPrefix(c.Input, `{"_clipped_arguments":`) {
				wrapped++
			}
		}
		if strings.Contains(m.Text, "\n[attachment: ") {
			attachments++
		}
		if strings.Contains(m.Text, "\nCc: Grace Hopper <grace@example.com>, ops@example.com\n") {
			ccs++
		}
	}
	want := map[string]int{"system": 2, "user": HistoryMessages/2 + 1, "assistant": HistoryMessages/2 + ToolRounds, "tool": ToolRounds * CallsPerRound}
	for role, n := range want {
		if count[role] != n {
			t.Errorf("%d %s messages, want %d", count[role], role, n)
		}
	}
	if len(ours) != 2+HistoryMessages+ToolRounds*(1+CallsPerRound)+1 {
		t.Errorf("%d messages in all", len(ours))
	}
	if calls != ToolRounds*CallsPerRound {
		t.Errorf("%d tool calls, want %d", calls, ToolRounds*CallsPerRound)
	}
	if clipped == 0 || wrapped == 0 || attachments == 0 || ccs == 0 {
		t.Errorf("fixture misses a rule: %d clipped results, %d wrapped arguments, %d attachment notes, %d Cc headers",
			clipped, wrapped, attachments, ccs)
	}
}
