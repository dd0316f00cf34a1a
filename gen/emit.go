package gen

import (
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dave/jennifer/jen"

	"github.com/personagen/personagen/spec"
)

// locals are the identifiers generated constructors declare; an imported
// package whose name equals one of them is imported under another name.
var locals = map[string]bool{"env": true, "opts": true, "p": true, "inv": true, "r": true, "ctx": true, "dst": true, "path": true, "files": true}

// fileGen writes the file of one spec.
type fileGen struct {
	p        *spec.Persona
	host     *Host
	opts     Options
	diags    []spec.Diagnostic
	outPath  string // the output package's import path ("" when unknown)
	specPath string // the spec's path as directives and headers show it
	genPath  string // the generated file's path as reset directives show it
	lower    string // lower-camel Go name, the prefix of helper funcs
	imports  map[string]bool
	helpers  []jen.Code
}

func emitFile(p *spec.Persona, host *Host, opts Options, outPath, name string) (*File, []spec.Diagnostic) {
	g := &fileGen{
		p:        p,
		host:     host,
		opts:     opts,
		outPath:  outPath,
		specPath: displayPath(opts.LineBase, p.File),
		genPath:  displayPath(opts.LineBase, filepath.Join(opts.OutDir, name)),
		imports:  make(map[string]bool),
	}
	goName := p.GoName()
	r, size := utf8.DecodeRuneInString(goName)
	g.lower = string(unicode.ToLower(r)) + goName[size:]
	if host != nil && host.runtimeErr != "" {
		return nil, []spec.Diagnostic{{Pos: p.Pos, Message: host.runtimeErr}}
	}

	f := jen.NewFile(opts.Package)
	f.ImportName(RuntimePath, "runtime")
	f.ImportName(TranscriptPath, "transcript")
	f.HeaderComment(Header)
	f.HeaderComment(SourcePrefix + g.specPath)
	f.Const().Id("_").Op("=").Qual(RuntimePath, "RuntimeVersion1")
	f.Line()
	g.constructor(f)
	for _, h := range g.helpers {
		f.Line()
		f.Add(h)
	}
	if len(g.diags) > 0 {
		return nil, g.diags
	}
	for path := range g.imports {
		if pkg, _ := host.pkg(path); pkg != nil {
			if locals[pkg.Name()] {
				f.ImportAlias(path, pkg.Name()+"pkg")
			} else {
				f.ImportName(path, pkg.Name())
			}
		}
	}
	src, err := render(f, g.genPath, !opts.NoLineDirectives)
	if err != nil {
		return nil, []spec.Diagnostic{{Pos: p.Pos, Message: err.Error()}}
	}
	return &File{Name: name, Source: g.specPath, Content: src}, nil
}

// lookup is Host.lookup (like filters suggestions), except that a reference into the output package
// itself is refused first: generated code cannot import the package it is
// in, and only go build would say so, as an import cycle.
func (g *fileGen) lookup(ref spec.GoRef, like func(types.Object) bool) (types.Object, string) {
	if msg := g.cycle(ref); msg != "" {
		return nil, msg
	}
	return g.host.lookup(ref, like)
}

// lookupType is Host.lookupType with lookup's import cycle check.
func (g *fileGen) lookupType(ref spec.GoRef) (*types.TypeName, string) {
	if msg := g.cycle(ref); msg != "" {
		return nil, msg
	}
	return g.host.lookupType(ref)
}

// cycle says why ref cannot be imported when it names the output package.
func (g *fileGen) cycle(ref spec.GoRef) string {
	if g.outPath == "" || ref.Path != g.outPath {
		return ""
	}
	return fmt.Sprintf("package %s is the output package, and generated code cannot import its own package (import cycle); generate into a separate package, e.g. %s/personas", ref.Path, ref.Path)
}

func (g *fileGen) errf(pos spec.Pos, format string, args ...any) {
	g.diags = append(g.diags, spec.Diagnostic{Pos: pos, Message: fmt.Sprintf(format, args...)})
}

// qual is jen.Qual that also records the import, so its real package name
// can be used.
func (g *fileGen) qual(path, name string) *jen.Statement {
	g.imports[path] = true
	return jen.Qual(path, name)
}

func rt(name string) *jen.Statement { return jen.Qual(RuntimePath, name) }

// at wraps code, which comes from the spec at pos, in a line directive
// naming the spec and a reset marker (see render). The directive's column
// is one less than pos's because gofmt puts a space after the comment.
func (g *fileGen) at(pos spec.Pos, code jen.Code) *jen.Statement {
	if g.opts.NoLineDirectives || !pos.IsValid() || strings.Contains(g.specPath, "*/") || strings.ContainsAny(g.specPath, "\n\r") {
		return jen.Add(code)
	}
	return jen.Comment(g.directive(pos)).Add(code).Comment(resetMarker)
}

// atKV renders `key: value` for an entry written at keyPos whose value is
// at valPos: a directive before the key (unknown-field errors) and one
// before the value (type errors), then one reset marker. The Go key may be
// longer or shorter than the spec's (MaxAge for max_age), so the value
// needs its own directive to keep its column.
func (g *fileGen) atKV(keyPos, valPos spec.Pos, key, value jen.Code) *jen.Statement {
	if g.opts.NoLineDirectives || !keyPos.IsValid() || !valPos.IsValid() || strings.Contains(g.specPath, "*/") || strings.ContainsAny(g.specPath, "\n\r") {
		return jen.Add(key).Op(":").Add(value)
	}
	return jen.Comment(g.directive(keyPos)).Add(key).Op(":").Comment(g.directive(valPos)).Add(value).Comment(resetMarker)
}

// directive is the /*line*/ comment that makes the code after it (and the
// space gofmt puts after the comment) start at pos.
func (g *fileGen) directive(pos spec.Pos) string {
	return fmt.Sprintf("/*line %s:%d:%d*/", g.specPath, pos.Line, max(pos.Col-1, 1))
}

func (g *fileGen) constructor(f *jen.File) {
	p := g.p
	name := "New" + p.GoName()
	var params []jen.Code
	if p.Env != nil {
		g.checkEnv()
		params = append(params, jen.Id("env").Add(g.at(p.Env.Pos, jen.Op("*").Add(g.qual(p.Env.Path, p.Env.Name)))))
	}
	params = append(params, jen.Id("opts").Add(rt("Options")))

	usesHistory := false
	for _, chain := range [][]spec.Resolver{p.MessageResolvers, p.ResponsibilityResolvers} {
		for _, r := range chain {
			if r.ThreadHistory != nil || r.ThreadSummary != nil {
				usesHistory = true
			}
		}
	}

	doc := fmt.Sprintf("%s builds the %s persona from %s.", name, p.Name.Value, g.specPath)
	if d := strings.TrimSpace(p.Description.Value); d != "" {
		doc += "\n" + oneLine(d)
	}
	var errs []string
	if p.Env != nil {
		errs = append(errs, "env is nil")
	}
	if usesHistory {
		errs = append(errs, "opts.History is nil (the spec uses thread_history or thread_summary; the error wraps runtime.ErrNoHistorySource)")
	}
	if len(errs) > 0 {
		doc += "\nIt returns an error when " + strings.Join(errs, ", or when ") + "."
	}
	for _, line := range strings.Split(doc, "\n") {
		// Written with its own "//": jennifer renders a comment that starts
		// with "//" or "/*" verbatim, and a description may start so.
		f.Comment("// " + line)
	}

	var body []jen.Code
	if p.Env != nil {
		body = append(body, jen.If(jen.Id("env").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("errors", "New").Call(jen.Lit(name+": env is nil"))),
		))
	}
	if usesHistory {
		body = append(body, jen.If(jen.Id("opts").Dot("History").Op("==").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(
				jen.Lit(name+": opts.History is nil but the spec uses thread_history or thread_summary: %w"),
				rt("ErrNoHistorySource"))),
		))
	}
	body = append(body, jen.Id("p").Op(":=").Op("&").Add(rt("Persona")).Add(g.personaFields()))
	if len(p.MessageResolvers) > 0 {
		body = append(body, jen.Id("p").Dot("MessageChain").Op("=").Add(g.chain(p.MessageResolvers, "Message")))
	}
	if len(p.ResponsibilityResolvers) > 0 {
		body = append(body, jen.Id("p").Dot("ResponsibilityChain").Op("=").Add(g.chain(p.ResponsibilityResolvers, "Responsibility")))
	}
	body = append(body, jen.Return(jen.Id("p"), jen.Nil()))

	f.Func().Id(name).Params(params...).Params(jen.Op("*").Add(rt("Persona")), jen.Error()).Block(body...)
}

// oneLine folds white space runs (newlines included) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// multi renders items one per line between open and close.
func multi(open, close string, items []jen.Code) *jen.Statement {
	return jen.Custom(jen.Options{Open: open, Close: close, Separator: ",", Multi: true}, items...)
}

func field(name string, value jen.Code) jen.Code {
	return jen.Id(name).Op(":").Add(value)
}

func (g *fileGen) personaFields() jen.Code {
	p := g.p
	items := []jen.Code{field("Name", jen.Lit(p.Name.Value))}
	if p.Description.Value != "" {
		items = append(items, field("Description", jen.Lit(p.Description.Value)))
	}
	if p.Model != nil {
		items = append(items, field("Model", g.model(p.Model)))
	}
	if len(p.Tools) > 0 {
		var tools []jen.Code
		for _, t := range p.Tools {
			g.checkTool(t)
			tools = append(tools, g.at(t.Pos, g.qual(t.Path, t.Name)))
		}
		items = append(items, field("Tools", jen.Index().Add(rt("Tool")).Add(multi("{", "}", tools))))
	}
	if len(p.Responsibilities) > 0 {
		var rs []jen.Code
		for _, r := range p.Responsibilities {
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
	if m := p.Mailbox; m != nil && m.Address.Value != "" {
		fs := []jen.Code{field("Address", jen.Lit(m.Address.Value))}
		if len(m.Aliases) > 0 {
			var aliases []jen.Code
			for _, a := range m.Aliases {
				aliases = append(aliases, jen.Lit(a.Value))
			}
			fs = append(fs, field("Aliases", jen.Index().String().Values(aliases...)))
		}
		if m.Name.Value != "" {
			fs = append(fs, field("Name", jen.Lit(m.Name.Value)))
		}
		items = append(items, field("Mailbox", rt("Mailbox").Add(multi("{", "}", fs))))
	}
	return multi("{", "}", items)
}

func (g *fileGen) model(m *spec.Model) jen.Code {
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
	return rt("ModelSettings").Add(multi("{", "}", items))
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

func (g *fileGen) chain(rs []spec.Resolver, which string) jen.Code {
	var steps []jen.Code
	for i, r := range rs {
		res := g.resolver(r, fmt.Sprintf("%s%d", which, i+1))
		steps = append(steps, rt("Step").Add(multi("{", "}", []jen.Code{
			field("Kind", jen.Lit(string(r.Kind))),
			field("Pos", jen.Lit(g.posString(r.Pos))),
			field("Resolver", res),
		})))
	}
	return rt("NewChain").Add(multi("(", ")", steps))
}

// posString is a spec position as runtime.Step.Pos carries it.
func (g *fileGen) posString(p spec.Pos) string {
	return fmt.Sprintf("%s:%d:%d", g.specPath, p.Line, p.Col)
}

func roleCode(r spec.Role) jen.Code {
	switch r {
	case spec.RoleUser:
		return rt("RoleUser")
	case spec.RoleAssistant:
		return rt("RoleAssistant")
	case spec.RoleTool:
		return rt("RoleTool")
	}
	return rt("RoleSystem")
}

// roleField is the Role field of a resolver literal; nil when the spec
// leaves the role at its default (the zero value means the same).
func roleField(r spec.RoleValue) []jen.Code {
	if !r.Pos.IsValid() {
		return nil
	}
	return []jen.Code{field("Role", roleCode(r.Value))}
}

func (g *fileGen) filesField() jen.Code { return field("Files", jen.Id("opts").Dot("Files")) }

// resolver renders one chain entry as a runtime.Resolver value; id names
// its helper funcs (Message3 for the third reply step).
func (g *fileGen) resolver(r spec.Resolver, id string) jen.Code {
	switch {
	case r.LoadFile != nil:
		lf := r.LoadFile
		var items []jen.Code
		if lf.Path.IsStatic() {
			path := staticText(lf.Path)
			g.checkFile(lf.Path.Raw.Pos, "load_file", path, false)
			items = append(items, field("Path", jen.Lit(path)))
		} else {
			items = append(items, field("PathFunc", g.template(lf.Path, id+"Path")))
		}
		items = append(items, roleField(lf.Role)...)
		items = append(items, g.filesField())
		return jen.Op("&").Add(rt("LoadFile")).Values(items...)
	case r.LoadText != nil:
		lt := r.LoadText
		var items []jen.Code
		if lt.Text.IsStatic() {
			items = append(items, field("Text", jen.Lit(staticText(lt.Text))))
		} else {
			items = append(items, field("TextFunc", g.template(lt.Text, id+"Text")))
		}
		items = append(items, roleField(lt.Role)...)
		return jen.Op("&").Add(rt("LoadText")).Values(items...)
	case r.LoadRecord != nil:
		return g.loadRecord(r.LoadRecord)
	case r.LoadTranscript != nil:
		lt := r.LoadTranscript
		if !lt.Path.IsStatic() {
			return g.computedTranscript(lt.Path, id)
		}
		path := staticText(lt.Path)
		g.checkFile(lt.Path.Raw.Pos, "load_transcript", path, true)
		return jen.Op("&").Qual(TranscriptPath, "Load").Values(field("Path", jen.Lit(path)), g.filesField())
	case r.ThreadHistory != nil:
		th := r.ThreadHistory
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
		return jen.Op("&").Add(rt("ThreadHistory")).Values(items...)
	case r.ThreadSummary != nil:
		items := []jen.Code{field("Source", jen.Id("opts").Dot("History"))}
		items = append(items, roleField(r.ThreadSummary.Role)...)
		return jen.Op("&").Add(rt("ThreadSummary")).Values(items...)
	case r.Use != nil:
		return g.use(r.Use)
	}
	g.errf(r.Pos, "resolver kind %q is not supported by this generator", r.Kind)
	return jen.Nil()
}

// staticText is the text of a template without field references.
func staticText(t spec.Template) string {
	var b strings.Builder
	for _, p := range t.Parts {
		b.WriteString(p.Literal)
	}
	return b.String()
}

// checkFile reports a static relative path that leaves the root (the
// runtime refuses it: runtime.Files reads only filepath.IsLocal paths), a
// static path that does not exist under the root (or, absolute, at all),
// and for transcripts one that does not parse.
func (g *fileGen) checkFile(pos spec.Pos, kind, path string, transcript bool) {
	full := path
	absolute := filepath.IsAbs(path) || strings.HasPrefix(path, "/")
	if !absolute && !filepath.IsLocal(path) {
		g.errf(pos, "%s: path %q leaves the prompt root; the runtime refuses it (keep the file under -root, or give an absolute path)", kind, path)
		return
	}
	if !absolute {
		root := g.opts.Root
		if root == "" {
			root = "."
		}
		full = filepath.Join(root, filepath.FromSlash(path))
	}
	data, err := os.ReadFile(full)
	if err != nil {
		if os.IsNotExist(err) {
			g.errf(pos, "%s: file %q does not exist (looked for %s)", kind, path, filepath.ToSlash(full))
		} else {
			g.errf(pos, "%s: cannot read %q: %v", kind, path, err)
		}
		return
	}
	if transcript {
		if line, msg, bad := parseTranscript(string(data)); bad {
			g.errf(pos, "load_transcript: %s:%d: %s", filepath.ToSlash(full), line, msg)
		}
	}
}

func (g *fileGen) checkEnv() {
	env := g.p.Env
	tn, msg := g.lookupType(*env)
	if tn == nil {
		g.errf(env.Pos, "env: %s", msg)
	}
}

func (g *fileGen) envType() types.Type {
	if g.p.Env == nil {
		return nil
	}
	tn, _ := g.lookupType(*g.p.Env)
	if tn == nil {
		return nil
	}
	return tn.Type()
}

func (g *fileGen) checkTool(t spec.GoRef) {
	obj, msg := g.lookup(t, isVar)
	if obj == nil {
		g.errf(t.Pos, "tool: %s", msg)
		return
	}
	v, ok := obj.(*types.Var)
	if !ok {
		g.errf(t.Pos, "tool: %s is a %s; want a package-level variable implementing runtime.Tool", t, objKind(obj))
		return
	}
	if !g.host.implements(v.Type(), g.host.tool) {
		g.errf(t.Pos, "tool: %s (type %s) does not implement runtime.Tool: %s", t, typeString(v.Type()), missingMethod(v.Type(), g.host.tool))
	}
}

func (g *fileGen) loadRecord(lr *spec.LoadRecord) jen.Code {
	var loader jen.Code
	var sig *types.Signature
	ref := lr.Loader
	if ref.IsQualified() {
		loader = g.at(ref.Pos, g.qual(ref.Path, ref.Name))
		obj, msg := g.lookup(ref, isFunc)
		switch fn, ok := obj.(*types.Func); {
		case obj == nil:
			g.errf(ref.Pos, "load_record loader: %s", msg)
		case !ok:
			g.errf(ref.Pos, "load_record loader: %s is a %s, not a function", ref, objKind(obj))
		default:
			sig = fn.Type().(*types.Signature)
		}
	} else {
		loader = g.at(ref.Pos, jen.Id("env").Dot(ref.Name))
		if env := g.envType(); env != nil {
			obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(env), false, env.(*types.Named).Obj().Pkg(), ref.Name)
			fn, ok := obj.(*types.Func)
			if !ok {
				g.errf(ref.Pos, "load_record loader: %s has no method %s%s", typeString(env), ref.Name, suggest(ref.Name, methodNames(env)))
			} else {
				sig = fn.Type().(*types.Signature)
			}
		}
	}
	var record types.Type
	if sig != nil {
		var ok bool
		if record, ok = g.host.loaderRecord(sig); !ok {
			g.errf(ref.Pos, "load_record loader: %s has type %s; want %s", ref, typeString(sigNoRecv(sig)), wantLoader)
		}
	}
	var ser jen.Code = jen.Nil()
	if s := lr.Serialize; s != nil && record != nil {
		ser = g.serializer(s, record)
	}
	return rt("NewLoadRecord").Call(roleCode(lr.Role.Value), loader, ser)
}

func sigNoRecv(s *types.Signature) *types.Signature {
	return types.NewSignatureType(nil, nil, nil, s.Params(), s.Results(), s.Variadic())
}

func (g *fileGen) serializer(s *spec.Serializer, record types.Type) jen.Code {
	if s.Func != nil {
		ref := *s.Func
		obj, msg := g.lookup(ref, isFunc)
		fn, ok := obj.(*types.Func)
		switch {
		case obj == nil:
			g.errf(ref.Pos, "serialize func: %s", msg)
			return jen.Nil()
		case !ok:
			g.errf(ref.Pos, "serialize func: %s is a %s, not a function", ref, objKind(obj))
			return jen.Nil()
		}
		sig := fn.Type().(*types.Signature)
		plain, okRes := serializerResult(sig)
		if sig.TypeParams().Len() > 0 || sig.Params().Len() != 1 || sig.Variadic() || !okRes || !types.Identical(sig.Params().At(0).Type(), record) {
			g.errf(ref.Pos, "serialize func: %s has type %s; want func(%s) (string, error) or func(%s) string", ref, typeString(sig), typeString(record), typeString(record))
			return jen.Nil()
		}
		code := g.at(ref.Pos, g.qual(ref.Path, ref.Name))
		if plain {
			return rt("Method").Call(code)
		}
		return code
	}
	m := *s.Method
	var pkg *types.Package
	if n, ok := types.Unalias(deref(record)).(*types.Named); ok {
		pkg = n.Obj().Pkg()
	}
	obj, _, _ := types.LookupFieldOrMethod(record, true, pkg, m.Name)
	fn, ok := obj.(*types.Func)
	if !ok {
		g.errf(m.Pos, "serialize method: record type %s has no method %s%s", typeString(record), m.Name, suggest(m.Name, methodNames(record)))
		return jen.Nil()
	}
	sig := fn.Type().(*types.Signature)
	plain, okRes := serializerResult(sig)
	if sig.Params().Len() != 0 || !okRes {
		g.errf(m.Pos, "serialize method: %s.%s has type %s; want func() string or func() (string, error)", typeString(record), m.Name, typeString(sigNoRecv(sig)))
		return jen.Nil()
	}
	tc := g.typeCode(record, m.Pos)
	call := g.at(m.Pos, jen.Id("r").Dot(m.Name).Call())
	ret := jen.Return(call)
	if plain {
		ret = jen.Return(call, jen.Nil())
	}
	return jen.Func().Params(jen.Id("r").Add(tc)).Params(jen.String(), jen.Error()).Block(ret)
}

func deref(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}

// methodNames lists the exported methods callable on an addressable t.
func methodNames(t types.Type) []string {
	var names []string
	ms := types.NewMethodSet(types.NewPointer(deref(t)))
	for i := range ms.Len() {
		if n := ms.At(i).Obj().Name(); exported(n) {
			names = append(names, n)
		}
	}
	return names
}

func exported(name string) bool { r, _ := utf8.DecodeRuneInString(name); return unicode.IsUpper(r) }

func (g *fileGen) use(u *spec.Use) jen.Code {
	ref := u.Resolver
	tn, msg := g.lookupType(ref)
	if tn == nil {
		g.errf(ref.Pos, "use: %s", msg)
		return jen.Nil()
	}
	st, ok := tn.Type().Underlying().(*types.Struct)
	if !ok {
		g.errf(ref.Pos, "use: %s is not a struct type (underlying type %s)", ref, typeString(tn.Type().Underlying()))
		return jen.Nil()
	}
	if !g.host.implements(types.NewPointer(tn.Type()), g.host.resolver) {
		g.errf(ref.Pos, "use: *%s does not implement runtime.Resolver: %s", ref.Name, missingMethod(types.NewPointer(tn.Type()), g.host.resolver))
		return jen.Nil()
	}
	var items []jen.Code
	if u.With != nil {
		items = g.structFields(u.With.Map, tn.Type(), st, "with")
	}
	// The directive precedes the &: a type that stops implementing
	// runtime.Resolver is reported at the operand, which starts there.
	return g.at(ref.Pos, jen.Op("&").Add(g.qual(ref.Path, ref.Name)).Add(multi("{", "}", items)))
}
