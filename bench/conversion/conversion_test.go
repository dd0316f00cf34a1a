package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	lcanthropic "github.com/tmc/langchaingo/llms/anthropic"
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/personagen/personagen/bench/assembly"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/openai"
)

// recorder is a Doer that keeps the last request body.
type recorder struct {
	Doer
	body *[]byte
}

func (r recorder) Do(req *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(req.Body)
	*r.body = b
	req.Body = io.NopCloser(bytes.NewReader(b))
	return r.Doer.Do(req)
}

// anthropicShape counts a Messages body's tool_use and tool_result blocks and the user messages
// that hold results.
func anthropicShape(t *testing.T, body []byte) (uses, results, resultMessages int) {
	t.Helper()
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type string `json:"type"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatalf("body: %v", err)
	}
	for _, m := range req.Messages {
		held := false
		for _, c := range m.Content {
			switch c.Type {
			case "tool_use":
				uses++
			case "tool_result":
				results++
				held = true
			}
		}
		if held {
			resultMessages++
		}
	}
	return uses, results, resultMessages
}

// TestRequestAndConversions pins the benchmark's input (the assembly benchmark's 173 messages,
// 20 rounds of 5 calls) and what each side sends for it: personagen's Anthropic request carries
// all 100 calls with their results batched in 20 user messages; langchaingo's carries one call
// per round while still sending all 100 results, one user message each — the shape the API
// refuses, which is why its row is informational.
func TestRequestAndConversions(t *testing.T) {
	ctx := context.Background()
	req, err := Request(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := 2 + assembly.HistoryMessages + assembly.ToolRounds*(1+assembly.CallsPerRound) + 1
	if len(req.Messages) != want || want != 173 {
		t.Fatalf("%d messages, want %d (= 173)", len(req.Messages), want)
	}
	if _, err := openai.ChatParams(req); err != nil {
		t.Fatal(err)
	}
	if _, err := openai.ResponsesParams(req); err != nil {
		t.Fatal(err)
	}
	p, err := anthropic.Params(req)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	calls := assembly.ToolRounds * assembly.CallsPerRound
	if u, r, rm := anthropicShape(t, ours); u != calls || r != calls || rm != assembly.ToolRounds {
		t.Errorf("personagen: %d tool_use, %d tool_result in %d messages; want %d, %d in %d", u, r, rm, calls, calls, assembly.ToolRounds)
	}

	var theirs []byte
	msgs, tools := LangChainGo(req)
	lca, err := lcanthropic.New(lcanthropic.WithToken("k"), lcanthropic.WithModel(req.Model.Name),
		lcanthropic.WithBaseURL("http://model.invalid/v1"), lcanthropic.WithHTTPClient(recorder{Doer{AnthropicReply}, &theirs}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lca.GenerateContent(ctx, msgs, llmsTools(tools)...); err != nil {
		t.Fatal(err)
	}
	if u, r, rm := anthropicShape(t, theirs); u != assembly.ToolRounds || r != calls || rm != calls {
		t.Errorf("langchaingo: %d tool_use, %d tool_result in %d messages; the doc says %d, %d in %d", u, r, rm, assembly.ToolRounds, calls, calls)
	}
	lco, err := lcopenai.New(lcopenai.WithToken("k"), lcopenai.WithModel(req.Model.Name),
		lcopenai.WithBaseURL("http://model.invalid/v1"), lcopenai.WithHTTPClient(recorder{Doer{ChatReply}, &theirs}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lco.GenerateContent(ctx, msgs, llmsTools(tools)...); err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Messages []struct {
			Role      string `json:"role"`
			ToolCalls []any  `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(theirs, &chat); err != nil {
		t.Fatal(err)
	}
	n, tool := 0, 0
	for _, m := range chat.Messages {
		n += len(m.ToolCalls)
		if m.Role == "tool" {
			tool++
		}
	}
	if n != calls || tool != calls {
		t.Errorf("langchaingo openai: %d tool calls, %d tool messages; want %d each", n, tool, calls)
	}
}
