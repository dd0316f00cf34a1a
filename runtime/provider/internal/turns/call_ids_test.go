package turns

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/chat"
)

// idRounds is a conversation of three rounds whose ids break every rule: "~", unicode, a space
// and a dot; an id repeated in a later round; a well-formed id that the renaming of an earlier
// one already took; a Responses id of 53 characters.
func idRounds() []chat.Message {
	round := func(ids []string, order ...int) []chat.Message {
		calls := make([]chat.ToolCall, len(ids))
		for i, id := range ids {
			calls[i] = chat.ToolCall{ID: id, Name: "lookup", Input: json.RawMessage(`{}`)}
		}
		out := []chat.Message{chat.AssistantMessage("", calls...)}
		for _, i := range order {
			out = append(out, chat.ToolMessage(ids[i], "result of "+ids[i]))
		}
		return out
	}
	msgs := []chat.Message{chat.UserMessage("hi")}
	msgs = append(msgs, round([]string{"c1", "c1~1", "日本"}, 1, 0, 2)...)
	msgs = append(msgs, round([]string{"c1", "a b", "c11_a73ef835e3"}, 0, 1, 2)...)
	msgs = append(msgs, round([]string{"fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f", "call.1"}, 1, 0)...)
	return msgs
}

// wire returns the ids CallIDs gives the calls and results of ts, per turn that has any.
func wire(ts []Turn, ids IDs) [][]string {
	var out [][]string
	for i, t := range ts {
		var row []string
		for k, c := range t.Calls {
			row = append(row, ids.Of(i, k, c.ID))
		}
		for k, r := range t.Results {
			row = append(row, ids.Of(i, k, r.CallID))
		}
		if row != nil {
			out = append(out, row)
		}
	}
	return out
}

func TestCallIDsRenameWhatTheAPIRefusesAndPairResults(t *testing.T) {
	ts, err := Normalize(nil, idRounds())
	if err != nil {
		t.Fatal(err)
	}
	const fc = "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f"
	want := map[int][][]string{
		MaxChatCallID: {
			{"c1", "c11_a73ef835e3", "call_cf2abf0c5b"},
			{"c11_a73ef835e3", "c1", "call_cf2abf0c5b"}, // results in their order, each with its call's id
			{"c1_d0f631ca1d", "ab_c8687a08aa", "c11_a73ef835e3_08f50e7ea6"},
			{"c1_d0f631ca1d", "ab_c8687a08aa", "c11_a73ef835e3_08f50e7ea6"},
			{"fc_0f0e50a1476a6c35006912c58d_021d53e00b", "call1_e8b7b7b379"},
			{"call1_e8b7b7b379", "fc_0f0e50a1476a6c35006912c58d_021d53e00b"},
		},
		MaxAnthropicCallID: { // 64: the Responses id fits and is sent unchanged
			{"c1", "c11_a73ef835e3", "call_cf2abf0c5b"},
			{"c11_a73ef835e3", "c1", "call_cf2abf0c5b"},
			{"c1_d0f631ca1d", "ab_c8687a08aa", "c11_a73ef835e3_08f50e7ea6"},
			{"c1_d0f631ca1d", "ab_c8687a08aa", "c11_a73ef835e3_08f50e7ea6"},
			{fc, "call1_e8b7b7b379"},
			{"call1_e8b7b7b379", fc},
		},
	}
	for max, rows := range want {
		got := wire(ts, CallIDs(ts, max))
		if !slices.EqualFunc(got, rows, slices.Equal[[]string]) {
			t.Errorf("max %d: ids\n%q\nwant\n%q", max, got, rows)
		}
		for _, row := range got {
			for _, id := range row {
				if !ValidCallID(id, max) {
					t.Errorf("max %d: %q is not a valid id", max, id)
				}
			}
		}
	}
}

func TestCallIDsKeepWellFormedUniqueIDs(t *testing.T) {
	msgs := []chat.Message{chat.UserMessage("hi"),
		chat.AssistantMessage("", chat.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "a", Input: json.RawMessage(`{}`)},
			chat.ToolCall{ID: "call_" + strings.Repeat("Z", 35), Name: "b", Input: json.RawMessage(`{}`)}),
		chat.ToolMessage("call_"+strings.Repeat("Z", 35), "b"), chat.ToolMessage("toolu_01A09q90qw90lq917835lq9", "a"),
	}
	ts, err := Normalize(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	if ids := CallIDs(ts, MaxChatCallID); ids.byTurn != nil {
		t.Errorf("well-formed unique ids were mapped: %q", wire(ts, ids))
	}
}

// TestCallIDsOfAPrefixAreKept holds that appending rounds never changes the ids of earlier
// calls: a longer conversation sends the same start.
func TestCallIDsOfAPrefixAreKept(t *testing.T) {
	msgs := idRounds()
	full, err := Normalize(nil, msgs)
	if err != nil {
		t.Fatal(err)
	}
	all := wire(full, CallIDs(full, MaxChatCallID))
	for n := 1; n <= len(msgs); n++ {
		if chat.Validate(msgs[:n]) != nil {
			continue
		}
		ts, _ := Normalize(nil, msgs[:n])
		got := wire(ts, CallIDs(ts, MaxChatCallID))
		if !slices.EqualFunc(got, all[:len(got)], slices.Equal[[]string]) {
			t.Errorf("first %d messages: ids %q, want the start of %q", n, got, all)
		}
	}
}
