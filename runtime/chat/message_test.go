package chat

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func mustCall(t testing.TB, id, name string, input any) ToolCall {
	t.Helper()
	c, err := NewToolCall(id, name, input)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMessageEqualRules(t *testing.T) {
	call := func(id, in string) ToolCall { return ToolCall{ID: id, Name: "search", Input: json.RawMessage(in)} }
	tests := []struct {
		name string
		a, b Message
		want bool
	}{
		{"same text", UserMessage("hi"), UserMessage("hi"), true},
		{"different text", UserMessage("hi"), UserMessage("ho"), false},
		{"different role", UserMessage("hi"), SystemMessage("hi"), false},
		{"nil parts equal empty parts", Message{Role: RoleUser}, Message{Role: RoleUser, Parts: []Part{}}, true},
		{"empty text equals nil parts", UserMessage(""), partsMessage(RoleUser), true},
		{"text equals one text part", UserMessage("x"), partsMessage(RoleUser, TextPart("x")), true},
		{"text differs from two text parts", UserMessage("xy"), partsMessage(RoleUser, TextPart("x"), TextPart("y")), false},
		{"text ignored when parts set", Message{Role: RoleUser, Text: "ignored", Parts: []Part{TextPart("x")}}, UserMessage("x"), true},
		{"empty text part is not empty content", partsMessage(RoleUser, TextPart("")), UserMessage(""), false},
		{"image bytes compare", partsMessage(RoleUser, ImagePart("image/png", []byte{1, 2})), partsMessage(RoleUser, ImagePart("image/png", []byte{1, 2})), true},
		{"image bytes differ", partsMessage(RoleUser, ImagePart("image/png", []byte{1, 2})), partsMessage(RoleUser, ImagePart("image/png", []byte{1, 3})), false},
		{"nil data equals empty data", partsMessage(RoleUser, ImagePart("image/png", nil)), partsMessage(RoleUser, ImagePart("image/png", []byte{})), true},
		{"document filename compares", partsMessage(RoleUser, DocumentPart("a.pdf", "application/pdf", nil)), partsMessage(RoleUser, DocumentPart("b.pdf", "application/pdf", nil)), false},
		{"part type compares", partsMessage(RoleUser, Part{Type: PartImage, MediaType: "x"}), partsMessage(RoleUser, Part{Type: PartDocument, MediaType: "x"}), false},
		{"tool call id compares", ToolMessage("a", "r"), ToolMessage("b", "r"), false},
		{"nil and empty tool calls", Message{Role: RoleAssistant}, Message{Role: RoleAssistant, ToolCalls: []ToolCall{}}, true},
		{"input whitespace ignored", AssistantMessage("", call("c1", `{"q": "go",  "n":1}`)), AssistantMessage("", call("c1", `{"q":"go","n":1}`)), true},
		{"input key order matters", AssistantMessage("", call("c1", `{"a":1,"b":2}`)), AssistantMessage("", call("c1", `{"b":2,"a":1}`)), false},
		{"nil input equals empty object", AssistantMessage("", call("c1", "")), AssistantMessage("", call("c1", "{}")), true},
		{"invalid input compares raw", AssistantMessage("", call("c1", `{"a":`)), AssistantMessage("", call("c1", `{"a":`)), true},
		{"call order matters", AssistantMessage("", call("c1", "{}"), call("c2", "{}")), AssistantMessage("", call("c2", "{}"), call("c1", "{}")), false},
		{"call name compares", AssistantMessage("", ToolCall{ID: "c", Name: "a"}), AssistantMessage("", ToolCall{ID: "c", Name: "b"}), false},
		{"call count compares", AssistantMessage("", call("c1", "{}")), AssistantMessage(""), false},
		{"error flag compares", ToolErrorMessage("c", "r"), ToolMessage("c", "r"), false},
		{"error flags equal", ToolErrorMessage("c", "r"), Message{Role: RoleTool, ToolCallID: "c", Parts: []Part{TextPart("r")}, IsError: true}, true},
		{"nil and empty state", Message{Role: RoleAssistant}, Message{Role: RoleAssistant, State: []ProviderState{}}, true},
		{"state data whitespace ignored", Message{Role: RoleAssistant, State: []ProviderState{{"p", json.RawMessage(`{"a": 1}`)}}},
			Message{Role: RoleAssistant, State: []ProviderState{{"p", json.RawMessage(`{"a":1}`)}}}, true},
		{"state data compares", Message{Role: RoleAssistant, State: []ProviderState{{"p", json.RawMessage(`{"a":1}`)}}},
			Message{Role: RoleAssistant, State: []ProviderState{{"p", json.RawMessage(`{"a":2}`)}}}, false},
		{"state provider compares", Message{Role: RoleAssistant, State: []ProviderState{{"p", nil}}},
			Message{Role: RoleAssistant, State: []ProviderState{{"q", nil}}}, false},
		{"empty state data equals null", Message{Role: RoleAssistant, State: []ProviderState{{"p", nil}}},
			Message{Role: RoleAssistant, State: []ProviderState{{"p", json.RawMessage("null")}}}, true},
		{"state count compares", Message{Role: RoleAssistant, State: []ProviderState{{"p", nil}}}, Message{Role: RoleAssistant}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Equal(tt.b); got != tt.want {
				t.Errorf("a.Equal(b) = %v, want %v", got, tt.want)
			}
			if got := tt.b.Equal(tt.a); got != tt.want {
				t.Errorf("b.Equal(a) = %v, want %v (Equal must be symmetric)", got, tt.want)
			}
		})
	}
}

func TestRoleValid(t *testing.T) {
	for _, r := range []Role{RoleSystem, RoleUser, RoleAssistant, RoleTool} {
		if !r.Valid() {
			t.Errorf("%q.Valid() = false", r)
		}
	}
	for _, r := range []Role{"", "bot", "System", "tools"} {
		if r.Valid() {
			t.Errorf("%q.Valid() = true", r)
		}
	}
}

func TestNewToolCallInput(t *testing.T) {
	tests := []struct {
		name    string
		input   any
		want    string
		wantErr string
	}{
		{"nil becomes empty object", nil, `{}`, ""},
		{"nil raw message becomes empty object", json.RawMessage(nil), `{}`, ""},
		{"map sorted keys", map[string]any{"b": 1, "a": "x"}, `{"a":"x","b":1}`, ""},
		{"struct", struct {
			Q string `json:"q"`
		}{"go"}, `{"q":"go"}`, ""},
		{"raw object kept", json.RawMessage(`{"k":[1,2]}`), `{"k":[1,2]}`, ""},
		{"raw object compacted", json.RawMessage("{ \"k\" :\n 1 }"), `{"k":1}`, ""},
		{"no HTML escaping", map[string]string{"q": "<a href=\"x\">&amp;</a>"}, `{"q":"<a href=\"x\">&amp;</a>"}`, ""},
		{"no HTML escaping in raw input", json.RawMessage(`{"q":"a<b && c>d"}`), `{"q":"a<b && c>d"}`, ""},
		{"array refused", []int{1}, "", `tool call c1: input must encode to a JSON object, got [1]`},
		{"string refused", "x", "", `tool call c1: input must encode to a JSON object, got "x"`},
		{"unencodable refused", func() {}, "", `tool call c1: encode input: json: unsupported type: func()`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewToolCall("c1", "search", tt.input)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(c.Input) != tt.want || c.ID != "c1" || c.Name != "search" {
				t.Errorf("got %+v (input %s), want input %s", c, c.Input, tt.want)
			}
		})
	}
}

func TestToolCallJSON(t *testing.T) {
	tests := []struct {
		name string
		call ToolCall
		want string
	}{
		{"nil input encodes empty object", ToolCall{ID: "c1", Name: "n"}, `{"id":"c1","name":"n","input":{}}`},
		{"blank input encodes empty object", ToolCall{ID: "c1", Name: "n", Input: json.RawMessage(" \n")}, `{"id":"c1","name":"n","input":{}}`},
		{"input compacted", ToolCall{ID: "c1", Name: "n", Input: json.RawMessage("{ \"a\" : 1 }")}, `{"id":"c1","name":"n","input":{"a":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.call)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tt.want {
				t.Errorf("got %s, want %s", b, tt.want)
			}
		})
	}
	if _, err := json.Marshal(ToolCall{ID: "c", Input: json.RawMessage(`{"a":`)}); err == nil {
		t.Error("invalid input JSON must fail to encode")
	}
}

func TestToolCallUnmarshal(t *testing.T) {
	tests := []struct {
		name, in, wantInput, wantErr string
	}{
		{"absent input becomes empty object", `{"id":"c","name":"n"}`, `{}`, ""},
		{"null input becomes empty object", `{"id":"c","name":"n","input":null}`, `{}`, ""},
		{"object kept byte for byte", `{"id":"c","name":"n","input":{"a": 1}}`, `{"a": 1}`, ""},
		{"array refused", `{"id":"c","name":"n","input":[1]}`, "", `tool call "c": input must be a JSON object, got [1]`},
		{"string refused", `{"id":"c","name":"n","input":"x"}`, "", `tool call "c": input must be a JSON object, got "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c ToolCall
			err := json.Unmarshal([]byte(tt.in), &c)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(c.Input) != tt.wantInput || c.ID != "c" || c.Name != "n" {
				t.Errorf("got %+v input %s, want input %s", c, c.Input, tt.wantInput)
			}
		})
	}
}

// sampleMessages covers every shape a message can take.
func sampleMessages(t testing.TB) []Message {
	return []Message{
		SystemMessage("You are a support agent.\n"),
		UserMessage("Where is <my> order & invoice?"),
		partsMessage(RoleUser,
			TextPart("See attached."),
			ImagePart("image/png", []byte{0x89, 'P', 'N', 'G'}),
			DocumentPart("invoice.pdf", "application/pdf", []byte("%PDF-1.7")),
		),
		AssistantMessage("", mustCall(t, "call_1", "lookup_order", map[string]any{"order": "A-17"}), ToolCall{ID: "call_2", Name: "now"}),
		ToolMessage("call_1", `{"status":"shipped"}`),
		ToolMessage("call_2", `"2025-01-02"`),
		{Role: RoleAssistant, Text: "ignored because parts are set", Parts: []Part{TextPart("Your order has shipped. é 日本 🎉")}},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_3", Name: "refund", Input: json.RawMessage(`{"order":"A-17"}`)}},
			State: []ProviderState{{Provider: "anthropic", Data: json.RawMessage(`{"type": "thinking", "thinking": "Refund it.", "signature": "c2ln"}`)}}},
		ToolErrorMessage("call_3", "refunds are closed on Sundays"),
	}
}

func TestMessageJSONIsCanonicalAndRoundTrips(t *testing.T) {
	msgs := sampleMessages(t)
	got, err := json.MarshalIndent(msgs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	checkGolden(t, "messages.json", got)

	again, _ := json.MarshalIndent(sampleMessages(t), "", "  ")
	if !bytes.Equal(got[:len(got)-1], again) {
		t.Error("encoding the same messages twice gave different bytes")
	}
	if bytes.Contains(got, []byte("ignored because parts are set")) {
		t.Error("Text of a message with parts must not be encoded")
	}
	var back []Message
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if !equalMessages(back, msgs) {
		t.Errorf("decoded messages differ from the originals:\n%+v\n%+v", back, msgs)
	}
	// Decoding and encoding again is a fixed point.
	re, _ := json.MarshalIndent(back, "", "  ")
	if !bytes.Equal(re, got[:len(got)-1]) {
		t.Errorf("re-encoding decoded messages changed the bytes:\n%s", re)
	}
}

func TestMessageJSONOmitsEmptyFields(t *testing.T) {
	b, _ := json.Marshal(AssistantMessage("", ToolCall{ID: "c", Name: "n"}))
	if want := `{"role":"assistant","tool_calls":[{"id":"c","name":"n","input":{}}]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	b, _ = json.Marshal(ToolMessage("c", "ok"))
	if want := `{"role":"tool","text":"ok","tool_call_id":"c"}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	b, _ = json.Marshal(ToolErrorMessage("c", "boom"))
	if want := `{"role":"tool","text":"boom","tool_call_id":"c","is_error":true}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	b, _ = json.Marshal(Message{Role: RoleAssistant, State: []ProviderState{{Provider: "p", Data: json.RawMessage(` { "a" : 1 } `)}, {Provider: "q"}}})
	if want := `{"role":"assistant","state":[{"provider":"p","data":{"a":1}},{"provider":"q","data":null}]}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	if _, err := json.Marshal(ProviderState{Provider: "p", Data: json.RawMessage("{")}); err == nil {
		t.Error("state data that is not JSON must not encode")
	}
	if !strings.Contains(string(mustJSON(t, partsMessage(RoleUser, ImagePart("image/png", []byte{1})))), `"data":"AQ=="`) {
		t.Error("part data must encode as standard base64")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
