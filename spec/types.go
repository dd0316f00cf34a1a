package spec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/module"
)

// Pos is a position in a spec file: File as given to the loader, Line and
// Col 1-based. Col counts Unicode characters (runes) from the start of the
// line, a tab counting as one character; this is what gopkg.in/yaml.v3
// reports and what editors call a "character" column. The zero Pos means
// "no position" (a defaulted value that the spec does not spell out).
type Pos struct {
	File string
	Line int
	Col  int
}

// String renders p as "file:line:col", the form compilers and editors
// understand. A Pos without a line renders as the file alone, and the zero
// Pos as "-".
func (p Pos) String() string {
	switch {
	case p.Line == 0 && p.File == "":
		return "-"
	case p.Line == 0:
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// MarshalText renders p as String does, so a Persona encodes to readable
// JSON ("file:line:col") for golden files and debugging.
func (p Pos) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// IsValid reports whether p points into a file (Line > 0). Values that were
// filled in by a default have an invalid Pos.
func (p Pos) IsValid() bool { return p.Line > 0 }

// Before orders positions by file, line, column (the order of diagnostics).
func (p Pos) Before(q Pos) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	if p.Line != q.Line {
		return p.Line < q.Line
	}
	return p.Col < q.Col
}

// String is a scalar string from the spec with the position of its value.
type String struct {
	Value string
	Pos   Pos
}

// Int is an integer from the spec with the position of its value.
type Int struct {
	Value int64
	Pos   Pos
}

// Float is a number from the spec with the position of its value. An
// integer literal in a number field (temperature: 1) is a Float too.
type Float struct {
	Value float64
	Pos   Pos
}

// Bool is a boolean from the spec with the position of its value. When the
// spec omits the field, Value holds the documented default and Pos is zero.
type Bool struct {
	Value bool
	Pos   Pos
}

// Persona is one loaded, checked persona spec (a *.persona.yaml file).
// Every value carries the Pos of its YAML node so later stages (the
// generator's /*line*/ directives included) can point at the spec.
// Values are only returned by the loader when the spec has no errors;
// treat a Persona as read-only.
type Persona struct {
	// File is the path exactly as given to the loader (not cleaned or made
	// absolute), so diagnostics and line directives repeat what the user typed.
	File string
	// Pos is the position of the document's top-level mapping.
	Pos Pos
	// Version is the spec language version; always 1 for now.
	Version Int
	// Name is the persona name in kebab-case (support-agent). GoName(Name.Value)
	// is its Go identifier.
	Name String
	// Description is free text; zero (empty, invalid Pos) when omitted.
	Description String
	// Env is the optional host dependency type (import/path.Type); the
	// generated constructor takes a *Env and bare loader names are its methods.
	Env *GoRef
	// Model holds the model settings passed through to the Request; nil when
	// the spec has no model key.
	Model *Model
	// Tools are the tools offered to the model, in spec order: package-level
	// values implementing runtime.Tool, and methods of Env or package
	// functions whose input struct the generator derives a schema from.
	Tools []Tool
	// MessageResolvers is the reply chain (runs for an inbound message).
	MessageResolvers []Resolver
	// ResponsibilityResolvers is the scheduled chain (no inbound message).
	ResponsibilityResolvers []Resolver
	// Responsibilities are the scheduled jobs, in spec order, names unique.
	Responsibilities []Responsibility
	// Mailbox is the persona's email identity; nil when the spec has no mailbox key.
	Mailbox *Mailbox
	// Cache holds the prompt-cache settings; nil when the spec has no cache key.
	Cache *Cache
}

// GoName returns the persona's exported Go identifier (GoName(p.Name.Value)).
func (p *Persona) GoName() string { return GoName(p.Name.Value) }

// Model is the model block of a spec. Optional numbers are nil when absent.
type Model struct {
	Pos Pos
	// Name is the provider's model name (claude-sonnet-4-5); required.
	Name String
	// Provider is the API the settings are written for (anthropic, openai,
	// openai-responses); zero when absent. When set, validation refuses the
	// settings that provider cannot take (runtime/provider.CheckSettings).
	Provider String
	// MaxTokens is the output token limit, > 0.
	MaxTokens *Int
	// Temperature is in [0, 2].
	Temperature *Float
	// TopP is in [0, 1].
	TopP *Float
	// Stop holds stop sequences in spec order.
	Stop []String
	// Extra is a free-form provider map passed through unchanged, in spec
	// order; nil when absent.
	Extra []MapEntry
}

// Tool is one entry of a spec's tools list. Exactly one of Value, Method
// and Func is set.
//
// The string form names a Value; the mapping form names a Value (value:),
// a Method of the env type (a bare name) or a package Func
// (import/path.Func), each of signature func(ctx context.Context, inv
// *runtime.Invocation, in In) (Out, error) with In a struct (or a pointer
// to one), from which the generator derives the tool's input schema. Every
// mapping may limit the tool to some chains (chains:) and make its calls
// wait for approval (approval:); see ToolRule.
type Tool struct {
	// Pos is the position of the entry: its scalar (string form) or its
	// mapping.
	Pos Pos
	// Value is a package-level value implementing runtime.Tool; nil for the
	// mapping form. It names itself, describes itself and says whether it
	// is idempotent, so Name, Description and Idempotent are zero.
	Value *GoRef
	// Method is a method of env (a bare GoRef); nil unless the entry says
	// method:.
	Method *GoRef
	// Func is a package function (a qualified GoRef); nil unless the entry
	// says func:.
	Func *GoRef
	// Name is the name the model calls the tool by: the entry's name key,
	// or, when it has none, ToolName of the method's or function's Go name
	// (then Pos is zero). It matches ToolNamePattern and is unique among
	// the persona's method and function tools.
	Name String
	// Description is the entry's description key; zero when absent, and
	// the generator then takes the method's or function's doc comment.
	Description String
	// Idempotent is the entry's idempotent key: whether running the tool
	// twice for one call does no harm. Default false (the runner runs each
	// call at most once).
	Idempotent Bool
	// Chains is the entry's chains key: the chains whose runs offer the
	// tool, ChainReply and/or ChainScheduled, in spec order; nil when
	// absent (both chains).
	Chains []String
	// Approval is the entry's approval key; nil when absent (calls run at
	// once).
	Approval *Approval
}

// Ref returns the Go reference the entry names: Value, Method or Func.
func (t Tool) Ref() GoRef {
	switch {
	case t.Value != nil:
		return *t.Value
	case t.Method != nil:
		return *t.Method
	case t.Func != nil:
		return *t.Func
	}
	return GoRef{}
}

// ToolNamePattern is the rule for tool names, the runtime's and the model
// APIs' (Anthropic, OpenAI): 1 to 64 ASCII letters, digits, '_' or '-'.
const ToolNamePattern = `^[a-zA-Z0-9_-]{1,64}$`

// ToolName returns the default tool name of a method or function: its Go
// name in snake_case, a word starting at each upper-case letter that
// follows a lower-case letter or digit and at the last upper-case letter
// of an acronym followed by a lower-case letter, runs of '_' folded into
// one (LookupOrder → lookup_order, GetHTTPStatus → get_http_status,
// Fetch2FACode → fetch2_fa_code, URL → url). name is an exported Go
// identifier; the result may still exceed 64 characters.
func ToolName(name string) string {
	var b strings.Builder
	rs := []rune(name)
	lower := func(r rune) bool { return r >= 'a' && r <= 'z' }
	upper := func(r rune) bool { return r >= 'A' && r <= 'Z' }
	digit := func(r rune) bool { return r >= '0' && r <= '9' }
	for i, r := range rs {
		if upper(r) && i > 0 {
			prev := rs[i-1]
			next := i+1 < len(rs) && lower(rs[i+1])
			if lower(prev) || digit(prev) || upper(prev) && next {
				b.WriteByte('_')
			}
		}
		if r == '_' {
			if s := b.String(); s == "" || s[len(s)-1] == '_' {
				continue
			}
		}
		if upper(r) {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return strings.Trim(b.String(), "_")
}

// GoRef is a reference to a Go identifier written in a spec.
//
// Grammar: a qualified reference is IMPORTPATH "." NAME, split at the last
// dot (github.com/acme/app/agents.Env, gopkg.in/x.v3.Func); a bare reference
// is NAME alone. NAME is an exported ASCII identifier ([A-Z][A-Za-z0-9_]*);
// IMPORTPATH is an import path as the go command accepts it
// (golang.org/x/mod/module.CheckImportPath). Where each form is allowed:
//   - env, tools (string form), tools.func, use.resolver, serialize.func:
//     qualified only;
//   - tools.method: bare only (a method of Env), and requires env;
//   - load_record.loader: bare (a method of Env) requires env; qualified (a
//     package function) is allowed with or without env;
//   - serialize.method: bare only (a method of the record type).
type GoRef struct {
	// Path is the import path; "" for a bare reference.
	Path string
	// Name is the identifier.
	Name string
	// Pos is the position of the reference's scalar in the spec.
	Pos Pos
}

// IsQualified reports whether r names an import path (Path != "").
func (r GoRef) IsQualified() bool { return r.Path != "" }

// String renders r as written: "import/path.Name" or "Name".
func (r GoRef) String() string {
	if r.Path == "" {
		return r.Name
	}
	return r.Path + "." + r.Name
}

// ParseGoRef parses s by the GoRef grammar. It reports ok=false when s is not
// a valid reference (CheckGoRef says why); the returned GoRef has no Pos.
func ParseGoRef(s string) (GoRef, bool) {
	r, err := CheckGoRef(s)
	return r, err == nil
}

// CheckGoRef parses s by the GoRef grammar, like ParseGoRef, and when s is
// not a valid reference returns an error saying why: the name is not an
// exported ASCII identifier, or the import path breaks Go's rules
// (golang.org/x/mod/module.CheckImportPath: no empty, "." or ".."
// elements, no element ending in a dot, only [A-Za-z0-9_.~+-], no leading
// dash or slash, no Windows-reserved names such as con or aux).
func CheckGoRef(s string) (GoRef, error) {
	i := strings.LastIndexByte(s, '.')
	name, path := s, ""
	if i >= 0 {
		path, name = s[:i], s[i+1:]
		if err := module.CheckImportPath(path); err != nil {
			var pe *module.InvalidPathError
			if errors.As(err, &pe) && pe.Err != nil {
				return GoRef{}, fmt.Errorf("import path %q: %v", path, pe.Err)
			}
			return GoRef{}, err
		}
	}
	if !validExportedASCII(name) {
		if name == "" {
			return GoRef{}, errors.New("the name after the last dot is missing")
		}
		return GoRef{}, fmt.Errorf("%q is not an exported Go name (an upper-case ASCII letter, then letters, digits or _)", name)
	}
	return GoRef{Path: path, Name: name}, nil
}

func validExportedASCII(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Role is the role of the messages a resolver produces.
type Role string

// The roles a resolver may produce. RoleTool exists for completeness but is
// not accepted in specs: a tool message needs the id of a preceding tool
// call, which no static resolver can supply (see runtime's pairing
// invariant).
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// RoleValue is a role with its position; Pos is zero when the spec omits
// role and Value holds the resolver's default (DefaultRole).
type RoleValue struct {
	Value Role
	Pos   Pos
}

// ResolverKind names a resolver entry's single key.
type ResolverKind string

// The resolver kinds of spec v1.
const (
	KindLoadFile       ResolverKind = "load_file"
	KindLoadText       ResolverKind = "load_text"
	KindLoadRecord     ResolverKind = "load_record"
	KindLoadTranscript ResolverKind = "load_transcript"
	KindThreadHistory  ResolverKind = "thread_history"
	KindThreadSummary  ResolverKind = "thread_summary"
	KindUse            ResolverKind = "use"
)

// DefaultRole returns the role a resolver of kind k produces when the spec
// omits role: system for load_file, load_text and load_record; user for
// thread_summary (the summary is presented to the model as a user message,
// as silas does). Other kinds have no role and return "".
func DefaultRole(k ResolverKind) Role {
	switch k {
	case KindLoadFile, KindLoadText, KindLoadRecord:
		return RoleSystem
	case KindThreadSummary:
		return RoleUser
	}
	return ""
}

// Resolver is one entry of a resolver chain. Exactly one of the kind
// pointers is non-nil, the one named by Kind. Pos is the position of the
// entry's key (load_file:, ...).
type Resolver struct {
	Kind           ResolverKind
	Pos            Pos
	LoadFile       *LoadFile
	LoadText       *LoadText
	LoadRecord     *LoadRecord
	LoadTranscript *LoadTranscript
	ThreadHistory  *ThreadHistory
	ThreadSummary  *ThreadSummary
	Use            *Use
}

// LoadFile reads a prompt file (the load_file entry; runtime.LoadFile runs
// it, re-creating protege's LoadFile resolver, seed 000). Path is a template;
// when it has no field references it is a static path (Path.IsStatic). A
// static absolute path is used as is; any other path resolves against the
// host's root.
type LoadFile struct {
	Pos  Pos
	Path Template
	Role RoleValue
}

// LoadText emits a text built from a template, trimmed; blank → nothing
// (protege's LoadText resolver, seed 000; run by runtime.LoadText).
type LoadText struct {
	Pos  Pos
	Text Template
	Role RoleValue
}

// LoadRecord renders the records a loader returns (protege's LoadRecord
// resolver, seed 000; run by runtime.LoadRecord).
// Loader is bare (a method of Env; requires env) or qualified (a package
// function). Serialize is nil for the default (indented JSON).
//
// Changes is the entry's changes key: how often the loader's records change (PerMessage when
// absent).
type LoadRecord struct {
	Pos       Pos
	Loader    GoRef
	Serialize *Serializer
	Role      RoleValue
	Changes   ChangesValue
}

// Serializer renders one record. Exactly one of Method (a bare method name
// on the record type, returning string) and Func (a qualified function
// func(T) (string, error)) is set.
type Serializer struct {
	Pos    Pos
	Method *GoRef
	Func   *GoRef
}

// LoadTranscript emits the messages of a chat file in the transcript format
// (scout-ai's chat text format, seed 002; run by transcript.Load).
// Path is a template like LoadFile.Path.
type LoadTranscript struct {
	Pos  Pos
	Path Template
}

// LimitState tells how thread_history's limit was given.
type LimitState int

const (
	// LimitDefault: the spec omits limit; the limit is DefaultHistoryLimit.
	LimitDefault LimitState = iota
	// LimitUnlimited: the spec says limit: null; all messages are replayed.
	LimitUnlimited
	// LimitSet: the spec gives a number (>= 1) in Limit.Value.
	LimitSet
)

// Defaults of thread_history (from protege's ThreadHistory).
const (
	DefaultHistoryLimit      = 50
	DefaultReplayResultLimit = 4000
)

// Limit is thread_history's limit: absent, null, or a number.
type Limit struct {
	State LimitState
	// Value is the number for LimitSet and DefaultHistoryLimit for
	// LimitDefault; 0 for LimitUnlimited.
	Value int
	// Pos is the value's position; zero for LimitDefault.
	Pos Pos
}

// ThreadHistory replays the thread's earlier messages (protege's
// ThreadHistory resolver, seed 000; run by runtime.ThreadHistory).
// IncludeToolCalls defaults to true; ReplayResultLimit (characters) to
// DefaultReplayResultLimit; Step (how many messages the window's start
// advances at a time, runtime.ThreadHistory.Step) to 1; defaults carry a
// zero Pos.
type ThreadHistory struct {
	Pos               Pos
	Limit             Limit
	IncludeToolCalls  Bool
	ReplayResultLimit Int
	Step              Int
}

// ThreadSummary emits the completed compaction summary, if any (silas's
// compaction preamble, seed 004; run by runtime.ThreadSummary). It must come
// before thread_history in its chain.
type ThreadSummary struct {
	Pos  Pos
	Role RoleValue
}

// Use runs a host resolver: a struct type (qualified GoRef) whose pointer
// implements runtime.Resolver; With fills its fields (nil when absent, else
// a ValueMap). Changes is its changes key (PerMessage when absent).
type Use struct {
	Pos      Pos
	Resolver GoRef
	With     *Value
	Changes  ChangesValue
}

// Responsibility is a scheduled job of the persona.
type Responsibility struct {
	Pos Pos
	// Name is kebab-case and unique within the spec.
	Name String
	// Schedule is a standard 5-field cron expression (minute hour
	// day-of-month month day-of-week), as parsed by robfig/cron/v3's
	// ParseStandard (descriptors such as @daily are accepted too); the
	// loader also rejects an @every interval below one second and an
	// expression that never fires.
	Schedule String
	// Timezone is an IANA zone name; "UTC" with a zero Pos when omitted.
	Timezone String
	// Enabled defaults to true.
	Enabled Bool
}

// Template is a parsed template: literal text plus {{ .Field.Chain }}
// references (see TemplateFields). Raw is the source string.
type Template struct {
	Raw   String
	Parts []TemplatePart
}

// IsStatic reports whether t has no field references.
func (t Template) IsStatic() bool {
	for _, p := range t.Parts {
		if p.Field != nil {
			return false
		}
	}
	return true
}

// TemplatePart is either literal text (Field == nil) or a field reference
// such as []string{"Persona", "Name"} for {{ .Persona.Name }}. Pos is where
// the part starts in the spec (exact for plain scalars and quoted strings
// without escapes before it; otherwise the scalar's start).
type TemplatePart struct {
	Literal string
	Field   []string
	Pos     Pos
}

// ValueKind is the kind of a generic Value.
type ValueKind int

// Value kinds, matching JSON's data model (int and float kept apart).
const (
	ValueNull ValueKind = iota
	ValueBool
	ValueInt
	ValueFloat
	ValueString
	ValueList
	ValueMap
)

// Value is a positioned generic YAML value (use.with, model.extra), built
// from YAML 1.2 core-schema scalars only: yaml.v3's timestamp decoding does
// not apply (2024-01-02 is a string), .nan/.inf are rejected.
type Value struct {
	Kind  ValueKind
	Pos   Pos
	Bool  bool
	Int   int64
	Float float64
	// Str is the string for ValueString; for ValueInt the decimal form
	// (0x10 → "16"); for ValueFloat the literal as written when JSON can
	// spell it (else Go's shortest 'g' form), so huge numbers stay exact.
	Str  string
	List []Value
	Map  []MapEntry
}

// MapEntry is one key of a ValueMap, in spec order; keys are unique strings.
type MapEntry struct {
	Key   String
	Value Value
}

// Diagnostic is one problem found in a spec: where, and what. Warning marks
// a problem that does not stop generation (a resolver order that defeats
// the prompt cache, see CacheWarnings); every other diagnostic is an error.
type Diagnostic struct {
	Pos     Pos
	Message string
	Warning bool
}

// String renders d as "file:line:col: message", or "file:line:col:
// warning: message" for a warning.
func (d Diagnostic) String() string {
	if d.Warning {
		return d.Pos.String() + ": warning: " + d.Message
	}
	return d.Pos.String() + ": " + d.Message
}
