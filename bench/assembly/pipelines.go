package assembly

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudwego/eino/components/prompt"
	"github.com/cloudwego/eino/schema"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/memory"
	"github.com/tmc/langchaingo/prompts"

	"github.com/personagen/personagen/bench/assembly/internal/persona"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	memsource "github.com/personagen/personagen/runtime/memory"
)

// Personagen is the generated pipeline: the bench-agent persona from internal/persona, reading
// the prompt from the fixture's MapFS and the history from a runtime/memory Source holding the
// fixture's rows.
type Personagen struct {
	persona *runtime.Persona
	current *history.Message
}

// NewPersonagen loads f's rows into an in-memory history.Source (once, outside any timed loop)
// and builds the generated persona on it. It returns the Source's or the constructor's error.
func NewPersonagen(f *Fixture) (*Personagen, error) {
	src := memsource.New()
	for _, m := range f.Rows {
		m.ThreadID = Thread
		if _, err := src.AppendMessage(context.Background(), m); err != nil {
			return nil, fmt.Errorf("load fixture: %w", err)
		}
	}
	p, err := persona.NewBenchAgent(f.Env, runtime.Options{Files: runtime.FSFiles(f.Files), History: src})
	if err != nil {
		return nil, err
	}
	return &Personagen{persona: p, current: &f.Current}, nil
}

// Build assembles one request with runtime.BuildRequest.
func (p *Personagen) Build(ctx context.Context) (*chat.Request, error) {
	return runtime.BuildRequest(ctx, &runtime.Invocation{Persona: p.persona, Inbound: p.current})
}

// LangChainGo is the langchaingo pipeline: a ChatPromptTemplate of two system templates (the
// prompt file and the record, both as variables), a MessagesPlaceholder for the history and a
// human template for the current message, with the history in a memory.ChatMessageHistory.
type LangChainGo struct {
	f    *Fixture
	tmpl prompts.ChatPromptTemplate
}

// NewLangChainGo builds the template once; it uses langchaingo's default template format (Go
// text/template, as prompts.NewPromptTemplate sets it).
func NewLangChainGo(f *Fixture) *LangChainGo {
	return &LangChainGo{f: f, tmpl: prompts.NewChatPromptTemplate([]prompts.MessageFormatter{
		prompts.NewSystemMessagePromptTemplate("{{.prompt}}", []string{"prompt"}),
		prompts.NewSystemMessagePromptTemplate("{{.record}}", []string{"record"}),
		prompts.MessagesPlaceholder{VariableName: "history"},
		prompts.NewHumanMessagePromptTemplate("{{.input}}", []string{"input"}),
	})}
}

// Build reads the prompt and the record, converts the rows into a fresh ChatMessageHistory and
// formats the template.
func (l *LangChainGo) Build(ctx context.Context) ([]llms.ChatMessage, error) {
	prompt, err := readPrompt(l.f.Files)
	if err != nil {
		return nil, err
	}
	acct, ok := l.f.Env.Lookup(l.f.Current.From)
	if !ok {
		return nil, errors.New("no account")
	}
	hist := memory.NewChatMessageHistory()
	rows := l.f.Rows[max(0, len(l.f.Rows)-HistoryMessages):]
	for i := range rows {
		m := &rows[i]
		if text, ok := peerText(m); ok {
			var msg llms.ChatMessage = llms.HumanChatMessage{Content: text}
			if m.Direction == history.Outbound {
				msg = llms.AIChatMessage{Content: text}
			}
			if err := hist.AddMessage(ctx, msg); err != nil {
				return nil, err
			}
		}
		peerRounds(m.ToolUses, func(round []history.ToolUse) {
			calls := make([]llms.ToolCall, len(round))
			for k := range round {
				calls[k] = llms.ToolCall{ID: round[k].ToolCallID, Type: "function",
					FunctionCall: &llms.FunctionCall{Name: round[k].ToolName, Arguments: peerArguments(round[k].Arguments)}}
			}
			_ = hist.AddMessage(ctx, llms.AIChatMessage{ToolCalls: calls}) // never fails in memory
			for k := range round {
				_ = hist.AddMessage(ctx, llms.ToolChatMessage{ID: round[k].ToolCallID, Content: peerResult(&round[k])})
			}
		})
	}
	msgs, err := hist.Messages(ctx)
	if err != nil {
		return nil, err
	}
	return l.tmpl.FormatMessages(map[string]any{
		"prompt":  string(prompt),
		"record":  acct.LLMText(),
		"history": msgs,
		"input":   l.f.Current.Text,
	})
}

// Eino is the eino pipeline: prompt.FromMessages with FString system messages for the prompt
// file and the record, a MessagesPlaceholder for the history and an FString user message.
type Eino struct {
	f    *Fixture
	tmpl *prompt.DefaultChatTemplate
}

// NewEino builds the template once.
func NewEino(f *Fixture) *Eino {
	return &Eino{f: f, tmpl: prompt.FromMessages(schema.FString,
		schema.SystemMessage("{prompt}"),
		schema.SystemMessage("{record}"),
		schema.MessagesPlaceholder("history", false),
		schema.UserMessage("{input}"),
	)}
}

// Build reads the prompt and the record, converts the rows into []*schema.Message and formats
// the template.
func (e *Eino) Build(ctx context.Context) ([]*schema.Message, error) {
	prompt, err := readPrompt(e.f.Files)
	if err != nil {
		return nil, err
	}
	acct, ok := e.f.Env.Lookup(e.f.Current.From)
	if !ok {
		return nil, errors.New("no account")
	}
	rows := e.f.Rows[max(0, len(e.f.Rows)-HistoryMessages):]
	var hist []*schema.Message
	for i := range rows {
		m := &rows[i]
		if text, ok := peerText(m); ok {
			if m.Direction == history.Outbound {
				hist = append(hist, schema.AssistantMessage(text, nil))
			} else {
				hist = append(hist, schema.UserMessage(text))
			}
		}
		peerRounds(m.ToolUses, func(round []history.ToolUse) {
			calls := make([]schema.ToolCall, len(round))
			for k := range round {
				calls[k] = schema.ToolCall{ID: round[k].ToolCallID, Type: "function",
					Function: schema.FunctionCall{Name: round[k].ToolName, Arguments: peerArguments(round[k].Arguments)}}
			}
			hist = append(hist, schema.AssistantMessage("", calls))
			for k := range round {
				hist = append(hist, schema.ToolMessage(peerResult(&round[k]), round[k].ToolCallID, schema.WithToolName(round[k].ToolName)))
			}
		})
	}
	return e.tmpl.Format(ctx, map[string]any{
		"prompt":  string(prompt),
		"record":  acct.LLMText(),
		"history": hist,
		"input":   e.f.Current.Text,
	})
}
