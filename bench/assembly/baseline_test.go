package assembly

import (
	"context"
	"slices"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

// TestBaselineMatchesPipeline holds the baseline honest: it builds exactly the messages the
// generated pipeline builds from the same fixture (chat.Message.Equal: roles, texts, call
// ids, names, input bytes, tool call ids).
func TestBaselineMatchesPipeline(t *testing.T) {
	ctx := context.Background()
	f := NewFixture()
	pm := personagenMessages(t, f)
	base, err := NewBaseline(f).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(base) != len(pm) {
		t.Fatalf("baseline built %d messages, the pipeline %d", len(base), len(pm))
	}
	for i := range base {
		if !base[i].Equal(pm[i]) {
			t.Errorf("message %d differs:\n baseline %s\n pipeline %s", i, shortMessage(base[i]), shortMessage(pm[i]))
		}
	}
	if !slices.EqualFunc(base, pm, chat.Message.Equal) {
		t.Error("baseline and pipeline differ")
	}
	if err := chat.Validate(base); err != nil {
		t.Errorf("baseline request does not validate: %v", err)
	}
}

// The baseline refuses rows it would render differently from the pipeline rather than
// diverge silently.
func TestBaselineRefusesRowsItDoesNotHandle(t *testing.T) {
	for name, spoil := range map[string]func(f *Fixture){
		"HTML-only body": func(f *Fixture) { f.Rows[3].Text, f.Rows[3].HTML = "", "<p>hi</p>" },
		"uses out of order": func(f *Fixture) {
			u := f.Rows[0].ToolUses
			u[0], u[1] = u[1], u[0]
		},
		"empty call id":    func(f *Fixture) { f.Rows[0].ToolUses[2].ToolCallID = "" },
		"repeated call id": func(f *Fixture) { f.Rows[0].ToolUses[2].ToolCallID = f.Rows[0].ToolUses[1].ToolCallID },
	} {
		f := NewFixture()
		spoil(f)
		if _, err := NewBaseline(f).Build(context.Background()); err == nil {
			t.Errorf("%s: baseline built the request", name)
		}
	}
}

func shortMessage(m chat.Message) string {
	s := short(msg{Role: string(m.Role), Text: m.Text, ToolCallID: m.ToolCallID})
	for _, c := range m.ToolCalls {
		s += " call " + c.ID + " " + c.Name + " " + string(c.Input)
	}
	return s
}
