package conversion

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/tmc/langchaingo/llms"

	"github.com/personagen/personagen/bench/assembly"
	"github.com/personagen/personagen/runtime/chat"
)

// Request returns the assembly benchmark's request, built once by the generated personagen
// pipeline.
func Request(ctx context.Context) (*chat.Request, error) {
	p, err := assembly.NewPersonagen(assembly.NewFixture())
	if err != nil {
		return nil, err
	}
	return p.Build(ctx)
}

// Doer is an in-process HTTP client: it reads the request body (so the whole request is
// encoded) and answers Body with status 200.
type Doer struct{ Body []byte }

// Do answers every request with d.Body.
func (d Doer) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_, _ = io.Copy(io.Discard, r.Body)
		_ = r.Body.Close()
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: io.NopCloser(bytes.NewReader(d.Body)), Request: r,
		ContentLength: int64(len(d.Body))}, nil
}

// The fixed answers.
var (
	AnthropicReply = []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"OK."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":2}}`)
	ChatReply      = []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1767225600,"model":"gpt-x","choices":[{"index":0,"finish_reason":"stop","logprobs":null,"message":{"role":"assistant","content":"OK.","refusal":null}}],"usage":{"prompt_tokens":100,"completion_tokens":2,"total_tokens":102}}`)
)

// LangChainGo converts the request's messages and tools to langchaingo's types (outside the
// timed loop): system and user text, assistant text or tool calls, tool results.
func LangChainGo(req *chat.Request) ([]llms.MessageContent, []llms.Tool) {
	var out []llms.MessageContent
	for _, m := range req.Messages {
		switch m.Role {
		case chat.RoleSystem:
			out = append(out, llms.TextParts(llms.ChatMessageTypeSystem, m.Text))
		case chat.RoleUser:
			out = append(out, llms.TextParts(llms.ChatMessageTypeHuman, m.Text))
		case chat.RoleAssistant:
			mc := llms.MessageContent{Role: llms.ChatMessageTypeAI}
			if m.Text != "" {
				mc.Parts = append(mc.Parts, llms.TextContent{Text: m.Text})
			}
			for _, c := range m.ToolCalls {
				mc.Parts = append(mc.Parts, llms.ToolCall{ID: c.ID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: c.Name, Arguments: string(c.Input)}})
			}
			out = append(out, mc)
		case chat.RoleTool:
			out = append(out, llms.MessageContent{Role: llms.ChatMessageTypeTool,
				Parts: []llms.ContentPart{llms.ToolCallResponse{ToolCallID: m.ToolCallID, Content: m.Text}}})
		}
	}
	var tools []llms.Tool
	for _, t := range req.Tools {
		var params map[string]any
		_ = json.Unmarshal(t.InputSchema, &params)
		tools = append(tools, llms.Tool{Type: "function", Function: &llms.FunctionDefinition{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	return out, tools
}
