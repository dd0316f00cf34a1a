package gen

import (
	"fmt"
	"strings"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/personagen/personagen/spec"
)

// fieldExpr maps a template field path onto the Invocation: the Go
// expression rendering it as text, and the pointer that must not be nil
// ("" for fields of the Invocation itself).
func fieldExpr(path []string) (jen.Code, string, bool) {
	inv := jen.Id("inv")
	switch strings.Join(path, ".") {
	case "Persona.Name", "Persona.Description":
		return inv.Dot("Persona").Dot(path[1]), "Persona", true
	case "CorrelationID":
		return inv.Dot("CorrelationID"), "", true
	case "Inbound.ThreadID", "Inbound.MessageID", "Inbound.From", "Inbound.Subject":
		return inv.Dot("Inbound").Dot(path[1]), "Inbound", true
	case "Inbound.To", "Inbound.Cc":
		return jen.Qual("strings", "Join").Call(inv.Dot("Inbound").Dot(path[1]), jen.Lit(", ")), "Inbound", true
	case "Inbound.Date":
		return rt("FormatDate").Call(inv.Dot("Inbound").Dot("Date")), "Inbound", true
	case "Responsibility.Name", "Responsibility.Schedule", "Responsibility.Timezone":
		return inv.Dot("Responsibility").Dot(path[1]), "Responsibility", true
	}
	return nil, "", false
}

// nilMessages say why a template cannot render when a pointer is nil.
var nilMessages = map[string]string{
	"Persona":        "the invocation has no Persona",
	"Inbound":        "the invocation has no Inbound message (a scheduled run)",
	"Responsibility": "the invocation has no Responsibility (a reply run)",
}

// template checks that every field t references maps onto the Invocation
// and plans the helper func (named for the persona and suffix, e.g.
// supportAgentMessage2Path) that renders it from plain field access.
func (c *checker) template(t spec.Template, suffix string) *templatePlan {
	tp := &templatePlan{name: c.fp.lower + suffix, raw: t.Raw.Value, pos: t.Raw.Pos}
	for _, p := range t.Parts {
		if p.Field == nil {
			if p.Literal != "" {
				tp.parts = append(tp.parts, templatePart{literal: p.Literal})
			}
			continue
		}
		_, guard, ok := fieldExpr(p.Field)
		if !ok {
			c.errf(p.Pos, "template field .%s is not supported", strings.Join(p.Field, "."))
			continue
		}
		if guard != "" && !contains(tp.guards, guard) {
			tp.guards = append(tp.guards, guard)
		}
		tp.parts = append(tp.parts, templatePart{field: p.Field})
	}
	return tp
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 90s or 5m", s)
	}
	return d, nil
}
