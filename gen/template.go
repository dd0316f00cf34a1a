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

// template compiles t into a helper func of the Invocation made of plain
// field access and returns a reference to it. suffix names the helper
// (supportAgentMessage2Path).
func (g *fileGen) template(t spec.Template, suffix string) jen.Code {
	name := g.lower + suffix
	var parts []jen.Code
	var guards []string
	for _, p := range t.Parts {
		if p.Field == nil {
			if p.Literal != "" {
				parts = append(parts, jen.Lit(p.Literal))
			}
			continue
		}
		expr, guard, ok := fieldExpr(p.Field)
		if !ok {
			g.errf(p.Pos, "template field .%s is not supported", strings.Join(p.Field, "."))
			continue
		}
		if guard != "" && !contains(guards, guard) {
			guards = append(guards, guard)
		}
		parts = append(parts, expr)
	}
	var body []jen.Code
	for _, gd := range guards {
		msg := fmt.Sprintf("template at %s: %s", g.posString(t.Raw.Pos), nilMessages[gd])
		body = append(body, jen.If(jen.Id("inv").Dot(gd).Op("==").Nil()).Block(
			jen.Return(jen.Lit(""), jen.Qual("errors", "New").Call(jen.Lit(msg))),
		))
	}
	var value jen.Code = jen.Lit("")
	if len(parts) > 0 {
		s := jen.Add(parts[0])
		for _, p := range parts[1:] {
			s = s.Op("+").Add(p)
		}
		value = s
	}
	body = append(body, jen.Return(value, jen.Nil()))
	doc := fmt.Sprintf("%s renders the template %s (%s).", name, quoteDoc(t.Raw.Value), g.posString(t.Raw.Pos))
	g.helpers = append(g.helpers, jen.Comment(doc).Line().
		Func().Id(name).Params(jen.Id("inv").Op("*").Add(rt("Invocation"))).Params(jen.String(), jen.Error()).Block(body...))
	return jen.Id(name)
}

// quoteDoc quotes a template for a doc comment, keeping it on one line and
// unable to end the comment.
func quoteDoc(s string) string {
	q := fmt.Sprintf("%q", s)
	return strings.ReplaceAll(q, "*/", `*\/`)
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
