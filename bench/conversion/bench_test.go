package conversion

import (
	"context"
	"testing"

	anthropicsdk "github.com/anthropics/anthropic-sdk-go/v2/option"
	openaisdk "github.com/openai/openai-go/v3/option"
	lcanthropic "github.com/tmc/langchaingo/llms/anthropic"
	lcopenai "github.com/tmc/langchaingo/llms/openai"

	"github.com/personagen/personagen/bench/assembly"
	"github.com/personagen/personagen/bench/internal/cputime"
	"github.com/personagen/personagen/runtime/provider/anthropic"
	"github.com/personagen/personagen/runtime/provider/openai"
)

// measure runs op b.N times and reports, besides the standard metrics, cpu-ns/op: the CPU
// time of the process per op (user + system, all threads, so the garbage collector's share
// counts), which moves far less than wall time on a shared machine.
func measure(b *testing.B, op func() error) {
	b.ReportAllocs()
	cpu0, ok := cputime.Process()
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	if cpu1, ok1 := cputime.Process(); ok && ok1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkConversion times the request assembly of the assembly benchmark and, on its output,
// the conversion to each SDK's parameters (no encoding, no client). Each op is one whole
// request. Run: go test -run '^$' -bench Conversion -benchmem ./conversion/
func BenchmarkConversion(b *testing.B) {
	ctx := context.Background()
	p, err := assembly.NewPersonagen(assembly.NewFixture())
	if err != nil {
		b.Fatal(err)
	}
	req, err := p.Build(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("assembly", func(b *testing.B) {
		measure(b, func() error { _, err := p.Build(ctx); return err })
	})
	b.Run("anthropic", func(b *testing.B) {
		measure(b, func() error { _, err := anthropic.Params(req); return err })
	})
	b.Run("openai_chat", func(b *testing.B) {
		measure(b, func() error { _, err := openai.ChatParams(req); return err })
	})
	b.Run("openai_responses", func(b *testing.B) {
		measure(b, func() error { _, err := openai.ResponsesParams(req); return err })
	})
}

// BenchmarkSend times one whole model call on the same request — conversion, the SDK's
// encoding, the client, decoding a short answer — through personagen's adapters and through
// langchaingo's model packages, each with an in-process HTTP client (Doer).
// Run: go test -run '^$' -bench Send -benchmem ./conversion/
func BenchmarkSend(b *testing.B) {
	ctx := context.Background()
	req, err := Request(ctx)
	if err != nil {
		b.Fatal(err)
	}
	msgs, tools := LangChainGo(req)

	an := anthropic.New(anthropicsdk.WithoutEnvironmentDefaults(), anthropicsdk.WithAPIKey("k"),
		anthropicsdk.WithBaseURL("http://model.invalid"), anthropicsdk.WithHTTPClient(Doer{AnthropicReply}), anthropicsdk.WithMaxRetries(0))
	b.Run("personagen_anthropic", func(b *testing.B) {
		measure(b, func() error { _, err := an.Generate(ctx, req); return err })
	})
	lca, err := lcanthropic.New(lcanthropic.WithToken("k"), lcanthropic.WithModel(req.Model.Name),
		lcanthropic.WithBaseURL("http://model.invalid/v1"), lcanthropic.WithHTTPClient(Doer{AnthropicReply}))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("langchaingo_anthropic", func(b *testing.B) {
		measure(b, func() error { _, err := lca.GenerateContent(ctx, msgs, llmsTools(tools)...); return err })
	})
	chat := openai.NewChat(openaisdk.WithAPIKey("k"), openaisdk.WithBaseURL("http://model.invalid/v1"),
		openaisdk.WithHTTPClient(Doer{ChatReply}), openaisdk.WithMaxRetries(0))
	b.Run("personagen_openai_chat", func(b *testing.B) {
		measure(b, func() error { _, err := chat.Generate(ctx, req); return err })
	})
	lco, err := lcopenai.New(lcopenai.WithToken("k"), lcopenai.WithModel(req.Model.Name),
		lcopenai.WithBaseURL("http://model.invalid/v1"), lcopenai.WithHTTPClient(Doer{ChatReply}))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("langchaingo_openai", func(b *testing.B) {
		measure(b, func() error { _, err := lco.GenerateContent(ctx, msgs, llmsTools(tools)...); return err })
	})
}
