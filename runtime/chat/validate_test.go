package chat

import (
	"errors"
	"testing"
)

func calls(ids ...string) Message {
	cs := make([]ToolCall, len(ids))
	for i, id := range ids {
		cs[i] = ToolCall{ID: id, Name: "t", Input: []byte("{}")}
	}
	return AssistantMessage("", cs...)
}

func result(id string) Message { return ToolMessage(id, "ok") }

func TestValidateAcceptsWellPairedLists(t *testing.T) {
	tests := []struct {
		name string
		msgs []Message
	}{
		{"empty", nil},
		{"plain conversation", []Message{SystemMessage("s"), UserMessage("u"), AssistantMessage("a")}},
		{"one round", []Message{UserMessage("u"), calls("c1"), result("c1"), AssistantMessage("done")}},
		{"results in any order", []Message{UserMessage("u"), calls("c1", "c2", "c3"), result("c3"), result("c1"), result("c2")}},
		{"round ends the list", []Message{UserMessage("u"), calls("c1"), result("c1")}},
		{"same id in two rounds", []Message{UserMessage("u"), calls("c1"), result("c1"), calls("c1"), result("c1")}},
		{"assistant first", []Message{calls("c1"), result("c1")}},
		{"assistant text with calls", []Message{UserMessage("u"), AssistantMessage("let me look", ToolCall{ID: "c1"}), result("c1")}},
		{"many calls", []Message{UserMessage("u"), calls("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "r"),
			result("r"), result("q"), result("p"), result("o"), result("n"), result("m"), result("l"), result("k"), result("j"),
			result("i"), result("h"), result("g"), result("f"), result("e"), result("d"), result("c"), result("b"), result("a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := Validate(tt.msgs); err != nil {
				t.Errorf("Validate = %v, want nil", err)
			}
		})
	}
}

func TestValidateReportsPairingErrors(t *testing.T) {
	tests := []struct {
		name string
		msgs []Message
		want PairingError
		text string
	}{
		{
			"tool message first",
			[]Message{result("c1"), UserMessage("u")},
			PairingError{Index: 0, ID: "c1", Round: -1, End: -1, Problem: problemToolFirst},
			`message 0: tool message stands first (id "c1")`,
		},
		{
			"tool message without call id",
			[]Message{UserMessage("u"), calls("c1"), ToolMessage("", "r")},
			PairingError{Index: 2, Round: 1, End: -1, Problem: problemNoCallID},
			`message 2: tool message without a call id`,
		},
		{
			"tool result after a user message",
			[]Message{UserMessage("u"), result("c1")},
			PairingError{Index: 1, ID: "c1", Round: -1, End: -1, Problem: problemOrphanResult},
			`message 1: tool result without a matching call in its round (id "c1")`,
		},
		{
			"tool result for an id the round does not call",
			[]Message{UserMessage("u"), calls("c1", "c2"), result("c1"), result("c9")},
			PairingError{Index: 3, ID: "c9", Round: 1, End: -1, Problem: problemOrphanResult},
			`message 3: tool result without a matching call in its round (id "c9", round opened at message 1)`,
		},
		{
			"tool result after its round completed",
			[]Message{UserMessage("u"), calls("c1"), result("c1"), result("c1")},
			PairingError{Index: 3, ID: "c1", Round: -1, End: -1, Problem: problemOrphanResult},
			`message 3: tool result without a matching call in its round (id "c1")`,
		},
		{
			"tool result for an earlier round's id",
			[]Message{UserMessage("u"), calls("c1"), result("c1"), calls("c2"), result("c1")},
			PairingError{Index: 4, ID: "c1", Round: 3, End: -1, Problem: problemOrphanResult},
			`message 4: tool result without a matching call in its round (id "c1", round opened at message 3)`,
		},
		{
			"two results for one call",
			[]Message{UserMessage("u"), calls("c1", "c2"), result("c1"), result("c1")},
			PairingError{Index: 3, ID: "c1", Round: 1, End: -1, Problem: problemDuplicateResult},
			`message 3: second tool result for one call (id "c1", round opened at message 1)`,
		},
		{
			"call without result at the end",
			[]Message{UserMessage("u"), calls("c1", "c2"), result("c1")},
			PairingError{Index: 1, ID: "c2", Round: 1, End: -1, Problem: problemMissingResult},
			`message 1: tool call without a result (id "c2" has no result before the end of the list)`,
		},
		{
			"call without any result before a user message",
			[]Message{UserMessage("u"), calls("c1"), UserMessage("again")},
			PairingError{Index: 1, ID: "c1", Round: 1, End: 2, Problem: problemMissingResult},
			`message 1: tool call without a result (id "c1" has no result before message 2)`,
		},
		{
			"plain assistant inside a round",
			[]Message{UserMessage("u"), calls("c1", "c2"), result("c2"), AssistantMessage("text")},
			PairingError{Index: 1, ID: "c1", Round: 1, End: 3, Problem: problemMissingResult},
			`message 1: tool call without a result (id "c1" has no result before message 3)`,
		},
		{
			"round split across assistant messages",
			[]Message{UserMessage("u"), calls("c1", "c2"), result("c1"), calls("c3"), result("c2"), result("c3")},
			PairingError{Index: 3, ID: "c2", Round: 1, End: 3, Problem: problemSplitRound},
			`message 3: round split across assistant messages (the round opened at message 1 still waits for id "c2")`,
		},
		{
			"duplicate call id in one round",
			[]Message{UserMessage("u"), calls("c1", "c2", "c1"), result("c1"), result("c2")},
			PairingError{Index: 1, ID: "c1", Round: 1, End: -1, Problem: problemDuplicateCall},
			`message 1: duplicate tool call id in one round (id "c1", round opened at message 1)`,
		},
		{
			"duplicate call id in a large round",
			[]Message{calls("a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n", "o", "p", "q", "b")},
			PairingError{Index: 0, ID: "b", Round: 0, End: -1, Problem: problemDuplicateCall},
			`message 0: duplicate tool call id in one round (id "b", round opened at message 0)`,
		},
		{
			"call with empty id",
			[]Message{UserMessage("u"), calls("c1", "")},
			PairingError{Index: 1, Round: 1, End: -1, Problem: problemEmptyCall},
			`message 1: tool call without an id`,
		},
		{
			"tool calls on a user message",
			[]Message{{Role: RoleUser, Text: "u", ToolCalls: []ToolCall{{ID: "c1"}}}},
			PairingError{Index: 0, ID: "c1", Round: -1, End: -1, Problem: problemCallsOnNonAssistant},
			`message 0: tool calls on a non-assistant message (id "c1")`,
		},
		{
			"tool calls on a tool message",
			[]Message{UserMessage("u"), calls("c1"), {Role: RoleTool, ToolCallID: "c1", ToolCalls: []ToolCall{{ID: "c2"}}}},
			PairingError{Index: 2, ID: "c2", Round: -1, End: -1, Problem: problemCallsOnNonAssistant},
			`message 2: tool calls on a non-assistant message (id "c2")`,
		},
		{
			"tool call id on an assistant message",
			[]Message{UserMessage("u"), {Role: RoleAssistant, Text: "a", ToolCallID: "c1"}},
			PairingError{Index: 1, ID: "c1", Round: -1, End: -1, Problem: problemCallIDOnNonTool},
			`message 1: tool call id on a non-tool message (id "c1")`,
		},
		{
			"unknown role",
			[]Message{UserMessage("u"), {Role: "bot", Text: "x"}},
			PairingError{Index: 1, Round: -1, End: -1, Problem: problemUnknownRole},
			`message 1: unknown role`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.msgs)
			var pe *PairingError
			if !errors.As(err, &pe) {
				t.Fatalf("Validate = %v, want a *PairingError", err)
			}
			if *pe != tt.want {
				t.Errorf("got %+v\nwant %+v", *pe, tt.want)
			}
			if err.Error() != tt.text {
				t.Errorf("message = %q\nwant      %q", err, tt.text)
			}
		})
	}
}

// fuzzMessages decodes data into a message list: each byte picks a role and a call id from a
// small alphabet, so that valid and broken pairings both occur often.
func fuzzMessages(data []byte) []Message {
	ids := []string{"", "a", "b", "c"}
	var msgs []Message
	for i := 0; i < len(data); i++ {
		b := data[i]
		id := ids[int(b>>2)%len(ids)]
		switch b % 4 {
		case 0:
			msgs = append(msgs, UserMessage("u"))
		case 1:
			n := int(b>>4) % 4
			cs := make([]ToolCall, 0, n)
			for k := 0; k < n && i+1 < len(data); k++ {
				i++
				cs = append(cs, ToolCall{ID: ids[int(data[i])%len(ids)]})
			}
			msgs = append(msgs, AssistantMessage("", cs...))
		case 2:
			msgs = append(msgs, ToolMessage(id, "r"))
		default:
			roles := []Role{RoleSystem, RoleUser, RoleAssistant, RoleTool, "bot"}
			m := Message{Role: roles[int(b>>4)%len(roles)], ToolCallID: id}
			if b&0x80 != 0 {
				m.ToolCalls = []ToolCall{{ID: id}}
			}
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// FuzzValidate holds that Validate never panics, and that a PairingError points into the list.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{"", "\x00\x11\x01\x02", "\x02", "\x15\x01\x02\x06\x0a", "\x25\x01\x01\x06", "\x83\x13\x03"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := fuzzMessages(data)
		err := Validate(msgs)
		if err == nil {
			return
		}
		var pe *PairingError
		if !errors.As(err, &pe) {
			t.Fatalf("Validate returned %T, want *PairingError", err)
		}
		if pe.Index < 0 || pe.Index >= len(msgs) {
			t.Fatalf("Index %d outside the list of %d", pe.Index, len(msgs))
		}
		if pe.Round >= len(msgs) || pe.End >= len(msgs) {
			t.Fatalf("Round %d / End %d outside the list of %d", pe.Round, pe.End, len(msgs))
		}
		_ = pe.Error()
	})
}

// wellPaired builds a valid list from data: user and assistant turns, and rounds of up to 7
// calls whose results come back in a data-chosen order, with ids reused across rounds.
func wellPaired(data []byte) []Message {
	var msgs []Message
	for i, b := range data {
		switch {
		case b%3 == 0:
			msgs = append(msgs, UserMessage("u"))
		case b%3 == 1 && i > 0:
			msgs = append(msgs, AssistantMessage("a"))
		default:
			n := int(b>>2)%7 + 1
			ids := make([]string, n)
			for k := range ids {
				ids[k] = string(rune('a' + k))
			}
			msgs = append(msgs, calls(ids...))
			for k := n - 1; k > 0; k-- { // a data-driven shuffle of the results
				j := int(b>>5+byte(k)) % (k + 1)
				ids[k], ids[j] = ids[j], ids[k]
			}
			for _, id := range ids {
				msgs = append(msgs, result(id))
			}
		}
	}
	return msgs
}

func FuzzValidateAcceptsWellPairedLists(f *testing.F) {
	for _, s := range []string{"", "\x00", "\x02\x05\xff", "\x00\x1a\x01\x9e"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := wellPaired(data)
		if err := Validate(msgs); err != nil {
			t.Fatalf("Validate(%d messages) = %v", len(msgs), err)
		}
	})
}
