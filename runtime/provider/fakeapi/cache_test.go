package fakeapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/fakeapi"
	"github.com/personagen/personagen/runtime/provider/openai"
	"github.com/personagen/personagen/spec"
)

// longPrompt is a system prompt of about 2,000 tokens: above every model's minimum.
var longPrompt = strings.Repeat("Answer support email for Acme Tracker: read the account first, search the help center before explaining a feature, and sign as Mira. ", 80)

// persona builds a support persona whose chain is the given steps (classified as the
// generator classifies their spec entries), over src.
func persona(src history.Source, metadataFirst bool) *runtime.Persona {
	meta := runtime.Step{Kind: "load_text", Changes: runtime.PerMessage, Resolver: &runtime.LoadText{TextFunc: func(inv *runtime.Invocation) (string, error) {
		return "This message came from " + inv.Inbound.From + " on " + runtime.FormatDate(inv.Inbound.Date) + ".", nil
	}}}
	steps := []runtime.Step{
		{Kind: "load_file", Changes: runtime.PerPersona, Resolver: &runtime.LoadText{Text: longPrompt}},
		{Kind: "thread_history", Changes: runtime.PerThread, Resolver: &runtime.ThreadHistory{Source: src}},
	}
	if metadataFirst {
		steps = append([]runtime.Step{meta}, steps...)
	} else {
		steps = append(steps, meta)
	}
	p := &runtime.Persona{Name: "support-agent", Model: chat.ModelSettings{Name: "claude-sonnet-4-5"}, MessageChain: runtime.NewChain(steps...)}
	p.Mailbox.Address = "support@example.com"
	return p
}

// converse answers n customer messages of one thread one by one through model, storing each
// question and answer in src, and returns the usage of every call.
func converse(t *testing.T, srv *fakeapi.Server, model chat.Model, p *runtime.Persona, src *memory.Source, n int) []chat.Usage {
	t.Helper()
	ctx := context.Background()
	var out []chat.Usage
	for i := 0; i < n; i++ {
		in := history.Message{ThreadID: "t1", MessageID: fmt.Sprintf("q%d@example.com", i), Direction: history.Inbound,
			From: "Lena <lena@example.com>", To: []string{"support@example.com"}, Subject: "Billing",
			Date: time.Date(2025, 3, 6, 9, i, 0, 0, time.UTC), Text: fmt.Sprintf("Question %d: why was invoice INV-%d charged twice?", i, 100+i)}
		seq, err := src.AppendMessage(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		in.Seq = seq
		req, err := runtime.BuildRequest(ctx, &runtime.Invocation{Persona: p, Inbound: &in})
		if err != nil {
			t.Fatal(err)
		}
		answer := fmt.Sprintf("Hi Lena, invoice INV-%d was captured once; the second line is a pre-authorisation that expires. Mira", 100+i)
		srv.Queue(fakeapi.Answer{Text: answer})
		resp, err := model.Generate(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, resp.Usage)
		srv.Advance(time.Minute)
		reply := history.Message{ThreadID: "t1", MessageID: fmt.Sprintf("r%d@example.com", i), Direction: history.Outbound,
			From: "support@example.com", To: []string{"lena@example.com"}, Subject: "Re: Billing", Date: in.Date.Add(30 * time.Second), Text: resp.Message.Text}
		if _, err := src.AppendMessage(ctx, reply); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// share is the part of the input tokens of calls[1:] read from the cache.
func share(us []chat.Usage) float64 {
	var in, read int64
	for _, u := range us[1:] {
		in, read = in+u.InputTokens, read+u.CacheReadTokens
	}
	return float64(read) / float64(in)
}

// TestCacheBustingOrderScoresLowAndIsWarnedAt is the negative test: the same persona with its
// per-message metadata first reads nothing from Anthropic's cache, while the stablest-first
// order reads most of every request after the first; validate warns at the line of the
// misplaced entry.
func TestCacheBustingOrderScoresLowAndIsWarnedAt(t *testing.T) {
	for _, tt := range []struct {
		name     string
		first    bool
		min, max float64
	}{
		{"stablest first", false, 0.9, 1},
		{"metadata first", true, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := fakeapi.New(fakeapi.Anthropic)
			defer srv.Close()
			model := anthropic.New(option.WithBaseURL(srv.URL), option.WithAPIKey("test"), option.WithMaxRetries(0))
			src := memory.New()
			us := converse(t, srv, model, persona(src, tt.first), src, 5)
			if got := share(us); got < tt.min || got > tt.max {
				t.Errorf("cache share from the second call = %.3f, want within [%.2f, %.2f] (usage %+v)", got, tt.min, tt.max, us)
			}
			if r := srv.Rejections(); len(r) > 0 {
				t.Errorf("the server refused: %v", r)
			}
		})
	}
	specs, diags := spec.LoadPaths([]string{"testdata/busting.persona.yaml"})
	if len(diags) > 0 || len(specs) != 1 {
		t.Fatalf("load: %v", diags)
	}
	ws := spec.CacheWarnings(specs[0])
	want := "testdata/busting.persona.yaml:7:5: warning: load_text changes per message but comes before load_file at line 8, which changes per persona: every request differs from here on, so the prompt cache serves nothing after it; move the entry at line 8 before this one, or this one after it"
	if len(ws) != 1 || ws[0].String() != want {
		t.Errorf("warnings = %v\nwant [%s]", ws, want)
	}
}

// TestOpenAICachesByKeyAndPrefix pins OpenAI's automatic caching through the Chat adapter: the
// second request of the thread reads its cached prefix in 128-token steps above 1,024.
func TestOpenAICachesByKeyAndPrefix(t *testing.T) {
	srv := fakeapi.New(fakeapi.OpenAI)
	defer srv.Close()
	model := openai.NewChat(openaioption.WithBaseURL(srv.URL+"/v1"), openaioption.WithAPIKey("test"), openaioption.WithMaxRetries(0))
	src := memory.New()
	p := persona(src, false)
	p.Model = chat.ModelSettings{Name: "gpt-4.1-mini"}
	us := converse(t, srv, model, p, src, 3)
	for i, u := range us[1:] {
		if u.CacheReadTokens < 1024 || (u.CacheReadTokens-1024)%128 != 0 || u.CacheReadTokens > u.InputTokens {
			t.Errorf("call %d: cached %d of %d tokens, want at least 1024 in steps of 128", i+2, u.CacheReadTokens, u.InputTokens)
		}
	}
	if us[0].CacheReadTokens != 0 {
		t.Errorf("the first call read %d cached tokens", us[0].CacheReadTokens)
	}
}
