package review

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// Factory builds one persona of a review program: Key names it ("<side>|<persona>|<env>", as
// the program's job does) and New builds it with the host's env over opts.
type Factory struct {
	Key string
	New func(ctx context.Context, opts runtime.Options) (*runtime.Persona, error)
}

// Job is what `personagen render` and `diff` ask a review program to render, as JSON on its
// standard input.
type Job struct {
	Items []JobItem `json:"items"`
}

// JobItem is one persona and fixture to render: the Factory key, the fixture file, the prompt
// root (a directory, runtime.DirFiles), the stubs resolved to chain steps, and the wire formats
// ("" the transcript, or one of Wires).
type JobItem struct {
	Factory string     `json:"factory"`
	Fixture string     `json:"fixture"`
	Root    string     `json:"root"`
	Stubs   []StepStub `json:"stubs,omitempty"`
	Wires   []string   `json:"wires"`
}

// StepStub replaces step Index (0-based) of the message chain (Responsibility false) or the
// responsibility chain by a resolver that contributes Text as one message of Role (nothing
// when Text is blank), keeping the step's Changes.
type StepStub struct {
	Responsibility bool      `json:"responsibility,omitempty"`
	Index          int       `json:"index"`
	Role           chat.Role `json:"role"`
	Text           string    `json:"text"`
}

// Result is a review program's answer, as JSON on its standard output: one ItemResult per
// JobItem, in order.
type Result struct {
	Items []ItemResult `json:"items"`
}

// ItemResult is the rendering of one JobItem: what was answered ("reply to 05-….eml", "fire
// of daily-digest"), the number of messages and tools, and one Rendering per wire format; or
// the Error that stopped it.
type ItemResult struct {
	Answered   string      `json:"answered,omitempty"`
	Messages   int         `json:"messages,omitempty"`
	Tools      int         `json:"tools,omitempty"`
	Renderings []Rendering `json:"renderings,omitempty"`
	Error      string      `json:"error,omitempty"`
}

// Main is the body of a generated review program: it reads a Job from standard input, renders
// every item with its factory (RenderItem) and writes the Result to standard output. It exits
// 2 when the job cannot be read or the result not written; an item that fails carries its
// error and the others are rendered.
func Main(factories []Factory) {
	var job Job
	if err := json.NewDecoder(os.Stdin).Decode(&job); err != nil {
		fmt.Fprintln(os.Stderr, "review program: reading the job:", err)
		os.Exit(2)
	}
	res := Run(context.Background(), factories, job)
	if err := writeResult(os.Stdout, res); err != nil {
		fmt.Fprintln(os.Stderr, "review program:", err)
		os.Exit(2)
	}
}

func writeResult(w io.Writer, res Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(res)
}

// Run renders every item of job with the factory its key names.
func Run(ctx context.Context, factories []Factory, job Job) Result {
	byKey := map[string]Factory{}
	for _, f := range factories {
		byKey[f.Key] = f
	}
	var res Result
	for _, it := range job.Items {
		out, err := RenderItem(ctx, byKey[it.Factory], it)
		if err != nil {
			out = ItemResult{Error: err.Error()}
		}
		res.Items = append(res.Items, out)
	}
	return res
}

// RenderItem renders one item: it opens an in-memory SQLite store, builds the persona with
// f.New (its Files the item's root, its History the store), replaces the stubbed steps, seeds
// the fixture (Seed), assembles the request with runtime.BuildRequest — exactly what the runner
// sends first — and renders it in each wire format.
func RenderItem(ctx context.Context, f Factory, it JobItem) (ItemResult, error) {
	if f.New == nil {
		return ItemResult{}, fmt.Errorf("the review program has no persona %q", it.Factory)
	}
	fx, problems := LoadFixture(it.Fixture)
	if len(problems) > 0 {
		var msgs []string
		for _, p := range problems {
			msgs = append(msgs, p.Error())
		}
		return ItemResult{}, fmt.Errorf("%s", strings.Join(msgs, "\n"))
	}
	st, err := store.Open(ctx, ":memory:")
	if err != nil {
		return ItemResult{}, err
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		return ItemResult{}, err
	}
	files, err := runtime.DirFiles(it.Root)
	if err != nil {
		return ItemResult{}, err
	}
	p, err := f.New(ctx, runtime.Options{Files: files, History: st})
	if err != nil {
		return ItemResult{}, err
	}
	if err := stub(p, it.Stubs); err != nil {
		return ItemResult{}, err
	}
	inv, answered, err := Seed(ctx, st, p, fx)
	if err != nil {
		return ItemResult{}, err
	}
	inv.Logger = slog.New(slog.DiscardHandler)
	req, err := runtime.BuildRequest(ctx, inv)
	if err != nil {
		return ItemResult{}, err
	}
	out := ItemResult{Answered: answered, Messages: len(req.Messages), Tools: len(req.Tools)}
	for _, w := range it.Wires {
		r, err := Render(ctx, req, w)
		if err != nil {
			return ItemResult{}, err
		}
		out.Renderings = append(out.Renderings, *r)
	}
	return out, nil
}

// stub replaces the stubbed steps of p's chains.
func stub(p *runtime.Persona, stubs []StepStub) error {
	if len(stubs) == 0 {
		return nil
	}
	msg, resp := p.MessageChain.Steps(), p.ResponsibilityChain.Steps()
	for _, s := range stubs {
		steps := msg
		if s.Responsibility {
			steps = resp
		}
		if s.Index < 0 || s.Index >= len(steps) {
			return fmt.Errorf("stub of step %d: the chain has %d steps", s.Index+1, len(steps))
		}
		text, role := strings.TrimSpace(s.Text), s.Role
		if role == "" {
			role = chat.RoleSystem
		}
		steps[s.Index].Resolver = runtime.ResolverFunc(func(_ context.Context, _ *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
			if text == "" {
				return dst, nil
			}
			return append(dst, chat.Message{Role: role, Text: text}), nil
		})
	}
	p.MessageChain = runtime.NewChain(msg...)
	if p.ResponsibilityChain != nil {
		p.ResponsibilityChain = runtime.NewChain(resp...)
	}
	return nil
}
