package strict

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// text is a text of about n tokens (o200k_base counts "word " as one token).
func text(n int, seed string) string { return seed + strings.Repeat(" word", n) }

// anBody is a Messages request: the system blocks (each marked when mark is set for it), then
// one user message per text, the last one marked when lastMark is set.
func anBody(model string, system []string, marks map[int]string, users []string, auto bool) []byte {
	var sys []map[string]any
	for i, s := range system {
		b := map[string]any{"type": "text", "text": s}
		if ttl, ok := marks[i]; ok {
			cc := map[string]any{"type": "ephemeral"}
			if ttl != "" {
				cc["ttl"] = ttl
			}
			b["cache_control"] = cc
		}
		sys = append(sys, b)
	}
	var msgs []map[string]any
	for i, u := range users {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, map[string]any{"role": role, "content": []map[string]any{{"type": "text", "text": u}}})
	}
	req := map[string]any{"model": model, "max_tokens": 100, "system": sys, "messages": msgs}
	if auto {
		req["cache_control"] = map[string]any{"type": "ephemeral"}
	}
	b, _ := json.Marshal(req)
	return b
}

// bill runs body through c, failing the test on an error.
func bill(t *testing.T, c *Cache, body []byte) Bill {
	t.Helper()
	if c.API == Anthropic {
		if err := CheckAnthropic(body); err != nil {
			t.Fatalf("CheckAnthropic: %v", err)
		}
	}
	b, err := c.Bill(body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAnthropicCacheRules pins rows A1, A2, A4, A5, A6 and A7 of the rules table.
func TestAnthropicCacheRules(t *testing.T) {
	now := time.Date(2025, 3, 6, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	long := text(1500, "policy")
	t.Run("A2 nothing is cached without a marker", func(t *testing.T) {
		c := &Cache{API: Anthropic, Now: clock}
		for i := 0; i < 2; i++ {
			if b := bill(t, c, anBody("claude-sonnet-4-5", []string{long}, nil, []string{"hi"}, false)); b.Usage.CacheReadTokens != 0 || b.Usage.CacheWriteTokens != 0 {
				t.Fatalf("call %d: %+v", i+1, b.Usage)
			}
		}
	})
	t.Run("A1 A7 a marked prefix is written, then read; the rest is input", func(t *testing.T) {
		c := &Cache{API: Anthropic, Now: clock}
		first := bill(t, c, anBody("claude-sonnet-4-5", []string{long}, map[int]string{0: ""}, []string{"question one"}, false))
		second := bill(t, c, anBody("claude-sonnet-4-5", []string{long}, map[int]string{0: ""}, []string{"question two"}, false))
		if first.Usage.CacheWriteTokens < 1500 || first.Usage.CacheReadTokens != 0 {
			t.Errorf("first: %+v", first.Usage)
		}
		if second.Usage.CacheReadTokens != first.Usage.CacheWriteTokens || second.Usage.CacheWriteTokens != 0 || second.Usage.InputTokens != first.Usage.InputTokens {
			t.Errorf("second: %+v after %+v", second.Usage, first.Usage)
		}
		if want := float64(second.Usage.InputTokens-second.Usage.CacheReadTokens) + 0.1*float64(second.Usage.CacheReadTokens); second.Cost != want {
			t.Errorf("cost %v, want %v (reads at 0.1)", second.Cost, want)
		}
		other := bill(t, c, anBody("claude-sonnet-4-5", []string{"changed " + long}, map[int]string{0: ""}, []string{"question two"}, false))
		if other.Usage.CacheReadTokens != 0 {
			t.Errorf("a changed prefix read %d tokens", other.Usage.CacheReadTokens)
		}
		model := bill(t, c, anBody("claude-opus-4-1", []string{long}, map[int]string{0: ""}, []string{"question two"}, false))
		if model.Usage.CacheReadTokens != 0 {
			t.Errorf("another model read %d tokens", model.Usage.CacheReadTokens)
		}
	})
	t.Run("A5 a prefix below the model's minimum is not written", func(t *testing.T) {
		c := &Cache{API: Anthropic, Now: clock}
		mid := text(1500, "mid") // above Sonnet's 1024, below Haiku 4.5's 4096
		if b := bill(t, c, anBody("claude-haiku-4-5", []string{mid}, map[int]string{0: ""}, []string{"q"}, false)); b.Usage.CacheWriteTokens != 0 {
			t.Errorf("haiku wrote %d", b.Usage.CacheWriteTokens)
		}
		if b := bill(t, c, anBody("claude-sonnet-4-5", []string{mid}, map[int]string{0: ""}, []string{"q"}, false)); b.Usage.CacheWriteTokens == 0 {
			t.Errorf("sonnet wrote nothing")
		}
		for model, want := range map[string]int{"claude-opus-4-5": 4096, "claude-haiku-3-5": 2048, "claude-sonnet-4-5": 1024, "claude-opus-4-1": 1024} {
			if got := MinCacheTokens(model); got != want {
				t.Errorf("MinCacheTokens(%s) = %d, want %d", model, got, want)
			}
		}
	})
	t.Run("A6 a 5m entry expires, a 1h entry lives an hour, a read refreshes", func(t *testing.T) {
		c := &Cache{API: Anthropic, Now: clock}
		body5 := anBody("claude-sonnet-4-5", []string{long}, map[int]string{0: ""}, []string{"q"}, false)
		body1h := anBody("claude-sonnet-4-5", []string{"other " + long}, map[int]string{0: "1h"}, []string{"q"}, false)
		bill(t, c, body5)
		b1h := bill(t, c, body1h)
		if b1h.Write1h != b1h.Usage.CacheWriteTokens || b1h.Cost != float64(b1h.Usage.InputTokens-b1h.Usage.CacheWriteTokens)+2*float64(b1h.Write1h) {
			t.Errorf("1h write %+v, cost %v", b1h, b1h.Cost)
		}
		now = now.Add(4 * time.Minute)
		if b := bill(t, c, body5); b.Usage.CacheReadTokens == 0 {
			t.Errorf("read after 4 minutes: %+v", b.Usage)
		}
		now = now.Add(4 * time.Minute) // 8 minutes after the write, 4 after the read
		if b := bill(t, c, body5); b.Usage.CacheReadTokens == 0 {
			t.Errorf("the read did not refresh the entry: %+v", b.Usage)
		}
		now = now.Add(6 * time.Minute)
		if b := bill(t, c, body5); b.Usage.CacheReadTokens != 0 {
			t.Errorf("read after 6 idle minutes: %+v", b.Usage)
		}
		if b := bill(t, c, body1h); b.Usage.CacheReadTokens == 0 {
			t.Errorf("the 1h entry expired after 18 minutes: %+v", b.Usage)
		}
	})
	t.Run("A4 a marker finds an entry up to 20 blocks back", func(t *testing.T) {
		for _, tt := range []struct {
			added int
			hit   bool
		}{{18, true}, {19, true}, {20, false}} {
			c := &Cache{API: Anthropic, Now: clock}
			turns := []string{"q0"}
			bill(t, c, anBody("claude-sonnet-4-5", []string{long}, nil, turns, true))
			for i := 0; i < tt.added; i++ {
				turns = append(turns, fmt.Sprintf("turn %d", i+1))
			}
			if len(turns)%2 == 0 {
				turns = append(turns[:len(turns)-1], "last")
			}
			b := bill(t, c, anBody("claude-sonnet-4-5", []string{long}, nil, turns, true))
			if got := b.Usage.CacheReadTokens > 0; got != tt.hit {
				t.Errorf("%d blocks later: read %d, want a hit %v", len(turns)-1, b.Usage.CacheReadTokens, tt.hit)
			}
		}
	})
}

// TestAnthropicMarkerChecks pins rows A3 and A6's ordering rule: at most 4 markers, no 1h
// after a 5m one, ephemeral markers only.
func TestAnthropicMarkerChecks(t *testing.T) {
	sys := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		name  string
		marks map[int]string
		auto  bool
		want  string
	}{
		{"four markers", map[int]string{0: "", 1: "", 2: "", 3: ""}, false, ""},
		{"five markers", map[int]string{0: "", 1: "", 2: "", 3: "", 4: ""}, false, "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"the top-level marker counts", map[int]string{0: "", 1: "", 2: "", 3: ""}, true, "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{"1h after 5m", map[int]string{0: "5m", 1: "1h"}, false, `system.1: a ttl="1h" cache_control block must not come after a ttl="5m" cache_control block (the 5m one at system.0)`},
		{"1h before 5m", map[int]string{0: "1h", 1: ""}, false, ""},
		{"bad ttl", map[int]string{0: "10m"}, false, `system.0.cache_control: cache_control: type must be "ephemeral" and ttl "5m" or "1h", got type "ephemeral" ttl "10m"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckAnthropic(anBody("claude-sonnet-4-5", sys, tt.marks, []string{"hi"}, tt.auto))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// chatBody is a chat completion request with the given key and messages.
func chatBody(key string, msgs ...string) []byte {
	var ms []map[string]any
	for i, m := range msgs {
		role := "system"
		if i > 0 {
			role = "user"
		}
		ms = append(ms, map[string]any{"role": role, "content": m})
	}
	req := map[string]any{"model": "gpt-4.1-mini", "messages": ms}
	if key != "" {
		req["prompt_cache_key"] = key
	}
	b, _ := json.Marshal(req)
	return b
}

// TestOpenAICacheRules pins rows O1 to O4: automatic caching from 1,024 tokens in 128-token
// steps, routing by key, in-memory retention.
func TestOpenAICacheRules(t *testing.T) {
	now := time.Date(2025, 3, 6, 12, 0, 0, 0, time.UTC)
	c := &Cache{API: Chat, Now: func() time.Time { return now }}
	long := text(2000, "instructions")
	for _, body := range [][]byte{chatBody("k1", text(500, "short"), "q1"), chatBody("k1", text(500, "short"), "q2")} {
		if b := bill(t, c, body); b.Usage.CacheReadTokens != 0 {
			t.Errorf("a prompt under 1024 tokens read %d", b.Usage.CacheReadTokens)
		}
	}
	bill(t, c, chatBody("k1", long, "q1"))
	b := bill(t, c, chatBody("k1", long, "q2"))
	if r := b.Usage.CacheReadTokens; r < 1024 || (r-1024)%128 != 0 || r > b.Usage.InputTokens {
		t.Errorf("read %d of %d, want 1024 + 128k", r, b.Usage.InputTokens)
	}
	if b := bill(t, c, chatBody("k2", long, "q3")); b.Usage.CacheReadTokens != 0 {
		t.Errorf("another key read %d", b.Usage.CacheReadTokens)
	}
	now = now.Add(6 * time.Minute)
	if b := bill(t, c, chatBody("k1", long, "q4")); b.Usage.CacheReadTokens != 0 {
		t.Errorf("read %d after 6 idle minutes of in-memory retention", b.Usage.CacheReadTokens)
	}
	if err := CheckChat(chatBody(strings.Repeat("k", 65), "x", "y")); err == nil || !strings.Contains(err.Error(), OaCacheKey) {
		t.Errorf("a 65-character key: %v", err)
	}
}
