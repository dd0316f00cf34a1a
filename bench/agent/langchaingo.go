package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/prompts"
	lctools "github.com/tmc/langchaingo/tools"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// LangChainGo answers a stored message with langchaingo's agent executor and its OpenAI
// functions agent: the same system prompt and thread history (read from the store, as fixed
// prompt messages), the same tools (langchaingo tools over Tools; the executor runs a step's
// calls one after another), a fake llms.Model answering as Model does, and the same
// persistence: before each model call a wrapper records the round the executor just finished
// (RecordRound), and the reply is appended to the thread. What langchaingo cannot persist: the
// run (no key, no lease), the model's answer before its tools run, whether a call of a tool that
// is not idempotent started, and a round as one model message (its scratchpad replays each call
// of a parallel round as a model message of its own); after a crash it starts over.
//
// With perMessage the run is recorded the way langchaingo's schema.ChatMessageHistory persists a
// conversation instead: each message of the scratchpad (one model message per call, each tool
// result) and the answer, one INSERT each (see recorder).
func LangChainGo(ctx context.Context, st *store.Store, tools *Tools, in store.Message, perMessage bool) (string, error) {
	past, err := threadHistory(ctx, st, in)
	if err != nil {
		return "", err
	}
	var extra []prompts.MessageFormatter
	for _, m := range past {
		if m.Direction == "outbound" {
			extra = append(extra, prompts.NewAIMessagePromptTemplate(m.Text, nil))
		} else {
			extra = append(extra, prompts.NewHumanMessagePromptTemplate(m.Text, nil))
		}
	}
	ts := make([]lctools.Tool, len(names))
	for i, name := range names {
		ts[i] = lcTool{name: name, tools: tools}
	}
	rec := &recorder{st: st, in: in, runID: "langchaingo:" + in.MessageID, perMessage: perMessage}
	llm := &lcModel{thread: in.ThreadID, rec: rec}
	opt := agents.NewOpenAIOption()
	ag := agents.NewOpenAIFunctionsAgent(llm, ts, opt.WithSystemMessage(System), opt.WithExtraMessages(extra))
	ex := agents.NewExecutor(ag, agents.WithMaxIterations(Rounds+2))
	out, err := ex.Call(ctx, map[string]any{"input": in.Text})
	if err != nil {
		return "", err
	}
	if rec.err != nil {
		return "", rec.err
	}
	text, _ := out["output"].(string)
	if perMessage {
		rec.messages(ctx, []logMessage{{Role: string(llms.ChatMessageTypeAI), Content: text}})
	}
	if err := rec.reply(ctx, text); err != nil {
		return "", err
	}
	return text, nil
}

// lcTool is one of the tools as a langchaingo tool.
type lcTool struct {
	name  string
	tools *Tools
}

func (t lcTool) Name() string        { return t.name }
func (t lcTool) Description() string { return "The " + t.name + " tool." }
func (t lcTool) Call(ctx context.Context, input string) (string, error) {
	var in query
	if err := json.Unmarshal([]byte(input), &in); err != nil {
		return "", err
	}
	return t.tools.Run(t.name, in.Q)
}

// lcModel is the fake llms.Model: it answers as Model does and, before answering, records the
// calls and results the executor added since its last call.
type lcModel struct {
	thread    string
	rec       *recorder
	persisted int // tool results recorded so far
	logged    int // messages recorded so far (perMessage)
}

func (m *lcModel) GenerateContent(ctx context.Context, msgs []llms.MessageContent, _ ...llms.CallOption) (*llms.ContentResponse, error) {
	var calls []chat.ToolCall
	var results []string
	for _, mc := range msgs {
		for _, p := range mc.Parts {
			switch p := p.(type) {
			case llms.ToolCall:
				calls = append(calls, chat.ToolCall{ID: p.ID, Name: p.FunctionCall.Name, Input: json.RawMessage(p.FunctionCall.Arguments)})
			case llms.ToolCallResponse:
				results = append(results, p.Content)
			}
		}
	}
	if len(calls) != len(results) {
		return nil, fmt.Errorf("bench: %d calls and %d results", len(calls), len(results))
	}
	if m.rec.perMessage {
		var rows []logMessage
		for _, mc := range msgs[min(m.logged, len(msgs)):] {
			for _, p := range mc.Parts {
				switch p := p.(type) {
				case llms.ToolCall:
					b, _ := json.Marshal(p)
					rows = append(rows, logMessage{Role: string(mc.Role), ToolCalls: string(b)})
				case llms.ToolCallResponse:
					rows = append(rows, logMessage{Role: string(mc.Role), Content: p.Content, ToolCallID: p.ToolCallID})
				}
			}
		}
		if m.logged == 0 { // the first call: the prompt is the thread, stored already
			rows = nil
		}
		m.rec.messages(ctx, rows)
		m.logged = len(msgs)
	} else if len(results) > m.persisted {
		rs := make([]store.Result, 0, len(results)-m.persisted)
		for _, r := range results[m.persisted:] {
			rs = append(rs, store.Result{Content: r, Succeeded: true})
		}
		m.rec.round(ctx, calls[m.persisted:], rs)
		m.persisted = len(results)
	}
	n := len(results) / Calls
	if n == Rounds {
		return &llms.ContentResponse{Choices: []*llms.ContentChoice{{Content: Answer(results), StopReason: "stop"}}}, nil
	}
	tcs := make([]llms.ToolCall, Calls)
	for j, name := range names {
		tcs[j] = llms.ToolCall{ID: CallID(n, name), Type: "function",
			FunctionCall: &llms.FunctionCall{Name: name, Arguments: fmt.Sprintf(`{"q":"%s"}`, Query(m.thread, n, name))}}
	}
	return &llms.ContentResponse{Choices: []*llms.ContentChoice{{ToolCalls: tcs, StopReason: "tool_calls"}}}, nil
}

func (m *lcModel) Call(context.Context, string, ...llms.CallOption) (string, error) {
	return "", errors.New("bench: the langchaingo model only generates content")
}
