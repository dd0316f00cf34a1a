package cache

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"
	"github.com/tmc/langchaingo/llms"
	lcanthropic "github.com/tmc/langchaingo/llms/anthropic"

	"github.com/personagen/personagen/bench/conversion"
	"github.com/personagen/personagen/examples"
	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/generated"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/fakeapi"
	"github.com/personagen/personagen/runtime/provider/openai"
	"github.com/personagen/personagen/runtime/provider/providertest"
	"github.com/personagen/personagen/runtime/store"
)

// Result is what one thread cost: every call the fake API answered, and the requests the runner
// sent, in order.
type Result struct {
	Calls    []fakeapi.Call
	Requests []*chat.Request
}

// Share is the part of the input tokens of the calls from the second on read from the cache.
func (r *Result) Share() float64 {
	var in, read int64
	for _, c := range r.Calls[1:] {
		in, read = in+c.Usage.InputTokens, read+c.Usage.CacheReadTokens
	}
	if in == 0 {
		return 0
	}
	return float64(read) / float64(in)
}

// Cost is the billed input of all calls, in uncached-token units (fakeapi.Call.Cost).
func (r *Result) Cost() float64 {
	c := 0.0
	for _, x := range r.Calls {
		c += x.Cost
	}
	return c
}

// Input is the input tokens of all calls.
func (r *Result) Input() int64 {
	var n int64
	for _, x := range r.Calls {
		n += x.Usage.InputTokens
	}
	return n
}

// question is one customer message of the thread and the tool rounds of its run.
type question struct {
	text   string
	rounds [][]providertest.Call
}

func lookup(n string) providertest.Call {
	return providertest.Call{ID: "call_" + n, Name: "lookup_order", Arguments: `{"number":"` + n + `"}`}
}

func search(q string) providertest.Call {
	b, _ := json.Marshal(map[string]string{"query": q})
	return providertest.Call{ID: "call_s" + fmt.Sprint(len(q)), Name: "search_help_center", Arguments: string(b)}
}

// Questions are the ten messages of the support thread.
var questions = []question{
	{"Hello, our card was charged twice for invoice INV-2025-0117 on 1 March. Can you check?", [][]providertest.Call{{lookup("INV-2025-0117")}}},
	{"Thanks. When will the refund reach our card?", [][]providertest.Call{{search("refund card arrival")}}},
	{"Can we switch to annual billing from April?", [][]providertest.Call{{lookup("SUB-BRIGHTLINE")}, {search("annual billing switch")}}},
	{"Jonas handles our invoices from now on; please copy him.", nil},
	{"The refund still has not arrived. Our statement shows no credit.", [][]providertest.Call{{lookup("INV-2025-0117")}}},
	{"Our card was replaced on 4 March. Does that matter for the refund?", [][]providertest.Call{{search("refund replaced card")}}},
	{"Can you send the refund by bank transfer instead?", [][]providertest.Call{{search("refund bank transfer")}}},
	{"Here is our IBAN for the transfer: DE02 1001 0010 0123 4567 89.", nil},
	{"Will the annual plan keep our 24 seats?", [][]providertest.Call{{lookup("SUB-BRIGHTLINE")}}},
	{"Thanks for your help, that's everything for now.", nil},
}

// Thread has the support persona answer n questions of the thread (the ten questions, again
// from the first after the tenth), one run each, through api's fake server. configure, when
// set, changes the persona before the first run.
func Thread(ctx context.Context, api fakeapi.API, n int, configure func(*runtime.Persona)) (*Result, error) {
	st, err := store.Open(ctx, ":memory:")
	if err != nil {
		return nil, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return nil, err
	}
	env, _ := host.ExampleEnv(ctx)
	p, err := generated.NewSupportAgent(env, runtime.Options{Files: runtime.FSFiles(examples.Prompts), History: st})
	if err != nil {
		return nil, err
	}
	srv := fakeapi.New(api)
	defer srv.Close()
	var model chat.Model
	switch api {
	case fakeapi.Anthropic:
		model = anthropic.New(anthropicsdk.WithoutEnvironmentDefaults(), anthropicsdk.WithBaseURL(srv.URL), anthropicsdk.WithAPIKey("bench"), anthropicsdk.WithMaxRetries(0))
	default:
		p.Model = chat.ModelSettings{Name: "gpt-4.1-mini", Provider: "openai", MaxTokens: p.Model.MaxTokens}
		model = openai.NewChat(openaisdk.WithBaseURL(srv.URL+"/v1"), openaisdk.WithAPIKey("bench"), openaisdk.WithMaxRetries(0))
	}
	if configure != nil {
		configure(p)
	}
	res := &Result{}
	record := chat.ModelFunc(func(ctx context.Context, req *chat.Request) (*chat.Response, error) {
		cp := *req
		cp.Messages = append([]chat.Message(nil), req.Messages...)
		res.Requests = append(res.Requests, &cp)
		return model.Generate(ctx, req)
	})
	runner := &agent.Runner{Store: st, Model: record, Holder: "bench", Logger: slog.New(slog.DiscardHandler)}
	thread := "support-agent/bench-thread"
	date := time.Date(2025, 3, 6, 9, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		q := questions[i%len(questions)]
		for k, round := range q.rounds {
			calls := make([]providertest.Call, len(round))
			for j, c := range round {
				c.ID = fmt.Sprintf("%s_%d_%d", c.ID, i, k)
				calls[j] = c
			}
			srv.Queue(fakeapi.Answer{Calls: calls})
		}
		srv.Queue(fakeapi.Answer{Text: fmt.Sprintf("Hi Lena,\n\nthank you for your message. I have looked into it (%d) and here is what I found: everything is in order, and a colleague follows up within four hours if anything is still open.\n\nMira, Acme Tracker Support", i+1)})
		m := store.Message{Mailbox: "support-agent", Message: history.Message{ThreadID: thread, MessageID: fmt.Sprintf("q%d@brightline.io", i+1),
			Direction: history.Inbound, From: "Lena Fischer <lena.fischer@brightline.io>", To: []string{"Acme Tracker Support <support@acme.example>"},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: date.Add(time.Duration(i) * 10 * time.Minute), Text: q.text}}
		a, err := st.AppendMessage(ctx, m)
		if err != nil {
			return nil, err
		}
		m.Seq = a.Seq
		if _, err := runner.Reply(ctx, agent.Inbound{Persona: p, Message: m}); err != nil {
			return nil, fmt.Errorf("message %d: %w", i+1, err)
		}
		srv.Advance(2 * time.Minute)
	}
	if r := srv.Rejections(); len(r) > 0 {
		return nil, fmt.Errorf("the fake API refused a request: %s", r[0])
	}
	res.Calls = srv.Calls()
	return res, nil
}

// LangChainGo sends each request through langchaingo's llms/anthropic (the same messages and
// tools, converted as bench/conversion does) to a fresh cache-honest fake, a minute apart
// between the runs' first calls, and returns what it billed. The fake is lenient: langchaingo
// v0.1.14 sends a temperature, which the Messages API of anthropic-sdk-go v2.15.0 has no field
// for, so a strict server refuses its requests.
func LangChainGo(ctx context.Context, reqs []*chat.Request) (*Result, error) {
	srv := fakeapi.New(fakeapi.Anthropic)
	defer srv.Close()
	srv.Lenient = true // langchaingo sends temperature, which this API version refuses
	llm, err := lcanthropic.New(lcanthropic.WithToken("bench"), lcanthropic.WithModel(reqs[0].Model.Name), lcanthropic.WithBaseURL(srv.URL+"/v1"))
	if err != nil {
		return nil, err
	}
	for _, req := range reqs {
		msgs, tools := conversion.LangChainGo(req)
		if _, err := llm.GenerateContent(ctx, msgs, llms.WithTools(tools), llms.WithMaxTokens(4096)); err != nil {
			return nil, err
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == chat.RoleUser {
			srv.Advance(time.Minute)
		}
	}
	if r := srv.Rejections(); len(r) > 0 {
		return nil, fmt.Errorf("the fake API refused a langchaingo request: %s", r[0])
	}
	return &Result{Calls: srv.Calls(), Requests: reqs}, nil
}

// Window returns a configure function for Thread that replaces the persona's thread_history
// by one of the given limit and step (1: sliding one message at a time).
func Window(limit, step int) func(*runtime.Persona) {
	return func(p *runtime.Persona) {
		steps := p.MessageChain.Steps()
		for i, s := range steps {
			if h, ok := s.Resolver.(*runtime.ThreadHistory); ok {
				cp := *h
				cp.Limit, cp.Step = limit, step
				steps[i].Resolver = &cp
			}
		}
		p.MessageChain = runtime.NewChain(steps...)
	}
}
