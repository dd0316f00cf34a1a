package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// NewEino returns a func that answers a stored message with eino's ReAct agent
// (flow/agent/react), built once: the same system prompt and thread history (read from the
// store), the same tools (eino tools over tools, run in parallel by its tools node), a fake
// ToolCallingChatModel answering as Model does, and the same persistence: before each model
// call the agent's MessageRewriter records the round the tools node just finished
// (RecordRound), and the reply is appended to the thread. What eino cannot persist: the run
// itself (no key, no lease, one run per thread unenforced), the model's answer before its tools
// run, and whether a call of a tool that is not idempotent started — after a crash it can only
// start over, calling the model again and running every tool again.
//
// With perMessage the run is recorded the way eino's message state grows instead: each new
// message (the model's, each tool result) one INSERT (see recorder).
func NewEino(ctx context.Context, st *store.Store, tools *Tools, perMessage bool) (func(context.Context, store.Message) (string, error), error) {
	baseTools := make([]tool.BaseTool, len(names))
	for i, name := range names {
		baseTools[i] = einoTool{name: name, tools: tools}
	}
	ag, err := react.NewAgent(ctx, &react.AgentConfig{
		ToolCallingModel: einoModel{},
		ToolsConfig:      compose.ToolsNodeConfig{Tools: baseTools},
		MaxStep:          4*Rounds + 4,
		MessageRewriter: func(ctx context.Context, state []*schema.Message) []*schema.Message {
			r := ctx.Value(einoRunKey{}).(*einoRun)
			if r.rec.perMessage {
				r.rec.messages(ctx, einoMessages(state[r.persisted:]))
			} else {
				calls, results := einoRound(state[r.persisted:])
				r.rec.round(ctx, calls, results)
			}
			r.persisted = len(state)
			return state
		},
	})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, in store.Message) (string, error) {
		past, err := threadHistory(ctx, st, in)
		if err != nil {
			return "", err
		}
		msgs := []*schema.Message{schema.SystemMessage(System)}
		for _, m := range past {
			if m.Direction == "outbound" {
				msgs = append(msgs, schema.AssistantMessage(m.Text, nil))
			} else {
				msgs = append(msgs, schema.UserMessage(m.Text))
			}
		}
		msgs = append(msgs, schema.UserMessage(in.Text))
		r := &einoRun{rec: &recorder{st: st, in: in, runID: "eino:" + in.MessageID, perMessage: perMessage}, persisted: len(msgs),
			thread: in.ThreadID, base: len(msgs)}
		out, err := ag.Generate(context.WithValue(ctx, einoRunKey{}, r), msgs)
		if err != nil {
			return "", err
		}
		if r.rec.perMessage {
			r.rec.messages(ctx, einoMessages([]*schema.Message{out}))
		}
		if err := r.rec.reply(ctx, out.Content); err != nil {
			return "", err
		}
		return out.Content, nil
	}, nil
}

// einoRun is one run's state, reached through the context by the agent built once.
type einoRun struct {
	rec       *recorder
	persisted int // messages of the state recorded so far
	thread    string
	base      int // messages before the run's rounds
}

type einoRunKey struct{}

// einoRound converts the messages a round added (the assistant's calls, the tool results) to
// the store's round.
func einoRound(added []*schema.Message) ([]chat.ToolCall, []store.Result) {
	var calls []chat.ToolCall
	var results []store.Result
	for _, m := range added {
		switch m.Role {
		case schema.Assistant:
			for _, c := range m.ToolCalls {
				calls = append(calls, chat.ToolCall{ID: c.ID, Name: c.Function.Name, Input: json.RawMessage(c.Function.Arguments)})
			}
		case schema.Tool:
			results = append(results, store.Result{Content: m.Content, Succeeded: true})
		}
	}
	return calls, results
}

// einoMessages converts messages to the rows the per-message persistence writes.
func einoMessages(msgs []*schema.Message) []logMessage {
	out := make([]logMessage, len(msgs))
	for i, m := range msgs {
		calls := ""
		if len(m.ToolCalls) > 0 {
			b, _ := json.Marshal(m.ToolCalls)
			calls = string(b)
		}
		out[i] = logMessage{Role: string(m.Role), Content: m.Content, ToolCalls: calls, ToolCallID: m.ToolCallID}
	}
	return out
}

// einoTool is one of the tools as an eino InvokableTool.
type einoTool struct {
	name  string
	tools *Tools
}

func (t einoTool) Info(context.Context) (*schema.ToolInfo, error) {
	return &schema.ToolInfo{Name: t.name, Desc: "The " + t.name + " tool.",
		ParamsOneOf: schema.NewParamsOneOfByParams(map[string]*schema.ParameterInfo{"q": {Type: schema.String, Required: true}})}, nil
}

func (t einoTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	var in query
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return "", err
	}
	return t.tools.Run(t.name, in.Q)
}

// einoModel is the fake ToolCallingChatModel: it answers as Model does, counting the rounds
// of the run its context carries.
type einoModel struct{}

func (einoModel) Generate(ctx context.Context, input []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	m := ctx.Value(einoRunKey{}).(*einoRun)
	n := 0
	var results []string
	for _, msg := range input[min(m.base, len(input)):] {
		switch {
		case msg.Role == schema.Assistant && len(msg.ToolCalls) > 0:
			n++
		case msg.Role == schema.Tool:
			results = append(results, msg.Content)
		}
	}
	if n == Rounds {
		return schema.AssistantMessage(Answer(results), nil), nil
	}
	calls := make([]schema.ToolCall, Calls)
	for j, name := range names {
		calls[j] = schema.ToolCall{ID: CallID(n, name), Type: "function",
			Function: schema.FunctionCall{Name: name, Arguments: fmt.Sprintf(`{"q":"%s"}`, Query(m.thread, n, name))}}
	}
	return schema.AssistantMessage("", calls), nil
}

func (einoModel) Stream(context.Context, []*schema.Message, ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	return nil, errors.New("bench: the eino model does not stream")
}

func (m einoModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return m, nil }
