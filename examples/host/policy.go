package host

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// SupportPolicy is a custom resolver (a spec's `use`): it tells the model
// the support policy it works under. Its fields are set from the spec's
// `with` mapping, by yaml tag name; the generator turns those values into a
// typed Go literal of this struct.
type SupportPolicy struct {
	// FirstResponse is the promised time to a first reply ("4h" in a spec).
	FirstResponse time.Duration `yaml:"first_response"`
	// EscalateAfter is how long a thread may stay unresolved before a human
	// takes over.
	EscalateAfter time.Duration `yaml:"escalate_after"`
	// Languages are the languages support answers in, preferred first.
	Languages []string `yaml:"languages"`
	// Tiers holds what each plan may be offered, by plan name.
	Tiers map[string]TierPolicy `yaml:"tiers"`
}

// TierPolicy is what support may offer customers on one plan.
type TierPolicy struct {
	RefundLimitEUR int  `yaml:"refund_limit_eur"`
	PhoneSupport   bool `yaml:"phone_support"`
}

// Resolve appends one system message describing the policy; plans are
// listed in name order so the text is the same on every run.
func (p *SupportPolicy) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "Support policy\nFirst response within %s; escalate threads unresolved after %s.\n", hours(p.FirstResponse), hours(p.EscalateAfter))
	if len(p.Languages) > 0 {
		fmt.Fprintf(&b, "Answer in: %s. For other languages, answer in English and say so.\n", strings.Join(p.Languages, ", "))
	}
	plans := make([]string, 0, len(p.Tiers))
	for name := range p.Tiers {
		plans = append(plans, name)
	}
	slices.Sort(plans)
	for _, name := range plans {
		t := p.Tiers[name]
		phone := "no phone support"
		if t.PhoneSupport {
			phone = "phone support available"
		}
		fmt.Fprintf(&b, "Plan %s: refunds up to EUR %d without approval; %s.\n", name, t.RefundLimitEUR, phone)
	}
	b.WriteString("Plans not listed: no refunds without approval.")
	return append(dst, chat.SystemMessage(b.String())), nil
}

// hours renders a duration in whole hours when it is one ("4 hours"),
// else as time.Duration does.
func hours(d time.Duration) string {
	if d > 0 && d%time.Hour == 0 {
		if d == time.Hour {
			return "1 hour"
		}
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}
