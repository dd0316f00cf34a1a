package gen

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/personagen/personagen/spec"
)

// genPlan is the checked form of a set of specs: every host reference resolved
// to the Go declaration it names, every `with` value typed, every static
// prompt and transcript path read, every file name and import decided.
// checkSpecs builds it from specs and host type information; renderFiles writes Go
// source from it alone, without looking anything up. A genPlan is read-only
// once built.
//
// The plan's types below are the contract between the two phases. A new
// kind of reference (a tool whose input schema is derived from a Go type,
// say) is a new field of the plan that checkSpecs fills from the host and the
// emitter renders; the emitter never sees go/types.
type genPlan struct {
	opts  Options
	files []*filePlan
}

// filePlan is everything one generated file holds.
type filePlan struct {
	name     string   // base name of the file (support_agent.go)
	pkg      string   // package name of the output
	specPath string   // the spec's path as headers and directives show it
	genPath  string   // the generated file's path as reset directives show it
	pos      spec.Pos // the spec's top-level position (generator bugs are reported there)

	persona     string // kebab-case name
	goName      string // SupportAgent
	lower       string // supportAgent, the prefix of helper funcs
	description string

	// imports names each host package the file refers to by its package
	// name (as declared, not as the path's last element).
	imports map[string]string
	// reserved are the package-level names hand-written files of the
	// output package declare: no import of the file may use one.
	reserved map[string]bool

	env              *envPlan
	model            *spec.Model
	tools            []toolPlan
	responsibilities []spec.Responsibility
	mailbox          *spec.Mailbox
	cache            *spec.Cache
	messageChain     []stepPlan
	responsibility   []stepPlan
	usesHistory      bool
}

// qualPlan is a package-level declaration of a host package named by the
// spec at pos; goType is its Go type as messages write it (host.Env,
// func(context.Context, *runtime.Invocation) ([]host.Account, error)).
type qualPlan struct {
	path, name string
	pos        spec.Pos
	goType     string
}

// toolPlan is a tools entry: a package-level value (value), or a method of
// env or a package function with a derived input schema (derived).
// Exactly one is set.
type toolPlan struct {
	value   *qualPlan
	derived *derivedToolPlan
	rule    *toolRulePlan // the entry's chains and approval keys; nil for none
}

// toolRulePlan is the runtime.ToolRule a tools entry's chains and approval keys make: the
// constructor sets it in the persona's ToolRules under the tool's name.
type toolRulePlan struct {
	chains   []string       // spec.ChainReply, spec.ChainScheduled; nil for both
	approval *spec.Approval // nil: calls run at once
}

// derivedToolPlan is a method or function tool: the constructor builds it
// with tool.New from a Def (name, description, schema, idempotent) and
// the method value env.Name or the function.
type derivedToolPlan struct {
	method bool     // fn names a method of env (path "")
	fn     qualPlan // goType: its signature without receiver
	input  string   // the input type, as messages write it

	name        string
	namePos     spec.Pos // the spec's name key; invalid when derived from the Go name
	description string
	fromDoc     bool // description is the doc comment
	idempotent  bool
	schema      []byte // the input schema, indented JSON
	properties  int    // top-level properties of the schema, for the plan listing
	required    int

	local       string // the constructor's variable holding the tool
	schemaConst string // the package-level constant holding the schema
}

// envPlan is the env type; the constructor takes a pointer to it.
type envPlan struct {
	typ qualPlan
}

// stepPlan is one resolver of a chain. id names its helper funcs
// (Message3 for the third reply step). Exactly one kind field is set.
type stepPlan struct {
	kind    spec.ResolverKind
	pos     spec.Pos
	id      string
	changes spec.Changes // how often its output changes (runtime.Step.Changes)

	loadFile       *pathPlan
	loadText       *textPlan
	loadRecord     *loadRecordPlan
	loadTranscript *pathPlan
	threadHistory  *spec.ThreadHistory
	threadSummary  *spec.ThreadSummary
	use            *usePlan
}

// pathPlan is a load_file or load_transcript path: static (checked to
// exist) or computed by a template for each run.
type pathPlan struct {
	static   string
	computed *templatePlan
	role     spec.RoleValue // load_file only
}

// textPlan is a load_text text, static or computed.
type textPlan struct {
	static   string
	computed *templatePlan
	role     spec.RoleValue
}

// templatePlan is a template compiled into a helper func named name.
type templatePlan struct {
	name   string
	raw    string
	pos    spec.Pos
	parts  []templatePart
	guards []string // Invocation pointers the parts dereference, in order of first use
}

// templatePart is literal text, or a field of the Invocation (a path
// fieldExpr knows).
type templatePart struct {
	literal string
	field   []string
}

// loadRecordPlan is a load_record entry: the loader (an env method or a
// package function) and how one record is serialized.
type loadRecordPlan struct {
	role       spec.Role
	method     bool     // the loader is a method of env (ref.name on env)
	loader     qualPlan // path is "" for a method
	record     string   // the record type T, as messages write it
	serializer *serializerPlan
}

// serializerPlan renders one record: a package function (fn, taking T), or
// a method of the record type record, called on a value of it. plain means
// the serializer returns a string alone (no error).
type serializerPlan struct {
	fn     *qualPlan
	method string
	pos    spec.Pos // the method's position
	record typeExpr
	plain  bool
}

// usePlan is a use entry: a composite literal of the host struct type typ,
// its fields set from `with`.
type usePlan struct {
	typ    qualPlan
	fields []fieldPlan
}

// fieldPlan sets the struct field name (of Go type goType) from the spec
// entry at keyPos whose value is at value.pos.
type fieldPlan struct {
	name   string
	goType string
	keyPos spec.Pos
	value  valuePlan
}

// valueKind tells how a valuePlan is written.
type valueKind int

const (
	valueNil      valueKind = iota // nil
	valueString                    // str, quoted
	valueBool                      // boolean
	valueNumber                    // lit, a Go numeric constant as written (42, -1.5, 1e+21)
	valueDuration                  // dur nanoseconds as a time.Duration constant expression
	valueAny                       // spec, written as the natural Go value of an any
	valueSlice                     // typ{elems...}: a slice or array
	valueMap                       // typ{keys[i]: elems[i]...}
	valueStruct                    // typ{fields...}
	valueAddr                      // &elems[0] (a pointer to a struct literal)
	valueNew                       // new(elems[0]) (a pointer to a composite value or a pointer)
	valueNewConv                   // new(typ(elems[0])) (a pointer to a basic or interface type)
)

// valuePlan is a `with` value, typed: the Go expression that is
// assignable to the field it sets.
type valuePlan struct {
	kind    valueKind
	pos     spec.Pos
	str     string
	boolean bool
	lit     string
	dur     int64
	spec    spec.Value
	typ     typeExpr
	keys    []spec.String
	elems   []valuePlan
	fields  []fieldPlan
}

// typeKind tells what a typeExpr spells.
type typeKind int

const (
	typeBasic   typeKind = iota // name (int, string, error)
	typeNamed                   // path.name[args]
	typePointer                 // *elem
	typeSlice                   // []elem
	typeArray                   // [length]elem
	typeMap                     // map[key]elem
	typeAny                     // any
)

// typeExpr is a Go type as generated code spells it, every named type
// qualified by its import path.
type typeExpr struct {
	kind   typeKind
	name   string
	path   string
	args   []typeExpr
	elem   *typeExpr
	key    *typeExpr
	length int64
	pos    spec.Pos // where the spec caused the type to be written
}

// derivedTools reports whether the file builds method or function tools.
func (fp *filePlan) derivedTools() bool {
	for _, t := range fp.tools {
		if t.derived != nil {
			return true
		}
	}
	return false
}

// declared lists the package-level identifiers the file declares: the
// constructor, the schema constants of derived tools and the helper funcs
// of computed templates and transcripts.
func (fp *filePlan) declared() []string {
	names := []string{"New" + fp.goName}
	for _, t := range fp.tools {
		if t.derived != nil {
			names = append(names, t.derived.schemaConst)
		}
	}
	for _, chain := range [][]stepPlan{fp.messageChain, fp.responsibility} {
		for _, st := range chain {
			switch {
			case st.loadFile != nil && st.loadFile.computed != nil:
				names = append(names, st.loadFile.computed.name)
			case st.loadText != nil && st.loadText.computed != nil:
				names = append(names, st.loadText.computed.name)
			case st.loadTranscript != nil && st.loadTranscript.computed != nil:
				names = append(names, st.loadTranscript.computed.name, fp.lower+st.id+"Transcript")
			}
		}
	}
	return names
}

// String lists the plan readably, one generated file after another: the
// file, its imports, and every resolved reference with its Go type and
// every typed `with` value, each with its spec position (line:col). Tests
// pin it as a golden file; it is also what to look at when a generated
// file surprises.
func (pl *genPlan) String() string {
	var b strings.Builder
	for _, fp := range pl.files {
		fmt.Fprintf(&b, "file %s from %s: package %s, persona %s, New%s\n", fp.name, fp.specPath, fp.pkg, fp.persona, fp.goName)
		for _, path := range slices.Sorted(maps.Keys(fp.imports)) {
			fmt.Fprintf(&b, "  import %s as %s\n", path, fp.imports[path])
		}
		if fp.env != nil {
			fmt.Fprintf(&b, "  env %s: %s\n", fp.env.typ, fp.env.typ.goType)
		}
		for _, t := range fp.tools {
			b.WriteString(t.describe())
		}
		if m := fp.mailbox; m != nil && m.Address.Value != "" {
			fmt.Fprintf(&b, "  mailbox %s", m.Address.Value)
			for _, a := range m.Aliases {
				fmt.Fprintf(&b, ", alias %s", a.Value)
			}
			for _, a := range m.AcceptFrom {
				fmt.Fprintf(&b, ", accepts mail from %s", a.Value)
			}
			if !m.SubjectThreading.Value {
				b.WriteString(", no subject threading")
			}
			b.WriteString("\n")
		}
		for _, chain := range [][]stepPlan{fp.messageChain, fp.responsibility} {
			for _, st := range chain {
				fmt.Fprintf(&b, "  %s %s @%s: %s\n", st.id, st.kind, at(st.pos), st.describe())
				if st.use != nil {
					writeFields(&b, st.use.fields, "    ")
				}
			}
		}
	}
	return b.String()
}

// describe lists a tool on one line (a derived one on two), and its rule on one more.
func (t toolPlan) describe() string {
	return t.describeTool() + t.rule.describe()
}

// describe is the line about a tool's rule: its chains and its approval; "" for none.
func (r *toolRulePlan) describe() string {
	if r == nil {
		return ""
	}
	var parts []string
	if len(r.chains) > 0 {
		parts = append(parts, "offered to the "+strings.Join(r.chains, " and ")+" chain")
	}
	if a := r.approval; a != nil {
		timeout := "72h (default)"
		if a.Timeout.Value > 0 {
			timeout = a.Timeout.Value.String() + " @" + at(a.Timeout.Pos)
		}
		onTimeout := cmp.Or(a.OnTimeout.Value, spec.OnTimeoutDeny)
		approver := "approver hidden from the model"
		if a.RevealApprover.Value {
			approver = "approver revealed to the model"
		}
		parts = append(parts, fmt.Sprintf("calls wait for approval @%s: timeout %s, then %s; %s", at(a.Pos), timeout, onTimeout, approver))
	}
	return "    " + strings.Join(parts, "; ") + "\n"
}

// describeTool lists the tool itself.
func (t toolPlan) describeTool() string {
	if t.value != nil {
		return fmt.Sprintf("  tool %s: %s\n", t.value, t.value.goType)
	}
	d := t.derived
	fn := d.fn.String()
	kind := "func"
	if d.method {
		kind, fn = "method", "env."+fn
	}
	name := d.name + " (from the Go name)"
	if d.namePos.IsValid() {
		name = d.name + " @" + at(d.namePos)
	}
	desc := "description from the spec"
	if d.fromDoc {
		desc = "description from the doc comment"
	}
	idem := "not idempotent"
	if d.idempotent {
		idem = "idempotent"
	}
	return fmt.Sprintf("  tool %s: %s %s: %s\n    input %s: %d properties, %d required; %s; %s; var %s, schema %s (%d bytes)\n",
		name, kind, fn, d.fn.goType, d.input, d.properties, d.required, desc, idem, d.local, d.schemaConst, len(d.schema))
}

// String renders q as the spec wrote it, with its position.
func (q qualPlan) String() string {
	name := q.name
	if q.path != "" {
		name = q.path + "." + q.name
	}
	return name + " @" + at(q.pos)
}

// at is a position without its file: line:col.
func at(p spec.Pos) string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// describe is one line about a step's plan.
func (st stepPlan) describe() string {
	switch {
	case st.loadFile != nil:
		return st.loadFile.describe()
	case st.loadText != nil:
		if st.loadText.computed != nil {
			return "computed by " + st.loadText.computed.name
		}
		return strconv.Quote(st.loadText.static)
	case st.loadTranscript != nil:
		return st.loadTranscript.describe()
	case st.loadRecord != nil:
		lr := st.loadRecord
		loader := lr.loader.String()
		if lr.method {
			loader = "env." + loader
		}
		s := fmt.Sprintf("loader %s: %s, record %s", loader, lr.loader.goType, lr.record)
		switch ser := lr.serializer; {
		case ser == nil:
			s += ", serialized as JSON"
		case ser.fn != nil:
			s += fmt.Sprintf(", serialize func %s: %s", ser.fn, ser.fn.goType)
		default:
			s += fmt.Sprintf(", serialize method %s @%s on %s", ser.method, at(ser.pos), ser.record.describe())
		}
		return s
	case st.threadHistory != nil:
		th := st.threadHistory
		limit := strconv.Itoa(th.Limit.Value)
		if th.Limit.State == spec.LimitUnlimited {
			limit = "none"
		}
		return fmt.Sprintf("limit %s, include_tool_calls %v", limit, th.IncludeToolCalls.Value)
	case st.threadSummary != nil:
		return "summary"
	case st.use != nil:
		return fmt.Sprintf("resolver %s: %s", st.use.typ, st.use.typ.goType)
	}
	return "?"
}

func (pp *pathPlan) describe() string {
	if pp.computed != nil {
		return "path computed by " + pp.computed.name
	}
	return "path " + strconv.Quote(pp.static)
}

// writeFields lists typed `with` fields, nested values indented further.
func writeFields(b *strings.Builder, fs []fieldPlan, indent string) {
	for _, f := range fs {
		fmt.Fprintf(b, "%s%s %s = %s @%s\n", indent, f.name, f.goType, f.value.describe(), at(f.value.pos))
		if len(f.value.fields) > 0 {
			writeFields(b, f.value.fields, indent+"  ")
		}
		for _, el := range f.value.elems {
			if len(el.fields) > 0 {
				writeFields(b, el.fields, indent+"  ")
			}
		}
	}
}

// describe writes a value's Go form in brief (composites by their type).
func (v valuePlan) describe() string {
	switch v.kind {
	case valueString:
		return strconv.Quote(v.str)
	case valueBool:
		return strconv.FormatBool(v.boolean)
	case valueNumber:
		return v.lit
	case valueDuration:
		return time.Duration(v.dur).String()
	case valueAny:
		return "any(" + kindName(v.spec) + ")"
	case valueSlice, valueMap, valueStruct:
		return fmt.Sprintf("%s{%d}", v.typ.describe(), len(v.elems)+len(v.fields))
	case valueAddr:
		return "&" + v.elems[0].describe()
	case valueNew:
		return "new(" + v.elems[0].describe() + ")"
	case valueNewConv:
		return "new(" + v.typ.describe() + "(" + v.elems[0].describe() + "))"
	}
	return "nil"
}

// describe writes a type expression as Go source, packages by import path.
func (t typeExpr) describe() string {
	switch t.kind {
	case typeBasic:
		return t.name
	case typeNamed:
		s := t.path + "." + t.name
		if len(t.args) > 0 {
			var args []string
			for _, a := range t.args {
				args = append(args, a.describe())
			}
			s += "[" + strings.Join(args, ", ") + "]"
		}
		return s
	case typePointer:
		return "*" + t.elem.describe()
	case typeSlice:
		return "[]" + t.elem.describe()
	case typeArray:
		return fmt.Sprintf("[%d]%s", t.length, t.elem.describe())
	case typeMap:
		return "map[" + t.key.describe() + "]" + t.elem.describe()
	}
	return "any"
}
