package provider_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/internal/fixture"
	"github.com/personagen/personagen/runtime/provider/internal/strict"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
	"github.com/personagen/personagen/runtime/provider/openai"
)

// api is one adapter's conversion, its strict server's check and its longest call id.
type api struct {
	name  string
	body  func(*chat.Request) ([]byte, error)
	check func([]byte) error
	max   int
	pairs func(t *testing.T, body []byte) (calls, results []wirePair)
}

// wirePair is a call or a result as sent: its id and the k its input or text carries.
type wirePair struct {
	id string
	k  string
}

func marshal[P any](f func(*chat.Request) (P, error)) func(*chat.Request) ([]byte, error) {
	return func(req *chat.Request) ([]byte, error) {
		p, err := f(req)
		if err != nil {
			return nil, err
		}
		return json.Marshal(p)
	}
}

var apis = []api{
	{"anthropic", marshal(anthropic.Params), strict.CheckAnthropic, turns.MaxAnthropicCallID, anthropicPairs},
	{"chat", marshal(openai.ChatParams), strict.CheckChat, turns.MaxChatCallID, chatPairs},
	{"responses", marshal(openai.ResponsesParams), strict.CheckResponses, turns.MaxResponsesCallID, responsesPairs},
}

// kOf returns the k of a call's input {"k":"…"}.
func kOf(t *testing.T, input []byte) string {
	var in struct{ K string }
	if err := json.Unmarshal(input, &in); err != nil {
		t.Fatalf("input %s: %v", input, err)
	}
	return in.K
}

func anthropicPairs(t *testing.T, body []byte) (calls, results []wirePair) {
	var raw struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, m := range raw.Messages {
		var blocks []struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			ToolUseID string          `json:"tool_use_id"`
			Input     json.RawMessage `json:"input"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue // a string content
		}
		for _, b := range blocks {
			switch b.Type {
			case "tool_use":
				calls = append(calls, wirePair{b.ID, kOf(t, b.Input)})
			case "tool_result":
				results = append(results, wirePair{b.ToolUseID, strings.TrimPrefix(b.Content[0].Text, "k=")})
			}
		}
	}
	return calls, results
}

func chatPairs(t *testing.T, body []byte) (calls, results []wirePair) {
	var req struct {
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, wirePair{c.ID, kOf(t, []byte(c.Function.Arguments))})
		}
		if m.Role == "tool" {
			var text string
			_ = json.Unmarshal(m.Content, &text)
			results = append(results, wirePair{m.ToolCallID, strings.TrimPrefix(text, "k=")})
		}
	}
	return calls, results
}

func responsesPairs(t *testing.T, body []byte) (calls, results []wirePair) {
	var req struct {
		Input []struct {
			Type      string          `json:"type"`
			CallID    string          `json:"call_id"`
			Arguments string          `json:"arguments"`
			Output    json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	for _, it := range req.Input {
		switch it.Type {
		case "function_call":
			calls = append(calls, wirePair{it.CallID, kOf(t, []byte(it.Arguments))})
		case "function_call_output":
			var text string
			_ = json.Unmarshal(it.Output, &text)
			results = append(results, wirePair{it.CallID, strings.TrimPrefix(text, "k=")})
		}
	}
	return calls, results
}

// replayIDs turns fuzz bytes into the replay of one to three outbound messages whose tool
// uses carry ids of every kind (empty, repeated within and across rounds, unicode, too long,
// taken by a renaming) and inputs {"k":"<n>"} with results "k=<n>", n unique per use.
func replayIDs(data []byte) []chat.Message {
	pool := append([]string{""}, fixture.CallIDs...)
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return b
	}
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var msgs []history.Message
	n := 0
	for m := range int(next()%3) + 1 {
		hm := history.Message{Direction: history.Outbound, From: "support@acme.test", Subject: "Re: A-17",
			Date: at.Add(time.Duration(m) * time.Hour), Text: "Checked."}
		for range int(next() % 8) {
			b := next()
			n++
			hm.ToolUses = append(hm.ToolUses, history.ToolUse{
				Seq: int64(m), RunID: fmt.Sprintf("run-%d", m), TurnIndex: int(b % 3), Position: int(next() % 4),
				ToolCallID: pool[int(next())%len(pool)], ToolName: "lookup_order",
				Arguments: fmt.Sprintf(`{"k":"%d"}`, n), Result: fmt.Sprintf("k=%d", n), HasResult: true, Succeeded: true,
			})
		}
		msgs = append(msgs, hm)
	}
	var h runtime.ThreadHistory
	return h.AppendReplay([]chat.Message{chat.UserMessage("Where is A-17?")}, msgs)
}

// FuzzReplayedCallIDsReachEveryAPI holds that whatever ids a history holds, the replay's
// request to each API passes its strict server (ids valid for it and unique in the request),
// every result goes out with the id of the call it answers, ids every API takes are sent
// unchanged when unique, and the same history gives the same bytes.
func FuzzReplayedCallIDsReachEveryAPI(f *testing.F) {
	for _, seed := range [][]byte{{}, {2, 5, 0, 0, 1, 0, 1, 1, 0, 2, 4, 3, 1, 1, 5}, {1, 7, 0, 0, 4, 0, 1, 4, 0, 2, 4, 1, 0, 5, 1, 1, 6, 1, 2, 7, 1, 0, 8, 2, 1, 9, 7, 0, 0, 10, 0, 1, 11, 0, 2, 12}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs := replayIDs(data)
		if err := chat.Validate(msgs); err != nil {
			t.Fatalf("replay fails Validate: %v", err)
		}
		req := &chat.Request{Model: chat.ModelSettings{Name: "m"}, Messages: msgs, Tools: fixture.Definitions}
		var sent []string // the replay's call ids, in order
		for _, m := range msgs {
			for _, c := range m.ToolCalls {
				sent = append(sent, c.ID)
			}
		}
		for _, a := range apis {
			body, err := a.body(req)
			if err != nil {
				t.Fatalf("%s: %v", a.name, err)
			}
			if err := a.check(body); err != nil {
				t.Fatalf("%s: strict server refuses: %v\nbody: %s", a.name, err, body)
			}
			again, _ := a.body(req)
			if !bytes.Equal(body, again) {
				t.Fatalf("%s: two conversions of one history differ", a.name)
			}
			calls, results := a.pairs(t, body)
			if len(calls) != len(sent) || len(results) != len(sent) {
				t.Fatalf("%s: %d calls and %d results sent for %d calls", a.name, len(calls), len(results), len(sent))
			}
			kOfID := map[string]string{}
			for _, c := range calls {
				kOfID[c.id] = c.k
			}
			for _, r := range results {
				if k, ok := kOfID[r.id]; !ok || k != r.k {
					t.Fatalf("%s: result k=%s went out with id %q, which names call k=%s", a.name, r.k, r.id, k)
				}
			}
			taken := map[string]bool{} // the ids sent for the calls before
			for i, id := range sent {
				if turns.ValidCallID(id, a.max) && !taken[id] && calls[i].id != id {
					t.Fatalf("%s: well-formed id %q, not taken yet, sent as %q", a.name, id, calls[i].id)
				}
				taken[calls[i].id] = true
			}
		}
	})
}

// TestNaiveIDsAreRefusedMappedOnesAccepted sends, per API, the adapter's request and the naive
// one (the stored ids put back in place of the mapped ones): each strict server accepts the
// first and refuses the second with the rule the ids break.
func TestNaiveIDsAreRefusedMappedOnesAccepted(t *testing.T) {
	const fc = "fc_0f0e50a1476a6c35006912c58dc9f8819192c25864eb16f07f"
	tests := []struct {
		name   string
		rounds [][]string
		want   map[string]string // API → the refusal of the naive request (none: it is sent unchanged)
	}{
		{"replay renaming of an earlier build", [][]string{{"c1", "c1~1"}},
			map[string]string{"anthropic": strict.AnToolUseID, "chat": strict.OaCallIDPattern, "responses": strict.OaCallIDPattern}},
		{"one id in two rounds", [][]string{{"c1"}, {"c1"}},
			map[string]string{"anthropic": strict.AnDuplicateID, "chat": strict.OaDuplicateCallID, "responses": strict.OaDuplicateCallID}},
		{"a Responses item id sent to Chat Completions", [][]string{{fc}},
			map[string]string{"chat": "string too long: a tool call id has at most 40 characters, got 53"}},
		{"unicode", [][]string{{"日本"}},
			map[string]string{"anthropic": strict.AnToolUseID, "chat": strict.OaCallIDPattern, "responses": strict.OaCallIDPattern}},
		{"well-formed", [][]string{{"toolu_01A09q90qw90lq917835lq9", "call_abc"}}, nil},
	}
	for _, tt := range tests {
		msgs := []chat.Message{chat.UserMessage("Where is A-17?")}
		var ids []string
		for r, round := range tt.rounds {
			var calls []chat.ToolCall
			for _, id := range round {
				calls = append(calls, chat.ToolCall{ID: id, Name: "lookup_order", Input: json.RawMessage(fmt.Sprintf(`{"k":"%d"}`, len(ids)))})
				ids = append(ids, id)
			}
			msgs = append(msgs, chat.AssistantMessage("", calls...))
			for i := len(round) - 1; i >= 0; i-- {
				msgs = append(msgs, chat.ToolMessage(round[i], fmt.Sprintf("k=%d", len(ids)-len(round)+i)))
			}
			msgs = append(msgs, chat.UserMessage(fmt.Sprintf("And round %d?", r+1)))
		}
		req := &chat.Request{Model: chat.ModelSettings{Name: "m"}, Messages: msgs, Tools: fixture.Definitions}
		for _, a := range apis {
			body, err := a.body(req)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.check(body); err != nil {
				t.Errorf("%s / %s: the adapter's request is refused: %v", tt.name, a.name, err)
				continue
			}
			calls, _ := a.pairs(t, body)
			naive := body
			for i, c := range calls {
				if c.id != ids[i] {
					naive = bytes.ReplaceAll(naive, []byte(`"`+c.id+`"`), []byte(`"`+ids[i]+`"`))
				}
			}
			want := tt.want[a.name]
			err = a.check(naive)
			switch {
			case want == "" && !bytes.Equal(naive, body):
				t.Errorf("%s / %s: ids were mapped: %v", tt.name, a.name, calls)
			case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
				t.Errorf("%s / %s: naive request: %v, want %q", tt.name, a.name, err, want)
			}
		}
	}
}
