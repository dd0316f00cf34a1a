package gen

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"

	"github.com/personagen/personagen/spec"
)

// locals are the identifiers generated constructors declare, and Go's
// predeclared identifiers (generated code writes string, error, new, nil,
// int, …, which a package named so would shadow); an imported package
// whose name equals one of them is imported under another name.
var locals = map[string]bool{
	"env": true, "opts": true, "p": true, "inv": true, "r": true, "ctx": true, "dst": true, "path": true, "files": true, "err": true,
	"any": true, "append": true, "bool": true, "byte": true, "cap": true, "clear": true, "close": true, "comparable": true,
	"complex": true, "complex128": true, "complex64": true, "copy": true, "delete": true, "error": true, "false": true,
	"float32": true, "float64": true, "imag": true, "int": true, "int16": true, "int32": true, "int64": true, "int8": true,
	"iota": true, "len": true, "make": true, "max": true, "min": true, "new": true, "nil": true, "panic": true,
	"print": true, "println": true, "real": true, "recover": true, "rune": true, "string": true, "true": true,
	"uint": true, "uint16": true, "uint32": true, "uint64": true, "uint8": true, "uintptr": true,
}

// renderFiles writes the Go file of every spec in the plan, in spec order, then
// PersonasFile. It
// looks nothing up: everything it writes comes from the plan. A generator
// bug that makes unparsable code is reported as an *Error holding the
// ErrFormat text at the spec's top-level position. Output is
// deterministic: the same plan gives byte-identical files.
func (pl *genPlan) renderFiles() ([]File, error) {
	var files []File
	var diags []spec.Diagnostic
	for _, fp := range pl.files {
		src, err := newEmitter(fp, pl.opts).file()
		if err != nil {
			diags = append(diags, spec.Diagnostic{Pos: fp.pos, Message: err.Error()})
			continue
		}
		files = append(files, File{Name: fp.name, Source: fp.specPath, Content: src})
	}
	if len(diags) > 0 {
		return nil, &Error{Diagnostics: spec.SortDiagnostics(diags)}
	}
	if len(pl.files) > 0 {
		src, err := pl.personasFile()
		if err != nil {
			return nil, &Error{Diagnostics: []spec.Diagnostic{{Pos: pl.files[0].pos, Message: err.Error()}}}
		}
		files = append(files, File{Name: PersonasFile, Source: AllSources, Content: src})
	}
	return files, nil
}

// emitter writes the file of one filePlan.
type emitter struct {
	fp      *filePlan
	lines   bool // write line directives (on, and both paths can be written in one)
	helpers []jen.Code
}

func newEmitter(fp *filePlan, opts Options) *emitter {
	return &emitter{fp: fp, lines: !opts.NoLineDirectives && directivePath(fp.specPath) && directivePath(fp.genPath)}
}

// directivePath reports whether a file name can be written in a /*line*/
// directive: one line, no comment end, nothing Go refuses in a comment.
func directivePath(p string) bool {
	return !strings.Contains(p, "*/") && commentSafe(p)
}

func (e *emitter) file() ([]byte, error) {
	fp := e.fp
	f := jen.NewFile(fp.pkg)
	f.ImportName(RuntimePath, "runtime")
	f.ImportName(ChatPath, "chat")
	f.ImportName(TranscriptPath, "transcript")
	f.ImportName(ToolPath, "tool")
	f.HeaderComment(Header)
	f.HeaderComment(SourcePrefix + sourceLine(fp.specPath))
	f.Const().Id("_").Op("=").Qual(RuntimePath, "RuntimeVersion1")
	f.Line()
	e.constructor(f)
	for _, h := range e.helpers {
		f.Line()
		f.Add(h)
	}
	// An import whose name a local of the generated code or a
	// package-level declaration of the output package also uses is
	// renamed: the local would shadow it, the declaration clash with it.
	names := map[string]string{
		"context": "context", "errors": "errors", "fmt": "fmt", "path/filepath": "filepath",
		"strings": "strings", "time": "time", "encoding/json": "json",
		RuntimePath: "runtime", ChatPath: "chat", TranscriptPath: "transcript", ToolPath: "tool",
	}
	toolLocals := make(map[string]bool)
	for _, t := range fp.tools {
		if t.derived != nil {
			toolLocals[t.derived.local] = true
		}
	}
	for path, name := range fp.imports {
		names[path] = name
	}
	paths := slices.Sorted(maps.Keys(names))
	for _, path := range paths {
		name := names[path]
		if !locals[name] && !fp.reserved[name] && !toolLocals[name] {
			if _, host := fp.imports[path]; host {
				f.ImportName(path, name)
			}
			continue
		}
		alias := name + "pkg"
		for i := 1; fp.reserved[alias] || toolLocals[alias]; i++ {
			alias = name + "pkg" + strconv.Itoa(i)
		}
		f.ImportAlias(path, alias)
	}
	return render(f, fp.genPath, e.lines)
}

func rt(name string) *jen.Statement { return jen.Qual(RuntimePath, name) }

// ch is the identifier name of package runtime/chat.
func ch(name string) *jen.Statement { return jen.Qual(ChatPath, name) }

// qual is the qualified identifier q names.
func qual(q qualPlan) *jen.Statement { return jen.Qual(q.path, q.name) }

// at wraps code, which comes from the spec at pos, in a line directive
// naming the spec and a reset marker (see render). The directive's column
// is one less than pos's because gofmt puts a space after the comment.
func (e *emitter) at(pos spec.Pos, code jen.Code) *jen.Statement {
	if !e.lines || !pos.IsValid() {
		return jen.Add(code)
	}
	return jen.Comment(e.directive(pos)).Add(code).Comment(resetMarker)
}

// atKV renders `key: value` for an entry written at keyPos whose value is
// at valPos: a directive before the key (unknown-field errors) and one
// before the value (type errors), then one reset marker. The Go key may be
// longer or shorter than the spec's (MaxAge for max_age), so the value
// needs its own directive to keep its column.
func (e *emitter) atKV(keyPos, valPos spec.Pos, key, value jen.Code) *jen.Statement {
	if !e.lines || !keyPos.IsValid() || !valPos.IsValid() {
		return jen.Add(key).Op(":").Add(value)
	}
	return jen.Comment(e.directive(keyPos)).Add(key).Op(":").Comment(e.directive(valPos)).Add(value).Comment(resetMarker)
}

// mark is a directive alone, without a reset: the code after it, up to
// the enclosing reset, is at pos again. It goes before every name or
// literal nested inside generated code that comes from the spec at pos,
// so that the compiler's column for an error there is pos's column, not
// pos's plus the length of the Go text before it (which can lie past the
// end of the spec line).
func (e *emitter) mark(pos spec.Pos) *jen.Statement {
	if !e.lines || !pos.IsValid() {
		return jen.Null()
	}
	return jen.Comment(e.directive(pos))
}

// directive is the /*line*/ comment that makes the code after it (and the
// space gofmt puts after the comment) start at pos.
func (e *emitter) directive(pos spec.Pos) string {
	return fmt.Sprintf("/*line %s:%d:%d*/", e.fp.specPath, pos.Line, max(pos.Col-1, 1))
}

// posString is a spec position as runtime.Step.Pos carries it.
func (e *emitter) posString(p spec.Pos) string {
	return fmt.Sprintf("%s:%d:%d", e.fp.specPath, p.Line, p.Col)
}

func (e *emitter) constructor(f *jen.File) {
	fp := e.fp
	name := "New" + fp.goName
	var params []jen.Code
	if fp.env != nil {
		params = append(params, jen.Id("env").Add(e.at(fp.env.typ.pos, jen.Op("*").Add(qual(fp.env.typ)))))
	}
	params = append(params, jen.Id("opts").Add(rt("Options")))

	doc := fmt.Sprintf("%s builds the %s persona from %s.", name, fp.persona, fp.specPath)
	if d := strings.TrimSpace(fp.description); d != "" {
		doc += "\n" + oneLine(d)
	}
	var errs []string
	if fp.env != nil {
		errs = append(errs, "env is nil")
	}
	if fp.usesHistory {
		errs = append(errs, "opts.History is nil (the spec uses thread_history or thread_summary; the error wraps runtime.ErrNoHistorySource)")
	}
	if fp.derivedTools() {
		errs = append(errs, "tool.New refuses a tool definition (wrapping tool.ErrInvalidDef; the generator checked each one, so only a changed runtime/tool can)")
	}
	if len(errs) > 0 {
		doc += "\nIt returns an error when " + strings.Join(errs, ", or when ") + "."
	}
	for _, line := range strings.Split(doc, "\n") {
		// Written with its own "//": jennifer renders a comment that starts
		// with "//" or "/*" verbatim, and a description may start so.
		f.Comment("// " + commentText(line))
	}

	var body []jen.Code
	if fp.env != nil {
		body = append(body, jen.If(jen.Id("env").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("errors", "New").Call(jen.Lit(name+": env is nil"))),
		))
	}
	if fp.usesHistory {
		body = append(body, jen.If(jen.Id("opts").Dot("History").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(
				jen.Lit(name+": opts.History is nil but the spec uses thread_history or thread_summary: %w"),
				rt("ErrNoHistorySource"))),
		))
	}
	body = append(body, e.derivedTools(name)...)
	body = append(body, jen.Id("p").Op(":=").Op("&").Add(rt("Persona")).Add(e.personaFields()))
	if m := fp.mailbox; m != nil && m.Address.Value != "" {
		box := jen.Id("p").Dot("Mailbox")
		body = append(body, box.Clone().Dot("Address").Op("=").Lit(m.Address.Value))
		if len(m.Aliases) > 0 {
			var aliases []jen.Code
			for _, a := range m.Aliases {
				aliases = append(aliases, jen.Lit(a.Value))
			}
			body = append(body, box.Clone().Dot("Aliases").Op("=").Index().String().Values(aliases...))
		}
		if m.Name.Value != "" {
			body = append(body, box.Clone().Dot("Name").Op("=").Lit(m.Name.Value))
		}
		if len(m.AcceptFrom) > 0 {
			var names []jen.Code
			for _, a := range m.AcceptFrom {
				names = append(names, jen.Lit(a.Value))
			}
			body = append(body, box.Clone().Dot("AcceptFrom").Op("=").Index().String().Values(names...))
		}
		if !m.SubjectThreading.Value {
			body = append(body, box.Clone().Dot("DisableSubjectThreading").Op("=").True())
		}
	}
	if c := fp.cache; c != nil {
		switch c.TTL.Value {
		case "1h":
			body = append(body, jen.Id("p").Dot("Cache").Dot("TTL").Op("=").Qual("time", "Hour"))
		case "none":
			body = append(body, jen.Id("p").Dot("Cache").Dot("Off").Op("=").True())
		}
	}
	if len(fp.messageChain) > 0 {
		body = append(body, jen.Id("p").Dot("MessageChain").Op("=").Add(e.chain(fp.messageChain)))
	}
	if len(fp.responsibility) > 0 {
		body = append(body, jen.Id("p").Dot("ResponsibilityChain").Op("=").Add(e.chain(fp.responsibility)))
	}
	body = append(body, jen.Return(jen.Id("p"), jen.Nil()))

	f.Func().Id(name).Params(params...).Params(jen.Op("*").Add(rt("Persona")), jen.Error()).Block(body...)
}

// oneLine folds white space runs (newlines included) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// commentSafe reports whether s can be written inside a Go comment as is:
// valid UTF-8, printable or a tab, and none of what Go's scanner refuses
// anywhere in a file (NUL, a byte order mark) or what would end a line
// comment.
func commentSafe(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r == '\uFEFF' || (r != '\t' && r != ' ' && !unicode.IsPrint(r)) {
			return false
		}
	}
	return true
}

// commentText makes s safe inside a line comment: each character
// commentSafe refuses is written as its Go escape (\x00, \ufeff).
func commentText(s string) string {
	if commentSafe(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		piece := s[i : i+size]
		i += size
		if commentSafe(piece) {
			b.WriteString(piece)
			continue
		}
		q := strconv.QuoteToASCII(piece)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// sourceLine is a spec path as the header's source line writes it: as is,
// or Go-quoted when it cannot be written in a comment as is or starts
// with a quote (FileSource reads both).
func sourceLine(p string) string {
	if commentSafe(p) && !strings.HasPrefix(p, `"`) {
		return p
	}
	return strconv.QuoteToASCII(p)
}

// multi renders items one per line between open and close.
func multi(open, close string, items []jen.Code) *jen.Statement {
	return jen.Custom(jen.Options{Open: open, Close: close, Separator: ",", Multi: true}, items...)
}

func field(name string, value jen.Code) jen.Code {
	return jen.Id(name).Op(":").Add(value)
}

func (e *emitter) personaFields() jen.Code {
	fp := e.fp
	items := []jen.Code{field("Name", jen.Lit(fp.persona))}
	if fp.description != "" {
		items = append(items, field("Description", jen.Lit(fp.description)))
	}
	if fp.model != nil {
		items = append(items, field("Model", model(fp.model)))
	}
	if len(fp.tools) > 0 {
		var tools []jen.Code
		for _, t := range fp.tools {
			if t.value != nil {
				tools = append(tools, e.at(t.value.pos, qual(*t.value)))
			} else {
				tools = append(tools, jen.Id(t.derived.local))
			}
		}
		items = append(items, field("Tools", jen.Index().Add(rt("Tool")).Add(multi("{", "}", tools))))
	}
	if rules := e.toolRules(); rules != nil {
		items = append(items, field("ToolRules", rules))
	}
	if len(fp.responsibilities) > 0 {
		var rs []jen.Code
		for _, r := range fp.responsibilities {
			fs := []jen.Code{
				field("Name", jen.Lit(r.Name.Value)),
				field("Schedule", jen.Lit(r.Schedule.Value)),
				field("Timezone", jen.Lit(r.Timezone.Value)),
				field("Enabled", jen.Lit(r.Enabled.Value)),
			}
			rs = append(rs, jen.Values(fs...))
		}
		items = append(items, field("Responsibilities", jen.Index().Add(rt("Responsibility")).Add(multi("{", "}", rs))))
	}
	return multi("{", "}", items)
}

// toolRules renders the persona's ToolRules, keyed by tool name — a value tool's own
// Name(), behind a directive at the spec — or nil when no entry has chains or approval:
//
//	map[string]runtime.ToolRule{
//		"escalate_ticket": {
//			Chains:   []runtime.ChainKind{runtime.ChainReply},
//			Approval: &runtime.ApprovalRule{Timeout: 48 * time.Hour},
//		},
//	}
func (e *emitter) toolRules() jen.Code {
	var entries []jen.Code
	for _, t := range e.fp.tools {
		r := t.rule
		if r == nil {
			continue
		}
		var key *jen.Statement
		if t.value != nil {
			key = e.at(t.value.pos, qual(*t.value).Dot("Name").Call())
		} else {
			key = jen.Lit(t.derived.name)
		}
		var fs []jen.Code
		if len(r.chains) > 0 {
			var chains []jen.Code
			for _, c := range r.chains {
				name := "ChainReply"
				if c == spec.ChainScheduled {
					name = "ChainScheduled"
				}
				chains = append(chains, rt(name))
			}
			fs = append(fs, field("Chains", jen.Index().Add(rt("ChainKind")).Values(chains...)))
		}
		if a := r.approval; a != nil {
			var af []jen.Code
			if a.Timeout.Value > 0 {
				af = append(af, field("Timeout", durationCode(a.Timeout.Value)))
			}
			switch a.OnTimeout.Value {
			case spec.OnTimeoutApprove:
				af = append(af, field("OnTimeout", rt("TimeoutApprove")))
			case spec.OnTimeoutDeny:
				af = append(af, field("OnTimeout", rt("TimeoutDeny")))
			}
			if a.RevealApprover.Value {
				af = append(af, field("RevealApprover", jen.True()))
			}
			fs = append(fs, field("Approval", jen.Op("&").Add(rt("ApprovalRule")).Values(af...)))
		}
		entries = append(entries, key.Op(":").Add(multi("{", "}", fs)))
	}
	if entries == nil {
		return nil
	}
	return jen.Map(jen.String()).Add(rt("ToolRule")).Add(multi("{", "}", entries))
}

// derivedTools renders the statements that build the method and function
// tools, each
//
//	lookupOrderTool, err := tool.New(tool.Def{...}, env.LookupOrder)
//	if err != nil { return nil, fmt.Errorf("NewX: %w", err) }
//
// with the method value or function behind a directive at the spec, so a
// signature that changed after generation is reported there; and adds
// each schema as a package-level constant to the file's helpers.
func (e *emitter) derivedTools(ctor string) []jen.Code {
	var body []jen.Code
	for _, t := range e.fp.tools {
		d := t.derived
		if d == nil {
			continue
		}
		var fn jen.Code
		if d.method {
			fn = e.at(d.fn.pos, jen.Id("env").Dot(d.fn.name))
		} else {
			fn = e.at(d.fn.pos, qual(d.fn))
		}
		def := []jen.Code{
			field("Name", jen.Lit(d.name)),
			field("Description", jen.Lit(d.description)),
			field("InputSchema", jen.Qual("encoding/json", "RawMessage").Call(jen.Id(d.schemaConst))),
		}
		if d.idempotent {
			def = append(def, field("Idempotent", jen.True()))
		}
		body = append(body,
			jen.List(jen.Id(d.local), jen.Err()).Op(":=").Qual(ToolPath, "New").Call(
				jen.Qual(ToolPath, "Def").Add(multi("{", "}", def)), fn),
			jen.If(jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(ctor+": %w"), jen.Err())),
			),
		)
		kind := "function " + d.fn.path + "." + d.fn.name
		if d.method {
			kind = "method env." + d.fn.name
		}
		doc := fmt.Sprintf("%s is the input schema of the tool %s (%s, %s), derived from %s at generate time.",
			d.schemaConst, d.name, kind, commentText(e.posString(d.fn.pos)), d.input)
		e.helpers = append(e.helpers, jen.Comment(doc).Line().
			Const().Id(d.schemaConst).Op("=").Op("`"+string(d.schema)+"`"))
	}
	return body
}

func model(m *spec.Model) jen.Code {
	items := []jen.Code{field("Name", jen.Lit(m.Name.Value))}
	if m.Provider.Value != "" {
		items = append(items, field("Provider", jen.Lit(m.Provider.Value)))
	}
	if m.MaxTokens != nil {
		items = append(items, field("MaxTokens", jen.Lit(int(m.MaxTokens.Value))))
	}
	if m.Temperature != nil {
		items = append(items, field("Temperature", jen.New(jen.Lit(m.Temperature.Value))))
	}
	if m.TopP != nil {
		items = append(items, field("TopP", jen.New(jen.Lit(m.TopP.Value))))
	}
	if len(m.Stop) > 0 {
		var stops []jen.Code
		for _, s := range m.Stop {
			stops = append(stops, jen.Lit(s.Value))
		}
		items = append(items, field("Stop", jen.Index().String().Values(stops...)))
	}
	if m.Extra != nil {
		items = append(items, field("Extra", anyMap(m.Extra)))
	}
	return ch("ModelSettings").Add(multi("{", "}", items))
}

// anyLit renders v as the natural Go value of an `any`: string, int,
// float64, bool, nil, []any, map[string]any.
func anyLit(v spec.Value) jen.Code {
	switch v.Kind {
	case spec.ValueBool:
		return jen.Lit(v.Bool)
	case spec.ValueInt:
		return jen.Op(strconv.FormatInt(v.Int, 10))
	case spec.ValueFloat:
		return jen.Lit(v.Float)
	case spec.ValueString:
		return jen.Lit(v.Str)
	case spec.ValueList:
		var items []jen.Code
		for _, e := range v.List {
			items = append(items, anyLit(e))
		}
		return jen.Index().Any().Add(multi("{", "}", items))
	case spec.ValueMap:
		return anyMap(v.Map)
	}
	return jen.Nil()
}

func anyMap(entries []spec.MapEntry) jen.Code {
	var items []jen.Code
	for _, e := range entries {
		items = append(items, jen.Lit(e.Key.Value).Op(":").Add(anyLit(e.Value)))
	}
	return jen.Map(jen.String()).Any().Add(multi("{", "}", items))
}

func (e *emitter) chain(steps []stepPlan) jen.Code {
	var items []jen.Code
	for _, st := range steps {
		items = append(items, rt("Step").Add(multi("{", "}", []jen.Code{
			field("Kind", jen.Lit(string(st.kind))),
			field("Pos", jen.Lit(e.posString(st.pos))),
			field("Resolver", e.resolver(st)),
			field("Changes", rt(changesConst(st.changes))),
		})))
	}
	return rt("NewChain").Add(multi("(", ")", items))
}

// changesConst names the runtime constant of a step's class.
func changesConst(c spec.Changes) string {
	switch c {
	case spec.PerPersona:
		return "PerPersona"
	case spec.PerThread:
		return "PerThread"
	}
	return "PerMessage"
}

func roleCode(r spec.Role) jen.Code {
	switch r {
	case spec.RoleUser:
		return ch("RoleUser")
	case spec.RoleAssistant:
		return ch("RoleAssistant")
	case spec.RoleTool:
		return ch("RoleTool")
	}
	return ch("RoleSystem")
}

// roleField is the Role field of a resolver literal; nil when the spec
// leaves the role at its default (the zero value means the same).
func roleField(r spec.RoleValue) []jen.Code {
	if !r.Pos.IsValid() {
		return nil
	}
	return []jen.Code{field("Role", roleCode(r.Value))}
}

func filesField() jen.Code { return field("Files", jen.Id("opts").Dot("Files")) }

// resolver renders one chain entry as a runtime.Resolver value.
func (e *emitter) resolver(st stepPlan) jen.Code {
	switch {
	case st.loadFile != nil:
		lf := st.loadFile
		var items []jen.Code
		if lf.computed == nil {
			items = append(items, field("Path", jen.Lit(lf.static)))
		} else {
			items = append(items, field("PathFunc", e.template(lf.computed)))
		}
		items = append(items, roleField(lf.role)...)
		items = append(items, filesField())
		return jen.Op("&").Add(rt("LoadFile")).Values(items...)
	case st.loadText != nil:
		lt := st.loadText
		var items []jen.Code
		if lt.computed == nil {
			items = append(items, field("Text", jen.Lit(lt.static)))
		} else {
			items = append(items, field("TextFunc", e.template(lt.computed)))
		}
		items = append(items, roleField(lt.role)...)
		return jen.Op("&").Add(rt("LoadText")).Values(items...)
	case st.loadRecord != nil:
		return e.loadRecord(st.loadRecord)
	case st.loadTranscript != nil:
		lt := st.loadTranscript
		if lt.computed != nil {
			return e.computedTranscript(lt.computed, st.id)
		}
		return jen.Op("&").Qual(TranscriptPath, "Load").Values(field("Path", jen.Lit(lt.static)), filesField())
	case st.threadHistory != nil:
		th := st.threadHistory
		items := []jen.Code{field("Source", jen.Id("opts").Dot("History"))}
		switch th.Limit.State {
		case spec.LimitUnlimited:
			items = append(items, field("Limit", rt("NoLimit")))
		case spec.LimitSet:
			items = append(items, field("Limit", jen.Lit(th.Limit.Value)))
		}
		if !th.IncludeToolCalls.Value {
			items = append(items, field("SkipToolCalls", jen.True()))
		}
		if th.ReplayResultLimit.Pos.IsValid() {
			items = append(items, field("ReplayResultLimit", jen.Lit(int(th.ReplayResultLimit.Value))))
		}
		if th.Step.Value > 1 {
			items = append(items, field("Step", jen.Lit(int(th.Step.Value))))
		}
		return jen.Op("&").Add(rt("ThreadHistory")).Values(items...)
	case st.threadSummary != nil:
		items := []jen.Code{field("Source", jen.Id("opts").Dot("History"))}
		items = append(items, roleField(st.threadSummary.Role)...)
		return jen.Op("&").Add(rt("ThreadSummary")).Values(items...)
	case st.use != nil:
		return e.use(st.use)
	}
	return jen.Nil()
}

// loadRecord renders runtime.NewLoadRecord(role, loader, serializer).
func (e *emitter) loadRecord(lr *loadRecordPlan) jen.Code {
	var loader jen.Code
	if lr.method {
		loader = e.at(lr.loader.pos, jen.Id("env").Dot(lr.loader.name))
	} else {
		loader = e.at(lr.loader.pos, qual(lr.loader))
	}
	var ser jen.Code = jen.Nil()
	if s := lr.serializer; s != nil {
		ser = e.serializer(s)
	}
	return rt("NewLoadRecord").Call(roleCode(lr.role), loader, ser)
}

// serializer renders a serializer func value. A method becomes a func
// literal over the record type, behind a directive at the method's
// position: when the loader's record type changes (Account → *Account),
// the compiler reports the mismatch at the func literal, so at the spec.
func (e *emitter) serializer(s *serializerPlan) jen.Code {
	if s.fn != nil {
		code := e.at(s.fn.pos, qual(*s.fn))
		if s.plain {
			return rt("Method").Call(code)
		}
		return code
	}
	call := e.at(s.pos, jen.Id("r").Dot(s.method).Call())
	ret := jen.Return(call)
	if s.plain {
		ret = jen.Return(call, jen.Nil())
	}
	fn := jen.Func().Params(jen.Id("r").Add(e.typeCode(s.record, false))).Params(jen.String(), jen.Error()).Block(ret)
	return e.at(s.pos, fn)
}

// use renders a use entry as &T{fields}. The directive precedes the &: a
// type that stops implementing runtime.Resolver is reported at the
// operand, which starts there.
func (e *emitter) use(u *usePlan) jen.Code {
	if u == nil {
		return jen.Nil()
	}
	return e.at(u.typ.pos, jen.Op("&").Add(qual(u.typ)).Add(multi("{", "}", e.fields(u.fields))))
}

// fields renders keyed struct fields, each behind directives at its key
// and its value (atKV).
func (e *emitter) fields(fs []fieldPlan) []jen.Code {
	var items []jen.Code
	for _, f := range fs {
		items = append(items, e.atKV(f.keyPos, f.value.pos, jen.Id(f.name), e.value(f.value)))
	}
	return items
}

// value renders a typed `with` value.
func (e *emitter) value(v valuePlan) jen.Code {
	switch v.kind {
	case valueString:
		return jen.Lit(v.str)
	case valueBool:
		return jen.Lit(v.boolean)
	case valueNumber:
		return jen.Op(v.lit)
	case valueDuration:
		return durationCode(time.Duration(v.dur))
	case valueAny:
		return anyLit(v.spec)
	case valueSlice:
		var items []jen.Code
		for _, el := range v.elems {
			items = append(items, e.at(el.pos, e.value(el)))
		}
		return jen.Add(e.typeCode(v.typ, true)).Add(multi("{", "}", items))
	case valueMap:
		var items []jen.Code
		for i, el := range v.elems {
			items = append(items, e.atKV(v.keys[i].Pos, el.pos, jen.Lit(v.keys[i].Value), e.value(el)))
		}
		return jen.Add(e.typeCode(v.typ, true)).Add(multi("{", "}", items))
	case valueStruct:
		return jen.Add(e.typeCode(v.typ, true)).Add(multi("{", "}", e.fields(v.fields)))
	case valueAddr:
		return jen.Op("&").Add(e.value(v.elems[0]))
	case valueNew:
		return jen.New(e.value(v.elems[0]))
	case valueNewConv:
		// A conversion to a named type (Tier("gold")) fails to compile
		// when that type changes; the mark keeps the error at the value.
		inner := e.value(v.elems[0])
		if v.typ.kind == typeNamed {
			inner = e.mark(v.pos).Add(inner)
		}
		return jen.New(jen.Add(e.typeCode(v.typ, false)).Call(inner))
	}
	return jen.Nil()
}

// typeCode renders t, every named type qualified. lead says t directly
// follows a directive at t.pos (render's splitSelectors then places the
// directive before its name itself); every other qualified name gets a
// directive of its own (mark), so that an undefined or changed type is
// reported at the spec.
func (e *emitter) typeCode(t typeExpr, lead bool) jen.Code {
	if !lead && headNamed(t) {
		return e.mark(t.pos).Add(e.typeCode(t, true))
	}
	switch t.kind {
	case typeBasic:
		return jen.Id(t.name)
	case typeNamed:
		code := qual(qualPlan{path: t.path, name: t.name})
		if len(t.args) > 0 {
			var args []jen.Code
			for _, a := range t.args {
				args = append(args, e.typeCode(a, false))
			}
			code = code.Types(args...)
		}
		return code
	case typePointer:
		return jen.Op("*").Add(e.typeCode(*t.elem, true))
	case typeSlice:
		return jen.Index().Add(e.typeCode(*t.elem, false))
	case typeArray:
		return jen.Index(jen.Lit(int(t.length))).Add(e.typeCode(*t.elem, false))
	case typeMap:
		return jen.Map(e.typeCode(*t.key, false)).Add(e.typeCode(*t.elem, false))
	}
	return jen.Any()
}

// headNamed reports whether t is a named type, or pointers to one.
func headNamed(t typeExpr) bool {
	for t.kind == typePointer {
		t = *t.elem
	}
	return t.kind == typeNamed
}

// durationCode writes d readably: a multiple of its largest exact unit
// (4 * time.Hour, 90 * time.Second), or nanoseconds.
func durationCode(d time.Duration) jen.Code {
	units := []struct {
		name string
		d    time.Duration
	}{{"Hour", time.Hour}, {"Minute", time.Minute}, {"Second", time.Second}, {"Millisecond", time.Millisecond}, {"Microsecond", time.Microsecond}}
	for _, u := range units {
		if d != 0 && d%u.d == 0 {
			return jen.Lit(int(d/u.d)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Qual("time", "Duration").Call(jen.Lit(int(d)))
}

// template renders the helper func of a computed template and returns a
// reference to it.
func (e *emitter) template(tp *templatePlan) jen.Code {
	var parts []jen.Code
	for _, p := range tp.parts {
		if p.field == nil {
			parts = append(parts, jen.Lit(p.literal))
			continue
		}
		expr, _, _ := fieldExpr(p.field)
		parts = append(parts, expr)
	}
	var body []jen.Code
	for _, gd := range tp.guards {
		msg := fmt.Sprintf("template at %s: %s", e.posString(tp.pos), nilMessages[gd])
		body = append(body, jen.If(jen.Id("inv").Dot(gd).Op("==").Nil()).Block(
			jen.Return(jen.Lit(""), jen.Qual("errors", "New").Call(jen.Lit(msg))),
		))
	}
	var value jen.Code = jen.Lit("")
	switch {
	case len(parts) > maxConcat:
		// gofmt prints a chain of n + operators in time quadratic in n;
		// a long template joins a slice instead.
		value = jen.Qual("strings", "Join").Call(jen.Index().String().Add(multi("{", "}", parts)), jen.Lit(""))
	case len(parts) > 0:
		s := jen.Add(parts[0])
		for _, p := range parts[1:] {
			s = s.Op("+").Add(p)
		}
		value = s
	}
	body = append(body, jen.Return(value, jen.Nil()))
	doc := fmt.Sprintf("%s renders the template %s (%s).", tp.name, quoteDoc(tp.raw), commentText(e.posString(tp.pos)))
	e.helpers = append(e.helpers, jen.Comment(doc).Line().
		Func().Id(tp.name).Params(jen.Id("inv").Op("*").Add(rt("Invocation"))).Params(jen.String(), jen.Error()).Block(body...))
	return jen.Id(tp.name)
}

// maxConcat is the most parts a template helper concatenates with +.
const maxConcat = 32

// quoteDoc quotes a template for a doc comment, keeping it on one line and
// unable to end the comment.
func quoteDoc(s string) string {
	q := fmt.Sprintf("%q", s)
	return strings.ReplaceAll(q, "*/", `*\/`)
}

// computedTranscript renders a load_transcript entry with a computed path:
// transcript.Load takes a static path only, so a generated helper computes
// the path for each run, refuses one that is absolute or leaves the root
// (runtime.ErrPathEscapes, as a computed load_file path), and delegates.
// id names the helper (supportAgentMessage4Transcript).
func (e *emitter) computedTranscript(path *templatePlan, id string) jen.Code {
	pathFunc := e.template(path)
	name := e.fp.lower + id + "Transcript"
	msgs := jen.Index().Add(ch("Message"))
	fn := jen.Func().Params(
		jen.Id("ctx").Qual("context", "Context"), jen.Id("inv").Op("*").Add(rt("Invocation")), jen.Id("dst").Add(msgs),
	).Params(msgs, jen.Error()).Block(
		jen.List(jen.Id("path"), jen.Err()).Op(":=").Add(pathFunc).Call(jen.Id("inv")),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Id("dst"), jen.Qual("fmt", "Errorf").Call(jen.Lit("load_transcript: compute path: %w"), jen.Err())),
		),
		jen.If(jen.Op("!").Qual("path/filepath", "IsLocal").Call(jen.Id("path"))).Block(
			jen.Return(jen.Id("dst"), jen.Qual("fmt", "Errorf").Call(
				jen.Lit("load_transcript: %w: computed path %q must be relative and stay inside the root"),
				rt("ErrPathEscapes"), jen.Id("path"))),
		),
		jen.Return(jen.Parens(jen.Op("&").Qual(TranscriptPath, "Load").Values(
			field("Path", jen.Id("path")), field("Files", jen.Id("files")),
		)).Dot("Resolve").Call(jen.Id("ctx"), jen.Id("inv"), jen.Id("dst"))),
	)
	doc := name + " returns the load_transcript resolver whose path " + e.fp.lower + id + "Path computes for each run."
	e.helpers = append(e.helpers, jen.Comment(doc).Line().
		Func().Id(name).Params(jen.Id("files").Op("*").Add(rt("Files"))).Add(rt("Resolver")).Block(
		jen.Return(rt("ResolverFunc").Call(fn)),
	))
	return jen.Id(name).Call(jen.Id("opts").Dot("Files"))
}
