package spec

import (
	"fmt"
	"strings"
)

// Changes says how often a resolver's output changes: the classification the generator emits
// on every step (runtime.Step.Changes), from which the runtime plans the providers' prompt
// caches. A request is cached up to its first change, so stable resolvers belong first.
type Changes string

// The three classes, from the stablest.
const (
	// PerPersona: the same for every run of the persona (static files and texts, templates of
	// .Persona fields only).
	PerPersona Changes = "per_persona"
	// PerThread: the same for every run of one thread or responsibility (thread_summary,
	// thread_history, templates that read .Inbound.ThreadID or .Responsibility).
	PerThread Changes = "per_thread"
	// PerMessage: may differ on every run (templates that read the inbound message or
	// .CorrelationID; load_record and use unless they declare changes).
	PerMessage Changes = "per_message"
)

// rank orders the classes: a higher rank changes less often.
func (c Changes) rank() int {
	switch c {
	case PerPersona:
		return 2
	case PerThread:
		return 1
	}
	return 0
}

// Stabler reports whether c changes less often than o.
func (c Changes) Stabler(o Changes) bool { return c.rank() > o.rank() }

// ChangesValue is a changes key of load_record or use, with its position; Pos is zero when
// the spec omits it and Value holds PerMessage.
type ChangesValue struct {
	Value Changes
	Pos   Pos
}

// Cache is the top-level cache block: how the persona's requests use the providers' prompt
// caches. TTL is "5m" (the providers' default), "1h", or "none" (no cache plan: no breakpoints,
// no prompt_cache_key); zero (with an invalid Pos) when the spec omits it.
type Cache struct {
	Pos Pos
	TTL String
}

// Changes returns how often r's output changes: load_file, load_transcript and load_text by
// the fields their templates read (none or .Persona only: PerPersona; .Inbound.ThreadID or
// .Responsibility: PerThread; any other: PerMessage), thread_summary and thread_history
// PerThread, load_record and use as their changes key says (PerMessage when absent: host code
// may read anything).
func (r Resolver) Changes() Changes {
	switch r.Kind {
	case KindLoadFile:
		return templateChanges(r.LoadFile.Path)
	case KindLoadTranscript:
		return templateChanges(r.LoadTranscript.Path)
	case KindLoadText:
		return templateChanges(r.LoadText.Text)
	case KindThreadSummary, KindThreadHistory:
		return PerThread
	case KindLoadRecord:
		return r.LoadRecord.Changes.Value
	case KindUse:
		return r.Use.Changes.Value
	}
	return PerMessage
}

func templateChanges(t Template) Changes {
	c := PerPersona
	for _, p := range t.Parts {
		switch {
		case p.Field == nil || p.Field[0] == "Persona":
		case p.Field[0] == "Responsibility" || len(p.Field) == 2 && p.Field[0] == "Inbound" && p.Field[1] == "ThreadID":
			if c == PerPersona {
				c = PerThread
			}
		default:
			return PerMessage
		}
	}
	return c
}

// CacheWarnings returns one warning (Diagnostic.Warning set) per chain whose order defeats
// the prompt cache: at the first resolver that changes more often than a resolver after it,
// since the request differs from that resolver on and a provider's cache serves nothing after
// it, the stabler resolvers included. The warning names the stablest later resolver and says
// what to do: move that one before it (or this one after it), or declare this one's changes
// when it is stabler than its class (load_record, use). A persona whose cache.ttl is none gets
// no warnings.
func CacheWarnings(p *Persona) []Diagnostic {
	if p.Cache != nil && p.Cache.TTL.Value == "none" {
		return nil
	}
	var out []Diagnostic
	for _, chain := range [][]Resolver{p.MessageResolvers, p.ResponsibilityResolvers} {
		for i, r := range chain {
			c := r.Changes()
			later := -1
			for j := i + 1; j < len(chain); j++ {
				if chain[j].Changes().Stabler(c) && (later < 0 || chain[j].Changes().Stabler(chain[later].Changes())) {
					later = j
				}
			}
			if later < 0 {
				continue
			}
			l := chain[later]
			msg := fmt.Sprintf("%s changes %s but comes before %s at line %d, which changes %s: every request differs from here on, so the prompt cache serves nothing after it; move the entry at line %d before this one, or this one after it",
				r.Kind, words(c), l.Kind, l.Pos.Line, words(l.Changes()), l.Pos.Line)
			if r.Kind == KindLoadRecord || r.Kind == KindUse {
				msg += fmt.Sprintf(", or declare changes: %s here if its output is the same for every %s", l.Changes(), strings.TrimPrefix(string(l.Changes()), "per_"))
			}
			out = append(out, Diagnostic{Pos: r.Pos, Message: msg, Warning: true})
			break
		}
	}
	return out
}

// words spells a class for messages: "per message".
func words(c Changes) string { return strings.ReplaceAll(string(c), "_", " ") }
