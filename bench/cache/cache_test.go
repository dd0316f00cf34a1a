package cache

import (
	"context"
	"testing"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/provider/fakeapi"
)

// measure runs the three sides on Anthropic: the persona's plan, the plan off, langchaingo.
func measure(t testing.TB) (ours, off, lc *Result) {
	ctx := context.Background()
	var err error
	if ours, err = Thread(ctx, fakeapi.Anthropic, len(questions), nil); err != nil {
		t.Fatal(err)
	}
	if off, err = Thread(ctx, fakeapi.Anthropic, len(questions), func(p *runtime.Persona) { p.Cache.Off = true }); err != nil {
		t.Fatal(err)
	}
	if lc, err = LangChainGo(ctx, off.Requests); err != nil {
		t.Fatal(err)
	}
	return ours, off, lc
}

// TestAnthropicCacheTargets holds the targets: at least 80 % of the input tokens read from the
// cache from the second call on, and the billed input at most 0.35 of the same thread without
// a cache plan.
func TestAnthropicCacheTargets(t *testing.T) {
	ours, off, lc := measure(t)
	share, ratio := ours.Share(), ours.Cost()/float64(off.Input())
	t.Logf("%d calls, %d input tokens; cached share from call 2: %.3f; cost %.0f vs %.0f uncached (ratio %.3f); plan off share %.3f; langchaingo share %.3f, cost ratio %.3f",
		len(ours.Calls), ours.Input(), share, ours.Cost(), float64(off.Input()), ratio, off.Share(), lc.Share(), lc.Cost()/float64(off.Input()))
	if share < 0.80 {
		t.Errorf("cached share %.3f, want at least 0.80", share)
	}
	if ratio > 0.35 {
		t.Errorf("cost ratio %.3f, want at most 0.35", ratio)
	}
	if off.Share() != 0 || lc.Share() != 0 {
		t.Errorf("without markers something was read from the cache: off %.3f, langchaingo %.3f", off.Share(), lc.Share())
	}
	if len(ours.Calls) != len(off.Calls) || len(off.Calls) != len(lc.Calls) {
		t.Errorf("calls: %d, %d, %d", len(ours.Calls), len(off.Calls), len(lc.Calls))
	}
}

// TestSteppedWindowKeepsThePrefix runs a thread of 30 messages with a history window of 10:
// sliding one message at a time moves the cached prefix on every call once the thread is
// longer than the window; advancing in steps of 5 keeps it for several turns.
func TestSteppedWindowKeepsThePrefix(t *testing.T) {
	ctx := context.Background()
	sliding, err := Thread(ctx, fakeapi.Anthropic, 30, Window(10, 1))
	if err != nil {
		t.Fatal(err)
	}
	stepped, err := Thread(ctx, fakeapi.Anthropic, 30, Window(10, 5))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("30 messages, window 10: sliding share %.3f cost %.0f; stepped (5) share %.3f cost %.0f",
		sliding.Share(), sliding.Cost(), stepped.Share(), stepped.Cost())
	if stepped.Share() <= sliding.Share() || stepped.Cost() >= sliding.Cost() {
		t.Errorf("stepped window: share %.3f cost %.0f; sliding: share %.3f cost %.0f; want the stepped one to cache more and cost less",
			stepped.Share(), stepped.Cost(), sliding.Share(), sliding.Cost())
	}
}

// BenchmarkCache reports the figures as metrics: cached share from the second call
// (cached/input) and billed input relative to the plan off (cost/uncached), on Anthropic and on
// OpenAI's Chat Completions (automatic caching with prompt_cache_key); langchaingo's requests
// on Anthropic; and a thread longer than its history window, sliding and stepped.
func BenchmarkCache(b *testing.B) {
	ctx := context.Background()
	for _, api := range []struct {
		name string
		api  fakeapi.API
	}{{"anthropic", fakeapi.Anthropic}, {"openai_chat", fakeapi.OpenAI}} {
		b.Run(api.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ours, err := Thread(ctx, api.api, len(questions), nil)
				if err != nil {
					b.Fatal(err)
				}
				off, err := Thread(ctx, api.api, len(questions), func(p *runtime.Persona) { p.Cache.Off = true })
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(ours.Share(), "cached/input")
				b.ReportMetric(ours.Cost()/float64(off.Input()), "cost/uncached")
				b.ReportMetric(float64(len(ours.Calls)), "calls")
			}
		})
	}
	for _, w := range []struct {
		name string
		step int
	}{{"window_sliding", 1}, {"window_stepped", 5}} {
		b.Run(w.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				ours, err := Thread(ctx, fakeapi.Anthropic, 30, Window(10, w.step))
				if err != nil {
					b.Fatal(err)
				}
				off, err := Thread(ctx, fakeapi.Anthropic, 30, func(p *runtime.Persona) { Window(10, w.step)(p); p.Cache.Off = true })
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(ours.Share(), "cached/input")
				b.ReportMetric(ours.Cost()/float64(off.Input()), "cost/uncached")
			}
		})
	}
	b.Run("langchaingo_anthropic", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			off, err := Thread(ctx, fakeapi.Anthropic, len(questions), func(p *runtime.Persona) { p.Cache.Off = true })
			if err != nil {
				b.Fatal(err)
			}
			lc, err := LangChainGo(ctx, off.Requests)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(lc.Share(), "cached/input")
			b.ReportMetric(lc.Cost()/float64(off.Input()), "cost/uncached")
		}
	})
}
