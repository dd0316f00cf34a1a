package chat

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

func TestToolCallFromArguments(t *testing.T) {
	tests := []struct {
		name, args, input string
		invalid           bool
	}{
		{"object kept as produced", `{"q": "go"}`, `{"q": "go"}`, false},
		{"empty is an empty object", "", `{}`, false},
		{"blank is an empty object", " \n", `{}`, false},
		{"null is an empty object", "null", `{}`, false},
		{"cut-off JSON is kept and flagged", `{"q": "g`, `{"_invalid_arguments":"{\"q\": \"g"}`, true},
		{"array is flagged", `[1,2]`, `{"_invalid_arguments":"[1,2]"}`, true},
		{"bare string is flagged", `"go"`, `{"_invalid_arguments":"\"go\""}`, true},
		{"text is flagged without HTML escaping", `<b>&`, `{"_invalid_arguments":"<b>&"}`, true},
		{"invalid UTF-8 becomes U+FFFD", "\xff", `{"_invalid_arguments":"\ufffd"}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ToolCallFromArguments("id1", "search", tt.args)
			if c.ID != "id1" || c.Name != "search" || string(c.Input) != tt.input {
				t.Fatalf("got %+v, input %s; want input %s", c, c.Input, tt.input)
			}
			if !json.Valid(c.Input) || c.Input[0] != '{' {
				t.Fatalf("input %s is not a JSON object", c.Input)
			}
			raw, ok := c.InvalidArguments()
			if ok != tt.invalid {
				t.Fatalf("InvalidArguments() ok = %v, want %v", ok, tt.invalid)
			}
			if ok && raw != tt.args && tt.args != "\xff" {
				t.Errorf("InvalidArguments() = %q, want the produced %q", raw, tt.args)
			}
		})
	}
}

func TestInvalidArgumentsNeedsTheExactStandIn(t *testing.T) {
	for _, in := range []string{
		`{}`, `{"q":1}`, `{"_invalid_arguments":1}`, `{"_invalid_arguments":"x","other":2}`,
		`{"_invalid_arguments_x":"x"}`, `{"_invalid_arguments":"x"`,
	} {
		if raw, ok := (ToolCall{Input: json.RawMessage(in)}).InvalidArguments(); ok {
			t.Errorf("InvalidArguments(%s) = %q, true; want false", in, raw)
		}
	}
	if raw, ok := (ToolCall{Input: json.RawMessage(` {"_invalid_arguments" : "a\nb"} `)}).InvalidArguments(); !ok || raw != "a\nb" {
		t.Errorf("spaced stand-in: got %q, %v", raw, ok)
	}
}

func TestUsageAdd(t *testing.T) {
	got := Usage{InputTokens: 10, OutputTokens: 2, CacheReadTokens: 4, CacheWriteTokens: 1}.Add(Usage{InputTokens: 5, OutputTokens: 3, CacheReadTokens: 1, CacheWriteTokens: 6})
	if want := (Usage{InputTokens: 15, OutputTokens: 5, CacheReadTokens: 5, CacheWriteTokens: 7}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestModelFuncAndResponseJSON(t *testing.T) {
	var m Model = ModelFunc(func(_ context.Context, req *Request) (*Response, error) {
		if len(req.Messages) == 0 {
			return nil, ErrContextWindow
		}
		return &Response{Message: AssistantMessage("hi"), StopReason: StopEndTurn, Usage: Usage{InputTokens: 3, OutputTokens: 1}, ResponseID: "r1"}, nil
	})
	if _, err := m.Generate(context.Background(), &Request{}); !errors.Is(err, ErrContextWindow) {
		t.Fatalf("err = %v", err)
	}
	r, err := m.Generate(context.Background(), &Request{Messages: []Message{UserMessage("x")}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	want := `{"message":{"role":"assistant","text":"hi"},"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1,"cache_read_tokens":0,"cache_write_tokens":0},"response_id":"r1"}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}
