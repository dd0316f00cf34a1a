package runtime_test

import (
	"strings"
	"testing"
	"time"
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

// The boundary is older, in order of arrival, than every kept message, even when Date order
// and arrival order disagree: q1 (seq 1, 09:00), its reply (seq 2, 09:05) and q2 (seq 3, dated
// 08:50 by a skewed clock), listed by Date, with Keep 1, compact q1 and the reply and keep q2,
// the newest arrival, whose run may still be recording.
func TestCompactionPolicyBoundaryIsOlderThanEveryKeptMessage(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2024, 3, 1, h, m, 0, 0, time.UTC) }
	q1 := history.Message{Seq: 1, MessageID: "q1", Direction: history.Inbound, Date: at(9, 0), Text: "q1"}
	reply := history.Message{Seq: 2, MessageID: "r", Direction: history.Outbound, Date: at(9, 5), Text: "r"}
	q2 := history.Message{Seq: 3, MessageID: "q2", Direction: history.Inbound, Date: at(8, 50), Text: "q2"}
	policy := runtime.CompactionPolicy{MaxMessages: 1, Keep: 1}
	for _, order := range [][]history.Message{{q2, q1, reply}, {q1, reply, q2}, {reply, q2, q1}} {
		if b, ok := policy.Plan(order); !ok || b != 2 {
			t.Errorf("Plan(%s %s %s) = %d, %t; want 2, true", order[0].MessageID, order[1].MessageID, order[2].MessageID, b, ok)
		}
	}
	// Keep 2 keeps seqs 3 and 2 whatever the order: the boundary is 1.
	msgs := planMessages(4, "x")
	msgs[0].Seq, msgs[1].Seq, msgs[2].Seq, msgs[3].Seq = 40, 5, 12, 13
	if b, ok := (runtime.CompactionPolicy{MaxMessages: 1, Keep: 2}).Plan(msgs); !ok || b != 12 {
		t.Errorf("Plan = %d, %t; want 12 (below the kept 13 and 40), true", b, ok)
	}
}

func TestReplayCharsCountsTurnsCallsAndResults(t *testing.T) {
	m := history.Message{Text: "héllo", ToolUses: []history.ToolUse{
		{RunID: "r", ToolCallID: "c", ToolName: "search", Arguments: `{"q":1}`, Result: "résult", HasResult: true}}}
	text, _ := runtime.TurnText(&m)
	want := utf8.RuneCountInString(text) + len("search") + len(`{"q":1}`) + utf8.RuneCountInString("résult")
	if got := runtime.ReplayChars([]history.Message{m}); got != want {
		t.Errorf("ReplayChars = %d, want %d", got, want)
	}
}
