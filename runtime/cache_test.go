package runtime

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
)

// thread stores n exchanges (an inbound message and its reply) and returns the source and the
// next inbound message, stored.
func cacheThread(t *testing.T, n int) (*memory.Source, *history.Message) {
	t.Helper()
	ctx := context.Background()
	src := memory.New()
	add := func(dir history.Direction, i int, text string) history.Message {
		m := history.Message{ThreadID: "t1", MessageID: fmt.Sprintf("%s%d", dir, i), Direction: dir, From: "a@example.com",
			Date: time.Date(2025, 3, 1, 9, i, 0, 0, time.UTC), Subject: "s", Text: text}
		seq, err := src.AppendMessage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		m.Seq = seq
		return m
	}
	for i := 0; i < n; i++ {
		add(history.Inbound, i, fmt.Sprintf("question %d", i))
		add(history.Outbound, i, fmt.Sprintf("answer %d", i))
	}
	in := add(history.Inbound, n, "the new question")
	return src, &in
}

// TestBuildRequestPlansTheCacheFromTheSteps pins the plan of a chain ordered stablest first:
// the persona prefix, the end of the previous request's thread prefix (where the history's last
// turn begins), the end of this one, the tail, the persona's TTL and the hashed key.
func TestBuildRequestPlansTheCacheFromTheSteps(t *testing.T) {
	src, in := cacheThread(t, 2)
	p := &Persona{Name: "support-agent", Cache: CacheSettings{TTL: time.Hour}, Tools: []Tool{fakeTool{"lookup"}},
		MessageChain: NewChain(
			Step{Kind: "load_text", Changes: PerPersona, Resolver: &LoadText{Text: "system"}},
			Step{Kind: "load_text", Changes: PerPersona, Resolver: &LoadText{Text: "policy"}},
			Step{Kind: "thread_history", Changes: PerThread, Resolver: &ThreadHistory{Source: src}},
			Step{Kind: "load_text", Changes: PerMessage, Resolver: &LoadText{Text: "metadata"}},
		)}
	req, err := BuildRequest(context.Background(), &Invocation{Persona: p, Inbound: in})
	if err != nil {
		t.Fatal(err)
	}
	// 2 system, 4 history (q0 a0 q1 a1), metadata, the question: the previous request (for q1)
	// replayed q0 a0, so its thread prefix ended after message 4.
	want := &chat.CachePlan{Key: cacheKey(p, &Invocation{Inbound: in}), Tail: true, Breakpoints: []chat.CacheBreakpoint{
		{End: 2, Scope: chat.CachePersona, TTL: time.Hour}, {End: 4, Scope: chat.CacheThread, TTL: time.Hour}, {End: 6, Scope: chat.CacheThread, TTL: time.Hour}}}
	if fmt.Sprint(req.Cache) != fmt.Sprint(want) || len(req.Messages) != 8 {
		t.Errorf("plan %+v of %d messages\nwant %+v of 8", req.Cache, len(req.Messages), want)
	}
	if err := req.Cache.Check(len(req.Messages)); err != nil {
		t.Error(err)
	}
	if k := req.Cache.Key; len(k) != len("support-agent/")+24 || k[:14] != "support-agent/" {
		t.Errorf("key %q", k)
	}
}

func TestBuildRequestPlansByOrder(t *testing.T) {
	src, in := cacheThread(t, 1)
	text := func(c Changes, s string) Step {
		return Step{Kind: "load_text", Changes: c, Resolver: &LoadText{Text: s}}
	}
	hist := Step{Kind: "thread_history", Changes: PerThread, Resolver: &ThreadHistory{Source: src}}
	tests := []struct {
		name  string
		steps []Step
		tools bool
		off   bool
		want  string
	}{
		{"a per-message step first leaves the tools alone", []Step{text(PerMessage, "meta"), text(PerPersona, "system"), hist}, true, false, "[{0 persona 0s}] tail"},
		{"no tools, no stable prefix: nothing", []Step{text(PerMessage, "meta"), text(PerPersona, "system")}, false, false, "[] "},
		{"persona only", []Step{text(PerPersona, "system"), text(PerMessage, "meta")}, false, false, "[{1 persona 0s}] "},
		{"thread before persona stops the persona prefix", []Step{hist, text(PerPersona, "system")}, false, false, "[{3 thread 0s}] "},
		{"off", []Step{text(PerPersona, "system")}, true, true, "<nil>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Persona{Name: "p", MessageChain: NewChain(tt.steps...), Cache: CacheSettings{Off: tt.off}}
			if tt.tools {
				p.Tools = []Tool{fakeTool{"lookup"}}
			}
			req, err := BuildRequest(context.Background(), &Invocation{Persona: p, Inbound: in})
			if err != nil {
				t.Fatal(err)
			}
			got := "<nil>"
			if req.Cache != nil {
				got = "["
				for i, b := range req.Cache.Breakpoints {
					if i > 0 {
						got += " "
					}
					got += fmt.Sprintf("{%d %s %s}", b.End, b.Scope, b.TTL)
				}
				got += "] "
				if req.Cache.Tail {
					got += "tail"
				}
			}
			if got != tt.want {
				t.Errorf("plan %s, want %s", got, tt.want)
			}
		})
	}
}

// TestSteppedWindowAdvancesInSteps pins ThreadHistory.Step: of n messages, the replay starts at
// the smallest multiple of Step that leaves at most Limit, so the first replayed message stays
// the same while the thread grows by up to Step messages.
func TestSteppedWindowAdvancesInSteps(t *testing.T) {
	ctx := context.Background()
	src := memory.New()
	firsts := map[int]string{}
	for n := 1; n <= 16; n++ {
		m := history.Message{ThreadID: "t1", MessageID: fmt.Sprintf("m%d", n), Direction: history.Inbound, Text: fmt.Sprintf("message %d", n)}
		seq, _ := src.AppendMessage(ctx, m)
		if n < 2 {
			continue
		}
		inv := &Invocation{Inbound: &history.Message{ThreadID: "t1", MessageID: fmt.Sprintf("m%d", n), Seq: seq}}
		out, err := (&ThreadHistory{Source: src, Limit: 6, Step: 3}).Resolve(ctx, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		first := out[0].Text
		firsts[n-1] = fmt.Sprintf("%d:%s", len(out), first[strings.LastIndex(first, "\n")+1:])
	}
	// n-1 earlier messages: up to 6 all; then starts at 3 (messages 4..), 6, 9 ...
	want := map[int]string{1: "1:message 1", 6: "6:message 1", 7: "4:message 4", 9: "6:message 4", 10: "4:message 7", 12: "6:message 7", 13: "4:message 10", 15: "6:message 10"}
	for n, w := range want {
		if firsts[n] != w {
			t.Errorf("%d earlier messages: %s, want %s", n, firsts[n], w)
		}
	}
	if _, err := (&ThreadHistory{Source: src, Limit: 2, Step: 3}).Resolve(ctx, &Invocation{Inbound: &history.Message{ThreadID: "t1"}}, nil); err == nil {
		t.Error("a step above the limit was accepted")
	}
	if _, err := (&ThreadHistory{Source: src, Limit: NoLimit, Step: 3}).Resolve(ctx, &Invocation{Inbound: &history.Message{ThreadID: "t1"}}, nil); err == nil {
		t.Error("a step without a limit was accepted")
	}
}
