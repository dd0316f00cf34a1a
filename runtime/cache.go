package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime/chat"
)

// Changes says how often a Step's output changes, which decides how much of a request a
// provider's prompt cache can serve: a request is cached up to its first change, so the
// stablest steps come first. The generator classifies every step of a spec (see package spec);
// a host that builds a Chain by hand sets it on each Step. The zero value, PerMessage, is the
// safe default: a step that may change on every run.
type Changes uint8

// How often a step's output changes, from the most often to the least.
const (
	// PerMessage: the output may differ for every run (it reads the inbound message, the
	// sender, the clock, or host data that changes).
	PerMessage Changes = iota
	// PerThread: the output is the same for every run of one thread (reply runs) or one
	// responsibility (scheduled runs): the summary, the history of earlier messages.
	PerThread
	// PerPersona: the output is the same for every run of the persona: static prompt files and
	// texts, templates of the persona's own fields.
	PerPersona
)

// String returns "per_message", "per_thread" or "per_persona", the spec's spelling.
func (c Changes) String() string {
	switch c {
	case PerMessage:
		return "per_message"
	case PerThread:
		return "per_thread"
	case PerPersona:
		return "per_persona"
	}
	return fmt.Sprintf("Changes(%d)", uint8(c))
}

// CacheSettings are a persona's prompt-cache settings: TTL, how long the provider keeps the
// prefixes that outlive a run (0: the provider's default, 5 minutes on Anthropic; a spec's
// cache.ttl of 1h sets time.Hour), and Off, which sends no cache plan at all (no breakpoints,
// no key).
type CacheSettings struct {
	TTL time.Duration
	Off bool
}

// planCache returns the cache plan of a request whose chain steps ended at the given message
// counts (ends[i]: messages after step i), with the persona's tools; turn is where the
// thread history's replay of the previous turn begins (-1: none). The plan marks, at most three
// times plus the tail:
//
//   - the end of the longest leading run of PerPersona steps (or the tools alone when the first
//     step is not PerPersona and the persona has tools): CachePersona;
//   - where the history's previous turn begins, when it lies inside the thread prefix: the end of
//     the previous request's thread prefix, which this request reads back: CacheThread;
//   - the end of the longest leading run of PerThread-or-stabler steps: CacheThread, which the
//     next message of the thread reads;
//   - and the tail (the whole request) when the persona has tools, for the run's next call.
//
// Persona and thread breakpoints carry the persona's TTL.
func planCache(p *Persona, inv *Invocation, steps []Step, ends []int, tools int, turn int) *chat.CachePlan {
	if p.Cache.Off {
		return nil
	}
	personaEnd, threadEnd := 0, 0
	persona, thread := true, true
	for i, s := range steps {
		persona = persona && s.Changes == PerPersona
		thread = thread && s.Changes >= PerThread
		if persona {
			personaEnd = ends[i]
		}
		if thread {
			threadEnd = ends[i]
		}
	}
	plan := &chat.CachePlan{Key: cacheKey(p, inv), Tail: tools > 0}
	add := func(end int, scope chat.CacheScope) {
		if n := len(plan.Breakpoints); n > 0 && plan.Breakpoints[n-1].End >= end {
			return
		}
		plan.Breakpoints = append(plan.Breakpoints, chat.CacheBreakpoint{End: end, Scope: scope, TTL: p.Cache.TTL})
	}
	if personaEnd > 0 || tools > 0 {
		add(personaEnd, chat.CachePersona)
	}
	if turn > personaEnd && turn < threadEnd {
		add(turn, chat.CacheThread)
	}
	if threadEnd > personaEnd {
		add(threadEnd, chat.CacheThread)
	}
	return plan
}

// cacheKey names the owner of a request's stable prefix: "<persona>/<24 hex digits>", the
// digits from the SHA-256 of the thread id (reply runs) or "responsibility:<name>" (scheduled
// runs), so that no thread id or address reaches a provider. A persona name longer than 39
// characters is hashed in too, keeping the key within 64 characters.
func cacheKey(p *Persona, inv *Invocation) string {
	owner := ""
	switch {
	case inv.Inbound != nil:
		owner = "thread:" + inv.Inbound.ThreadID
	case inv.Responsibility != nil:
		owner = "responsibility:" + inv.Responsibility.Name
	}
	name := p.Name
	if !keySafe(name) {
		owner = name + "\x00" + owner
		name = "persona"
	}
	sum := sha256.Sum256([]byte(owner))
	return name + "/" + hex.EncodeToString(sum[:12])
}

// keySafe reports whether a persona name can stand in a cache key as it is: 1 to 39 printable
// ASCII characters other than '/'.
func keySafe(name string) bool {
	if name == "" || len(name) > 39 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x21 || c > 0x7e || c == '/' {
			return false
		}
	}
	return true
}
