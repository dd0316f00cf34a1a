package chat

import (
	"fmt"
	"time"
)

// MaxCacheBreakpoints is the most prompt-cache breakpoints one request carries: Anthropic's
// limit on cache_control markers per request (the top-level automatic marker included), and
// the most explicit breakpoints an OpenAI request writes. CachePlan.Marks never returns more.
const MaxCacheBreakpoints = 4

// CacheScope says how long a prefix of a request stays the same, which decides who can read it
// from a provider's prompt cache.
type CacheScope string

// The scopes of a cache breakpoint, from the longest-lived to the shortest.
const (
	// CachePersona: every request of the persona starts with this prefix (the tool definitions,
	// static system prompts), whatever thread or message it answers.
	CachePersona CacheScope = "persona"
	// CacheThread: every later request of the same thread (a reply run) or responsibility (a
	// scheduled run) starts with this prefix: the summary and the older history.
	CacheThread CacheScope = "thread"
	// CacheRun: the next model call of the same run starts with this prefix: in a tool loop a
	// request is the previous one plus the answer and its tool results.
	CacheRun CacheScope = "run"
)

// CachePlan says which prefixes of a request later requests repeat, so that a model adapter
// can ask its provider to cache them. A runner builds it from the persona's chain (see
// runtime.BuildRequest, which classifies every resolver by how often its output changes) and
// an adapter turns it into the provider's controls; an adapter whose provider caches nothing
// ignores it. A plan never changes what the model reads: an adapter that honours it sends the
// same content with cache markers added.
//
// The prefix a breakpoint ends is, in the order every provider renders a request, the
// request's Tools, then Messages[:End]. A breakpoint with End 0 ends after the tools alone.
//
// Key names the owner of the stable prefix: the persona and its thread (a reply run) or its
// responsibility (a scheduled run), at most 64 printable ASCII characters and never the
// thread's own id or anything from a message (a hash stands for them). OpenAI adapters send
// it as prompt_cache_key; "" sends none.
//
// Breakpoints are the ends of the request's stable prefixes, in strictly ascending End order,
// each End at most len(Messages), with TTLs that never grow along the list (a provider that
// takes several lifetimes wants the longer-lived entries first). Tail says that the whole
// request is the prefix of the next call of the same run (the persona has tools, so a tool loop
// may follow): an adapter marks the end of the last message too, with the provider's default
// lifetime and scope CacheRun. Marks returns the list an adapter places, tail included.
type CachePlan struct {
	Key         string            `json:"key,omitempty"`
	Breakpoints []CacheBreakpoint `json:"breakpoints,omitempty"`
	Tail        bool              `json:"tail,omitempty"`
}

// CacheBreakpoint is the end of one stable prefix of a request: the Tools and Messages[:End].
// Scope says who repeats it, TTL how long the provider should keep it (0 means the provider's
// default, the shortest: Anthropic's 5 minutes, OpenAI's in-memory retention). Providers take a
// few lifetimes only; an adapter rounds TTL up to the next it offers (Anthropic: 5 minutes, 1
// hour).
type CacheBreakpoint struct {
	End   int           `json:"end"`
	Scope CacheScope    `json:"scope"`
	TTL   time.Duration `json:"ttl,omitempty"`
}

// Check reports whether p is a plan for a request of n messages: Breakpoints in strictly
// ascending End order, every End from 0 to n, every Scope one of the three, no negative TTL, TTLs
// that never grow along the list, at most MaxCacheBreakpoints marks (Marks(n), tail included),
// and a Key of at most 64 printable ASCII characters. A nil plan is valid. The error names the
// first breakpoint that breaks a rule.
func (p *CachePlan) Check(n int) error {
	if p == nil {
		return nil
	}
	if len(p.Key) > 64 {
		return fmt.Errorf("cache plan: key of %d characters (at most 64)", len(p.Key))
	}
	for i := 0; i < len(p.Key); i++ {
		if c := p.Key[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("cache plan: key %q holds a character that is not printable ASCII", p.Key)
		}
	}
	for i, b := range p.Breakpoints {
		switch {
		case b.End < 0 || b.End > n:
			return fmt.Errorf("cache plan: breakpoint %d ends after message %d of a request of %d messages", i, b.End, n)
		case i > 0 && b.End <= p.Breakpoints[i-1].End:
			return fmt.Errorf("cache plan: breakpoint %d (end %d) does not come after breakpoint %d (end %d)", i, b.End, i-1, p.Breakpoints[i-1].End)
		case b.Scope != CachePersona && b.Scope != CacheThread && b.Scope != CacheRun:
			return fmt.Errorf("cache plan: breakpoint %d has scope %q (want persona, thread or run)", i, b.Scope)
		case b.TTL < 0:
			return fmt.Errorf("cache plan: breakpoint %d has a negative TTL %s", i, b.TTL)
		case i > 0 && b.TTL > p.Breakpoints[i-1].TTL:
			return fmt.Errorf("cache plan: breakpoint %d lives longer (%s) than breakpoint %d before it (%s): longer-lived prefixes come first", i, b.TTL, i-1, p.Breakpoints[i-1].TTL)
		}
	}
	if m := len(p.Breakpoints); m > MaxCacheBreakpoints || m == MaxCacheBreakpoints && p.Tail && p.Breakpoints[m-1].End < n {
		return fmt.Errorf("cache plan: more than %d breakpoints", MaxCacheBreakpoints)
	}
	return nil
}

// Marks returns the breakpoints an adapter places on a request of n messages: the plan's, in
// order, then, when Tail is set and n is beyond the last one, the tail {End: n, Scope:
// CacheRun}. A tail that falls on the last breakpoint adds nothing. It returns nil for a nil
// plan. It does not check the plan (Check does).
func (p *CachePlan) Marks(n int) []CacheBreakpoint {
	if p == nil {
		return nil
	}
	out := make([]CacheBreakpoint, 0, len(p.Breakpoints)+1)
	out = append(out, p.Breakpoints...)
	if p.Tail && n > 0 && (len(out) == 0 || out[len(out)-1].End < n) {
		out = append(out, CacheBreakpoint{End: n, Scope: CacheRun})
	}
	return out
}
