package chat

import (
	"strings"
	"testing"
	"time"
)

func TestCachePlanCheckNamesTheBrokenRule(t *testing.T) {
	bp := func(end int, scope CacheScope, ttl time.Duration) CacheBreakpoint {
		return CacheBreakpoint{End: end, Scope: scope, TTL: ttl}
	}
	tests := []struct {
		name string
		plan *CachePlan
		want string
	}{
		{"nil", nil, ""},
		{"tools, persona, thread and the tail", &CachePlan{Key: "a/b", Tail: true, Breakpoints: []CacheBreakpoint{bp(0, CachePersona, time.Hour), bp(3, CachePersona, time.Hour), bp(5, CacheThread, 0)}}, ""},
		{"past the messages", &CachePlan{Breakpoints: []CacheBreakpoint{bp(7, CacheThread, 0)}}, "breakpoint 0 ends after message 7 of a request of 6 messages"},
		{"not ascending", &CachePlan{Breakpoints: []CacheBreakpoint{bp(3, CachePersona, 0), bp(3, CacheThread, 0)}}, "breakpoint 1 (end 3) does not come after breakpoint 0 (end 3)"},
		{"unknown scope", &CachePlan{Breakpoints: []CacheBreakpoint{bp(1, "message", 0)}}, `breakpoint 0 has scope "message"`},
		{"longer-lived after shorter", &CachePlan{Breakpoints: []CacheBreakpoint{bp(1, CachePersona, 0), bp(2, CacheThread, time.Hour)}}, "breakpoint 1 lives longer (1h0m0s) than breakpoint 0 before it (0s)"},
		{"five with the tail", &CachePlan{Tail: true, Breakpoints: []CacheBreakpoint{bp(0, CachePersona, 0), bp(1, CachePersona, 0), bp(2, CacheThread, 0), bp(3, CacheThread, 0)}}, "more than 4 breakpoints"},
		{"four ending at the last message with the tail", &CachePlan{Tail: true, Breakpoints: []CacheBreakpoint{bp(0, CachePersona, 0), bp(1, CachePersona, 0), bp(2, CacheThread, 0), bp(6, CacheThread, 0)}}, ""},
		{"key too long", &CachePlan{Key: strings.Repeat("k", 65)}, "key of 65 characters"},
		{"key with a space", &CachePlan{Key: "a b"}, "not printable ASCII"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.plan.Check(6)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check = %v, want it to say %q", err, tt.want)
			}
		})
	}
}

func TestCachePlanMarksAddTheTailOnce(t *testing.T) {
	p := &CachePlan{Tail: true, Breakpoints: []CacheBreakpoint{{End: 2, Scope: CachePersona}}}
	if got := p.Marks(5); len(got) != 2 || got[1] != (CacheBreakpoint{End: 5, Scope: CacheRun}) {
		t.Errorf("Marks(5) = %+v", got)
	}
	if got := p.Marks(2); len(got) != 1 {
		t.Errorf("Marks(2) = %+v: a tail on the last breakpoint adds nothing", got)
	}
	if got := (*CachePlan)(nil).Marks(3); got != nil {
		t.Errorf("nil plan: %+v", got)
	}
	if got := (&CachePlan{}).Marks(3); len(got) != 0 {
		t.Errorf("empty plan: %+v", got)
	}
}
