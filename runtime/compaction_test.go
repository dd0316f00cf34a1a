package runtime_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime"

	"github.com/personagen/personagen/runtime/history"
)

func planMessages(n int, text string) []history.Message {
	out := make([]history.Message, n)
	for i := range out {
		out[i] = history.Message{Seq: int64(10 + i), MessageID: "m", Direction: history.Inbound, Text: text}
	}
	return out
}

func TestCompactionPolicyPlan(t *testing.T) {
	big := strings.Repeat("x", 1000)
	cases := []struct {
		name     string
		policy   runtime.CompactionPolicy
		msgs     []history.Message
		boundary int64
		ok       bool
	}{
		{"no trigger set", runtime.CompactionPolicy{}, planMessages(100, "x"), 0, false},
		{"count under the maximum", runtime.CompactionPolicy{MaxMessages: 20, Keep: 5}, planMessages(20, "x"), 0, false},
		{"count over the maximum keeps Keep", runtime.CompactionPolicy{MaxMessages: 20, Keep: 5}, planMessages(21, "x"), 25, true},
		{"default keep is 10", runtime.CompactionPolicy{MaxMessages: 5}, planMessages(12, "x"), 11, true},
		{"negative keep still keeps the newest", runtime.CompactionPolicy{MaxMessages: 1, Keep: -3}, planMessages(3, "x"), 11, true},
		{"not more messages than keep", runtime.CompactionPolicy{MaxMessages: 1, Keep: 3}, planMessages(3, "x"), 0, false},
		{"size over the maximum", runtime.CompactionPolicy{MaxChars: 5000, Keep: 2}, planMessages(6, big), 13, true},
		{"size under the maximum", runtime.CompactionPolicy{MaxChars: 50000, Keep: 2}, planMessages(6, big), 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, ok := c.policy.Plan(c.msgs)
			if b != c.boundary || ok != c.ok {
				t.Errorf("Plan = %d, %t; want %d, %t", b, ok, c.boundary, c.ok)
			}
		})
	}
}

// The boundary is the greatest Seq of the summarised part, even when sent order and record
// order differ, so no message older in record order is left between summary and window unseen.
func TestCompactionPolicyBoundaryIsGreatestSeq(t *testing.T) {
	msgs := planMessages(4, "x")
	msgs[0].Seq, msgs[1].Seq = 40, 5 // the first by sent time was recorded last
	b, ok := runtime.CompactionPolicy{MaxMessages: 1, Keep: 2}.Plan(msgs)
	if !ok || b != 40 {
		t.Errorf("Plan = %d, %t; want 40, true", b, ok)
	}
}

func TestReplayCharsCountsTurnsCallsAndResults(t *testing.T) {
	m := history.Message{Text: "héllo", ToolUses: []history.ToolUse{
		{RunID: "r", ToolCallID: "c", ToolName: "search", Arguments: `{"q":1}`, Result: "résult", HasResult: true}}}
	text, _ := runtime.HistoryText(&m)
	want := utf8.RuneCountInString(text) + len("search") + len(`{"q":1}`) + utf8.RuneCountInString("résult")
	if got := runtime.ReplayChars([]history.Message{m}); got != want {
		t.Errorf("ReplayChars = %d, want %d", got, want)
	}
}
