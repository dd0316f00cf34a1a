package gen

import (
	"fmt"
	"go/types"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/personagen/personagen/spec"
)

// wantTool is the signature of a method or function tool, as messages
// show it.
const wantTool = "func(ctx context.Context, inv *runtime.Invocation, in In) (Out, error) with In a struct (or a pointer to one)"

// tools checks the tools list and plans each entry; the locals and schema
// constants of derived tools are named here, unique within the file.
func (c *checker) tools(ts []spec.Tool) []toolPlan {
	var out []toolPlan
	used := make(map[string]bool)
	unique := func(base string) string {
		name := base
		for i := 2; used[name]; i++ {
			name = base + strconv.Itoa(i)
		}
		used[name] = true
		return name
	}
	for _, t := range ts {
		rule := toolRule(t)
		if t.Value != nil {
			if typ, ok := c.checkValueTool(*t.Value); ok {
				q := c.qual(*t.Value)
				q.goType = typ
				out = append(out, toolPlan{value: &q, rule: rule})
			}
			continue
		}
		d := c.derivedTool(t)
		if d == nil {
			continue
		}
		camel := toolCamel(d.name)
		local := camel + "Tool"
		if r, _ := utf8.DecodeRuneInString(local); !unicode.IsLetter(r) {
			local = "tool" + local
		} else {
			local = string(unicode.ToLower(r)) + local[1:]
		}
		d.local = unique(local)
		d.schemaConst = unique(c.fp.lower + camel + "Schema")
		out = append(out, toolPlan{derived: d, rule: rule})
	}
	return out
}

// toolRule plans the entry's chains and approval keys (spec validated them); nil when it has
// neither.
func toolRule(t spec.Tool) *toolRulePlan {
	if len(t.Chains) == 0 && t.Approval == nil {
		return nil
	}
	r := &toolRulePlan{approval: t.Approval}
	for _, c := range t.Chains {
		r.chains = append(r.chains, c.Value)
	}
	return r
}

// toolCamel turns a tool name into the CamelCase part of Go identifiers:
// words split at '_' and '-', each capitalised (lookup_order →
// LookupOrder).
func toolCamel(name string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' }) {
		b.WriteString(strings.ToUpper(w[:1]) + w[1:])
	}
	if b.Len() == 0 {
		return "X"
	}
	return b.String()
}

// checkValueTool reports whether t names a package-level variable
// implementing runtime.Tool, and its type.
func (c *checker) checkValueTool(t spec.GoRef) (string, bool) {
	obj, msg := c.lookup(t, isVar)
	if obj == nil {
		c.errf(t.Pos, "tool: %s", msg)
		return "", false
	}
	v, ok := obj.(*types.Var)
	if !ok {
		hint := ""
		if fn, ok := obj.(*types.Func); ok {
			if in, ok := c.toolInput(fn.Signature()); ok && isStructInput(in) {
				hint = fmt.Sprintf("; as a function with a struct input it is a tool when listed as {func: %s}", t)
			}
		}
		c.errf(t.Pos, "tool: %s is a %s; want a package-level variable implementing runtime.Tool%s", t, objKind(obj), hint)
		return "", false
	}
	if !c.host.implements(v.Type(), c.host.tool) {
		c.errf(t.Pos, "tool: %s (type %s) does not implement runtime.Tool: %s", t, typeString(v.Type()), missingMethod(v.Type(), c.host.tool))
		return "", false
	}
	return typeString(v.Type()), true
}

// derivedTool checks a method or function tool: the declaration exists,
// has the tool signature, its input type has a schema, and the tool has a
// description (the spec's, or the doc comment). It returns nil after
// reporting a problem.
func (c *checker) derivedTool(t spec.Tool) *derivedToolPlan {
	ref := t.Ref()
	what := "tool " + t.Name.Value
	if c.host != nil && c.host.toolErr != "" {
		c.errf(ref.Pos, "%s: the generated code imports %s to build it, and it cannot be loaded: %s", what, ToolPath, c.host.toolErr)
		return nil
	}
	d := &derivedToolPlan{
		method: t.Method != nil, name: t.Name.Value, namePos: t.Name.Pos,
		description: t.Description.Value, idempotent: t.Idempotent.Value,
	}
	var fn *types.Func
	var display string
	if d.method {
		if c.envType == nil {
			return nil // env did not resolve: reported at env
		}
		fn = c.envMethod(ref, what, "a method tool")
		d.fn = qualPlan{name: ref.Name, pos: ref.Pos}
		display = typeString(c.envType) + "." + ref.Name
	} else {
		obj, msg := c.lookup(ref, isFunc)
		switch f, ok := obj.(*types.Func); {
		case obj == nil:
			c.errf(ref.Pos, "%s: %s", what, msg)
		case !ok:
			c.errf(ref.Pos, "%s: %s is a %s, not a function", what, ref, objKind(obj))
		default:
			fn = f
			d.fn = c.qual(ref)
		}
		display = ref.String()
	}
	if fn == nil {
		return nil
	}
	sig := fn.Signature()
	if tps := sig.TypeParams(); tps.Len() > 0 {
		c.errf(ref.Pos, "%s: %s is a generic function (type parameters %s); generated code cannot infer its type arguments: name a non-generic function that calls it", what, display, typeParamList(tps))
		return nil
	}
	in, ok := c.toolInput(sig)
	if !ok {
		c.errf(ref.Pos, "%s: %s has type %s; want %s", what, display, typeString(sigNoRecv(sig)), wantTool)
		return nil
	}
	d.fn.goType = typeString(sigNoRecv(sig))
	d.input = typeString(in)
	if !isStructInput(in) {
		c.errf(ref.Pos, "%s: %s takes a %s, not a struct: a tool's input is a JSON object, so take a struct (or a pointer to one) whose fields are its properties", what, display, d.input)
		return nil
	}
	root := typeString(deref(in))
	if typeName(deref(in)) == "" {
		root = sig.Params().At(2).Name() // an unnamed struct type: the parameter
		if root == "" || root == "_" {
			root = "in"
		}
	}
	schema, err := deriveInputSchema(in, root, c.docs)
	if err != nil {
		c.errf(ref.Pos, "%s: input %s", what, err)
		return nil
	}
	d.schema = schema.JSON()
	d.properties, d.required = len(schema.properties), len(schema.required)
	if d.description == "" {
		d.description = c.docs.of(fn)
		d.fromDoc = true
	}
	if strings.TrimSpace(d.description) == "" {
		c.errf(ref.Pos, "%s: %s has no doc comment, and the spec gives no description; write description: (what the model reads about the tool: what it does, when to use it, what it returns), or a doc comment on %s", what, display, ref.Name)
		return nil
	}
	return d
}

// toolInput checks sig against wantTool and returns In.
func (c *checker) toolInput(sig *types.Signature) (types.Type, bool) {
	p, r := sig.Params(), sig.Results()
	if sig.Variadic() || p.Len() != 3 || r.Len() != 2 {
		return nil, false
	}
	if !types.Identical(p.At(0).Type(), c.host.ctxType) || !types.Identical(p.At(1).Type(), c.host.invPtr) || !types.Identical(r.At(1).Type(), errorType) {
		return nil, false
	}
	return p.At(2).Type(), true
}
