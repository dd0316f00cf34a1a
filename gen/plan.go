package gen

import (
	"github.com/personagen/personagen/spec"
)

// Plan is the checked form of a set of specs: every host reference resolved
// to the Go declaration it names, every `with` value typed, every static
// prompt and transcript path read, every file name and import decided.
// Check builds it from specs and host type information; Render writes Go
// source from it alone, without looking anything up. A Plan is read-only
// once built.
//
// The plan's types below are the contract between the two phases. A new
// kind of reference (a tool whose input schema is derived from a Go type,
// say) is a new field of the plan that Check fills from the host and the
// emitter renders; the emitter never sees go/types.
type Plan struct {
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

	env              *envPlan
	model            *spec.Model
	tools            []qualPlan
	responsibilities []spec.Responsibility
	mailbox          *spec.Mailbox
	messageChain     []stepPlan
	responsibility   []stepPlan
	usesHistory      bool
}

// qualPlan is a package-level declaration of a host package named by the
// spec at pos.
type qualPlan struct {
	path, name string
	pos        spec.Pos
}

// envPlan is the env type; the constructor takes a pointer to it.
type envPlan struct {
	typ qualPlan
}

// stepPlan is one resolver of a chain. id names its helper funcs
// (Message3 for the third reply step). Exactly one kind field is set.
type stepPlan struct {
	kind spec.ResolverKind
	pos  spec.Pos
	id   string

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

// fieldPlan sets the struct field name from the spec entry at keyPos whose
// value is at value.pos.
type fieldPlan struct {
	name   string
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

// declared lists the package-level identifiers the file declares: the
// constructor and the helper funcs of computed templates and transcripts.
func (fp *filePlan) declared() []string {
	names := []string{"New" + fp.goName}
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
