package chat

import (
	"slices"
	"strings"
	"testing"
)

func TestUniqueCallIDsRenamesEmptyAndRepeatedIDsDeterministically(t *testing.T) {
	for _, c := range []struct {
		name    string
		ids     []string
		want    []string
		renamed int
	}{
		{"unique ids are kept", []string{"a", "b", "c"}, []string{"a", "b", "c"}, 0},
		{"a repeated id: the first keeps it", []string{"c", "c", "c"}, []string{"c", "c_1", "c_2"}, 2},
		{"empty ids", []string{"", "x", ""}, []string{"call_0", "x", "call_2"}, 2},
		{"a taken name gets a counter", []string{"a", "a_1", "a"}, []string{"a", "a_1", "a_2"}, 1},
		{"the rename's own name is taken", []string{"a", "a", "a_1"}, []string{"a", "a_1_2", "a_1"}, 1},
		{"an empty round", nil, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := make([]ToolCall, len(c.ids))
			for i, id := range c.ids {
				calls[i] = ToolCall{ID: id, Name: "t"}
			}
			n := UniqueCallIDs(calls)
			got := make([]string, len(calls))
			for i, call := range calls {
				got[i] = call.ID
			}
			if !slices.Equal(got, c.want) || n != c.renamed {
				t.Errorf("UniqueCallIDs(%q) = %q, %d renamed; want %q, %d", c.ids, got, n, c.want, c.renamed)
			}
			if len(calls) > 0 {
				msgs := []Message{UserMessage("q"), AssistantMessage("", calls...)}
				for _, call := range calls {
					msgs = append(msgs, ToolMessage(call.ID, "r"))
				}
				if err := Validate(msgs); err != nil {
					t.Errorf("the renamed round fails Validate: %v", err)
				}
			}
			if again := UniqueCallIDs(calls); again != 0 {
				t.Errorf("renaming a renamed round renamed %d ids", again)
			}
		})
	}
}

func FuzzUniqueCallIDsMakesAValidRound(f *testing.F) {
	f.Add("a,a,,b,a_1")
	f.Add(",,,")
	f.Fuzz(func(t *testing.T, list string) {
		ids := strings.Split(list, ",")
		if len(ids) > 200 {
			return
		}
		calls := make([]ToolCall, len(ids))
		for i, id := range ids {
			calls[i] = ToolCall{ID: id, Name: "t"}
		}
		UniqueCallIDs(calls)
		msgs := []Message{UserMessage("q"), AssistantMessage("", calls...)}
		for _, call := range calls {
			msgs = append(msgs, ToolMessage(call.ID, "r"))
		}
		if err := Validate(msgs); err != nil {
			t.Fatalf("ids %q renamed to a round Validate refuses: %v", ids, err)
		}
		if UniqueCallIDs(calls) != 0 {
			t.Fatalf("renaming twice changed ids %q", ids)
		}
	})
}
