package gen

import (
	"errors"
	"fmt"
	"go/types"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/personagen/personagen/spec"
)

// checkSpecs checks every spec against host and the file system and returns
// the resolved plan that Render writes. It never stops at the first
// problem: all positioned problems of all specs come back in one *Error
// (and no plan). It checks, at the spec position of each reference, that
// every host package can be imported by the output package (it exists,
// compiles, is not a main package, not another tree's internal package,
// not the output package itself nor a package importing it), that every
// declaration it names exists and has the kind and Go type the generated
// code needs, that every `with` value fits its field, that every method
// and function tool has the tool signature, an input struct a JSON Schema
// can be derived from (inputschema.go) and a description, that static prompt
// and transcript paths exist (and parse), and that no generated file or
// identifier replaces a hand-written one in Options.OutDir. It returns an
// *OptionsError for an invalid Options.Package, when OutDir holds
// hand-written files of another package, or when the package could not
// build (see checkOutputPackage).
func checkSpecs(specs []*spec.Persona, host *hostSet, opts Options) (*genPlan, error) {
	if err := opts.checkPackage(); err != nil {
		return nil, err
	}
	out := readOutputDir(opts.OutDir, opts.Package)
	if err := checkOutputPackage(opts, specs, out); err != nil {
		return nil, err
	}
	diags := spec.CheckCollisions(specs)
	outPath, _, _ := ImportPath(opts.OutDir)
	plan := &genPlan{opts: opts}
	names := make(map[string]*spec.Persona)
	docs := newDocs(host)
	for _, p := range specs {
		name := p.GoFileName()
		if _, dup := names[name]; dup {
			continue // spec.CheckCollisions reported it
		}
		names[name] = p
		c := newChecker(p, host, opts, outPath, name)
		c.docs = docs
		fp := c.file()
		if name == PersonasFile {
			c.errf(p.Name.Pos, "the persona %q would generate %s, the file that holds the package's Personas function; rename the persona", p.Name.Value, PersonasFile)
		}
		c.checkOutput(out, fp)
		diags = append(diags, c.diags...)
		if len(c.diags) == 0 {
			plan.files = append(plan.files, fp)
		}
	}
	if len(specs) > 0 {
		at := specs[0].Name.Pos
		if out.handWritten[PersonasFile] {
			diags = append(diags, spec.Diagnostic{Pos: at, Message: fmt.Sprintf("the generated file %s (the package's Personas function) would replace the hand-written file %s; rename that file",
				PersonasFile, filepath.ToSlash(filepath.Join(opts.OutDir, PersonasFile)))})
		}
		if decl, ok := out.decls["Personas"]; ok {
			diags = append(diags, spec.Diagnostic{Pos: at, Message: fmt.Sprintf("generated code declares Personas (in %s), which %s already declares in the output package; rename that declaration", PersonasFile, decl)})
		}
	}
	if len(diags) > 0 {
		return nil, &Error{Diagnostics: spec.SortDiagnostics(diags)}
	}
	return plan, nil
}

// checkOutputPackage refuses an output package the generated files
// cannot build in: package main without a hand-written func main (go
// build fails to link), or a package name other than that of a personagen
// file this run leaves in place (its spec exists but is not among specs),
// which would give the directory two packages.
func checkOutputPackage(opts Options, specs []*spec.Persona, out outputDir) error {
	if _, hasMain := out.decls["main"]; opts.Package == "main" && !hasMain {
		return &OptionsError{Field: "Package", err: ErrBadOptions, Message: "package main needs a func main, and no hand-written file of the output directory declares one (go build would fail to link); generate into a package of its own (personas) that your program imports, or write main.go first"}
	}
	produced := map[string]bool{PersonasFile: true}
	for _, p := range specs {
		produced[p.GoFileName()] = true
	}
	for _, l := range leftovers(opts.OutDir, produced) {
		if !l.SpecExists {
			continue
		}
		if pkg := packageClause(filepath.Join(opts.OutDir, l.Name)); pkg != "" && pkg != opts.Package {
			dir := opts.OutDir
			if dir == "" {
				dir = "."
			}
			return &OptionsError{Field: "Package", err: ErrBadOptions, Message: fmt.Sprintf(
				"output directory %s holds %s, generated from %s in package %s, which this run leaves in place (that spec is not among its specs); one directory holds one package: use package name %s, or generate all of the directory's specs together under the new name",
				filepath.ToSlash(dir), l.Name, l.Source, pkg, pkg)}
		}
	}
	return nil
}

// checker checks one spec and builds its filePlan.
type checker struct {
	p       *spec.Persona
	host    *hostSet
	opts    Options
	outPath string // the output package's import path ("" when unknown)
	diags   []spec.Diagnostic
	fp      *filePlan
	envType types.Type // the env type when it resolved, else nil
	docs    *docs      // doc comments of host declarations, shared by the checkers of one checkSpecs call
}

func newChecker(p *spec.Persona, host *hostSet, opts Options, outPath, name string) *checker {
	goName := p.GoName()
	r, size := utf8.DecodeRuneInString(goName)
	fp := &filePlan{
		name:        name,
		pkg:         opts.Package,
		specPath:    displayPath(opts.LineBase, p.File),
		genPath:     displayPath(opts.LineBase, filepath.Join(opts.OutDir, name)),
		pos:         p.Pos,
		persona:     p.Name.Value,
		goName:      goName,
		lower:       string(unicode.ToLower(r)) + goName[size:],
		description: p.Description.Value,
		imports:     make(map[string]string),
		model:       p.Model,
	}
	return &checker{p: p, host: host, opts: opts, outPath: outPath, fp: fp}
}

func (c *checker) errf(pos spec.Pos, format string, args ...any) {
	c.diags = append(c.diags, spec.Diagnostic{Pos: pos, Message: fmt.Sprintf(format, args...)})
}

// file checks the whole spec.
func (c *checker) file() *filePlan {
	p, fp := c.p, c.fp
	if c.host != nil && c.host.runtimeErr != "" {
		c.errf(p.Pos, "%s", c.host.runtimeErr)
		return fp
	}
	if p.Env != nil {
		c.checkEnv(*p.Env)
	}
	fp.tools = c.tools(p.Tools)
	fp.responsibilities = p.Responsibilities
	fp.mailbox = p.Mailbox
	fp.cache = p.Cache
	fp.messageChain = c.chain(p.MessageResolvers, "Message")
	fp.responsibility = c.chain(p.ResponsibilityResolvers, "Responsibility")
	return fp
}

// qual records ref's package as an import of the file and returns it as
// a planned qualified name.
func (c *checker) qual(ref spec.GoRef) qualPlan {
	c.importPkg(ref.Path)
	return qualPlan{path: ref.Path, name: ref.Name, pos: ref.Pos}
}

// importPkg records that the file imports the host package at path, under
// the name the package declares.
func (c *checker) importPkg(path string) {
	if _, ok := c.fp.imports[path]; ok {
		return
	}
	if name := c.host.name(path); name != "" {
		c.fp.imports[path] = name
	}
}

// importable says why generated code in the output package cannot import
// the package at path, or "" when it can. It is checked before looking
// into the package, so a reference into the output package is refused as
// an import cycle (only go build would say so otherwise), and one into a
// package generated code may never import (another tree's internal
// package, a vendored copy, package main, builtin) is refused at the
// reference instead of failing go build in the generated file.
func (c *checker) importable(path string) string {
	if c.outPath != "" && path == c.outPath {
		return fmt.Sprintf("package %s is the output package, and generated code cannot import its own package (import cycle); generate into a separate package, e.g. %s/personas", path, path)
	}
	if msg := pathRefused(path); msg != "" {
		return msg
	}
	if parent, ok := internalParent(path); ok && parent != "" && c.outPath != "" && !within(c.outPath, parent) {
		return fmt.Sprintf("package %s is internal to %s, and the output package %s, outside that tree, cannot import it (Go's internal rule); name a declaration of a package outside internal/, or generate into a package below %s", path, parent, c.outPath, parent)
	}
	if c.host == nil {
		_, msg := c.host.pkg(path)
		return msg
	}
	name := c.host.name(path)
	if _, root := c.host.pkgs[path]; root || name == "" {
		if pkg, msg := c.host.pkg(path); pkg == nil {
			return msg
		}
	}
	if name == "main" {
		return fmt.Sprintf("package %s is a program (package main) and cannot be imported; move what the spec names into a package that is not main", path)
	}
	if c.outPath != "" {
		if via := c.host.importsPath(path, c.outPath); via != "" {
			return fmt.Sprintf("package %s imports the output package %s (%s), so generated code importing it would be an import cycle; generate into a package that %s does not import", path, c.outPath, via, path)
		}
	}
	return ""
}

// pathRefused says why no package can import the package at path, judged
// by the path alone (so LoadPackages does not ask the go command for it),
// or "".
func pathRefused(path string) string {
	if parent, ok := internalParent(path); ok && parent == "" {
		return fmt.Sprintf("package %s is internal to the Go standard library and cannot be imported", path)
	}
	if i := elementIndex(path, "vendor"); i >= 0 {
		return fmt.Sprintf("package path %s names a vendored copy; write the package's own import path (%s), which the go command resolves to the vendored copy itself", path, strings.Join(strings.Split(path, "/")[i+1:], "/"))
	}
	switch path {
	case "builtin":
		return "package builtin only documents Go's predeclared identifiers and cannot be imported"
	case "C":
		return "C is cgo's pseudo-package: its declarations exist only in the file that imports it, so generated code cannot name them; name a Go declaration that wraps it"
	}
	return ""
}

// internalParent returns the path of the tree an internal package is
// private to: what precedes its last "internal" element ("" for the
// standard library's internal/…). ok is false for a path without one.
func internalParent(path string) (string, bool) {
	i := elementIndex(path, "internal")
	if i < 0 {
		return "", false
	}
	return strings.Join(strings.Split(path, "/")[:i], "/"), true
}

// elementIndex returns the index of the last slash-separated element of
// path equal to el, or -1.
func elementIndex(path, el string) int {
	els := strings.Split(path, "/")
	for i := len(els) - 1; i >= 0; i-- {
		if els[i] == el {
			return i
		}
	}
	return -1
}

// within reports whether the package path p lies in the tree rooted at
// root (root "" is the standard library's root, which no module path lies
// in).
func within(p, root string) bool {
	if root == "" || p == "" {
		return false
	}
	return p == root || strings.HasPrefix(p, root+"/")
}

// lookup returns the package-level object ref names, or why it cannot be
// used: the package cannot be imported (importable), or it has no such
// exported name (with a suggestion among the names like accepts).
func (c *checker) lookup(ref spec.GoRef, like func(types.Object) bool) (types.Object, string) {
	if msg := c.importable(ref.Path); msg != "" {
		return nil, msg
	}
	return c.host.lookup(ref, like)
}

// lookupType is lookup for a type: it must be a type, and not generic
// (neither a generic defined type nor a generic alias).
func (c *checker) lookupType(ref spec.GoRef) (*types.TypeName, string) {
	obj, msg := c.lookup(ref, isType)
	if obj == nil {
		return nil, msg
	}
	tn, ok := obj.(*types.TypeName)
	if !ok {
		return nil, fmt.Sprintf("%s is a %s, not a type", ref, objKind(obj))
	}
	if tps := typeParams(tn.Type()); tps != nil && tps.Len() > 0 {
		what := "generic type"
		if tn.IsAlias() {
			what = "generic type alias"
		}
		return nil, fmt.Sprintf("%s is a %s (type parameters %s); name a non-generic type, or declare one that instantiates it (type X = %s[…])", ref, what, typeParamList(tps), ref.Name)
	}
	return tn, ""
}

// typeParams returns the type parameters of a defined type or alias.
func typeParams(t types.Type) *types.TypeParamList {
	switch t := t.(type) {
	case *types.Named:
		return t.TypeParams()
	case *types.Alias:
		return t.TypeParams()
	}
	return nil
}

// typeParamList renders type parameters as Go declares them: [T any, K comparable].
func typeParamList(tps *types.TypeParamList) string {
	var parts []string
	for i := range tps.Len() {
		tp := tps.At(i)
		parts = append(parts, tp.Obj().Name()+" "+typeString(tp.Constraint()))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// checkEnv checks the env type: a type the constructor can take a pointer
// to and call loader methods on. An interface or pointer type is refused
// here, at env, rather than at every loader that cannot be found on it.
func (c *checker) checkEnv(env spec.GoRef) {
	tn, msg := c.lookupType(env)
	if tn == nil {
		c.errf(env.Pos, "env: %s", msg)
		return
	}
	t := tn.Type()
	switch u := types.Unalias(t).Underlying().(type) {
	case *types.Interface:
		c.errf(env.Pos, "env: %s is an interface type; the constructor takes *%s, and a pointer to an interface has none of its methods: name the concrete type that implements it", env, env.Name)
		return
	case *types.Pointer:
		c.errf(env.Pos, "env: %s is a pointer type (%s); the constructor takes a pointer itself: name the type it points to", env, typeString(u))
		return
	}
	c.envType = t
	q := c.qual(env)
	q.goType = typeString(t)
	c.fp.env = &envPlan{typ: q}
}

func (c *checker) chain(rs []spec.Resolver, which string) []stepPlan {
	var steps []stepPlan
	for i, r := range rs {
		st := stepPlan{kind: r.Kind, pos: r.Pos, id: fmt.Sprintf("%s%d", which, i+1), changes: r.Changes()}
		c.resolver(r, &st)
		steps = append(steps, st)
		if r.ThreadHistory != nil || r.ThreadSummary != nil {
			c.fp.usesHistory = true
		}
	}
	return steps
}

// resolver checks one chain entry and fills its kind's plan in st.
func (c *checker) resolver(r spec.Resolver, st *stepPlan) {
	switch {
	case r.LoadFile != nil:
		lf := r.LoadFile
		st.loadFile = &pathPlan{role: lf.Role}
		if lf.Path.IsStatic() {
			st.loadFile.static = staticText(lf.Path)
			c.checkFile(lf.Path.Raw.Pos, "load_file", st.loadFile.static, false)
		} else {
			st.loadFile.computed = c.template(lf.Path, st.id+"Path")
		}
	case r.LoadText != nil:
		lt := r.LoadText
		st.loadText = &textPlan{role: lt.Role}
		if lt.Text.IsStatic() {
			st.loadText.static = staticText(lt.Text)
		} else {
			st.loadText.computed = c.template(lt.Text, st.id+"Text")
		}
	case r.LoadRecord != nil:
		st.loadRecord = c.loadRecord(r.LoadRecord)
	case r.LoadTranscript != nil:
		lt := r.LoadTranscript
		if c.host != nil && c.host.transcriptErr != "" {
			c.errf(r.Pos, "load_transcript: the generated code imports %s, and it cannot be loaded: %s", TranscriptPath, c.host.transcriptErr)
		}
		st.loadTranscript = &pathPlan{}
		if lt.Path.IsStatic() {
			st.loadTranscript.static = staticText(lt.Path)
			c.checkFile(lt.Path.Raw.Pos, "load_transcript", st.loadTranscript.static, true)
		} else {
			st.loadTranscript.computed = c.template(lt.Path, st.id+"Path")
		}
	case r.ThreadHistory != nil:
		st.threadHistory = r.ThreadHistory
	case r.ThreadSummary != nil:
		st.threadSummary = r.ThreadSummary
	case r.Use != nil:
		st.use = c.use(r.Use)
	default:
		c.errf(r.Pos, "resolver kind %q is not supported by this generator", r.Kind)
	}
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
func (c *checker) checkFile(pos spec.Pos, kind, path string, transcript bool) {
	full := path
	absolute := filepath.IsAbs(path) || strings.HasPrefix(path, "/")
	if !absolute && !filepath.IsLocal(path) {
		c.errf(pos, "%s: path %q leaves the prompt root; the runtime refuses it (keep the file under -root, or give an absolute path)", kind, path)
		return
	}
	if !absolute {
		root := c.opts.Root
		if root == "" {
			root = "."
		}
		full = filepath.Join(root, filepath.FromSlash(path))
	}
	var data []byte
	var err error
	if transcript {
		data, err = readRegular(full)
	} else {
		err = statRegular(full) // the runtime reads it; existence is what counts here
	}
	var pe *fs.PathError
	switch {
	case err == nil:
	case os.IsNotExist(err):
		c.errf(pos, "%s: file %q does not exist (looked for %s)", kind, path, filepath.ToSlash(full))
		return
	case errors.As(err, &pe):
		c.errf(pos, "%s: cannot read %q: %v", kind, path, err)
		return
	default:
		c.errf(pos, "%s: %s %v; name a prompt file", kind, filepath.ToSlash(full), err)
		return
	}
	if transcript {
		if line, msg, bad := parseTranscript(string(data)); bad {
			c.errf(pos, "load_transcript: %s:%d: %s", filepath.ToSlash(full), line, msg)
		}
	}
}

// loadRecord checks a load_record entry: its loader's signature gives the
// record type T, against which the serializer is checked.
func (c *checker) loadRecord(lr *spec.LoadRecord) *loadRecordPlan {
	lp := &loadRecordPlan{role: lr.Role.Value}
	var sig *types.Signature
	ref := lr.Loader
	if ref.IsQualified() {
		lp.loader = qualPlan{path: ref.Path, name: ref.Name, pos: ref.Pos}
		obj, msg := c.lookup(ref, isFunc)
		switch fn, ok := obj.(*types.Func); {
		case obj == nil:
			c.errf(ref.Pos, "load_record loader: %s", msg)
		case !ok:
			c.errf(ref.Pos, "load_record loader: %s is a %s, not a function", ref, objKind(obj))
		default:
			sig = fn.Signature()
			c.importPkg(ref.Path)
		}
	} else {
		lp.method = true
		lp.loader = qualPlan{name: ref.Name, pos: ref.Pos}
		if c.envType != nil {
			if m := c.envMethod(ref, "load_record loader", "a loader"); m != nil {
				sig = m.Signature()
			}
		}
	}
	if sig == nil {
		return lp
	}
	if tps := sig.TypeParams(); tps.Len() > 0 {
		c.errf(ref.Pos, "load_record loader: %s is a generic function (type parameters %s); generated code cannot infer its type arguments from the call: name a non-generic function, e.g. one that calls %s[YourRecord]", ref, typeParamList(tps), ref.Name)
		return lp
	}
	record, ok := c.host.loaderRecord(sig)
	if !ok {
		hint := ""
		if r := sig.Results(); r.Len() == 2 {
			if n, named := types.Unalias(r.At(0).Type()).(*types.Named); named {
				if sl, ok := n.Underlying().(*types.Slice); ok {
					hint = fmt.Sprintf(" (%s is a named slice type, which does not match []T: declare the result as []%s)", typeString(r.At(0).Type()), typeString(sl.Elem()))
				}
			}
		}
		c.errf(ref.Pos, "load_record loader: %s has type %s; want %s%s", ref, typeString(sigNoRecv(sig)), wantLoader, hint)
		return lp
	}
	lp.loader.goType = typeString(sigNoRecv(sig))
	lp.record = typeString(record)
	if s := lr.Serialize; s != nil {
		lp.serializer = c.serializer(s, record)
	}
	return lp
}

// envMethod returns the method ref names on *env, or reports why there is
// none; what starts the messages (load_record loader) and role names the
// method's role in them (a loader).
func (c *checker) envMethod(ref spec.GoRef, what, role string) *types.Func {
	env := c.envType
	obj, index, _ := types.LookupFieldOrMethod(types.NewPointer(env), false, nil, ref.Name)
	switch obj := obj.(type) {
	case *types.Func:
		return obj
	case *types.Var:
		c.errf(ref.Pos, "%s: %s.%s is a field, not a method; %s is a method of the env type", what, typeString(env), ref.Name, role)
	default:
		if obj == nil && index != nil {
			c.errf(ref.Pos, "%s: %s has more than one method %s at the same depth of embedding (an ambiguous selector); declare %s on %s itself", what, typeString(env), ref.Name, ref.Name, typeString(env))
		} else {
			alias := ""
			if a, ok := env.(*types.Alias); ok {
				alias = fmt.Sprintf(" (%s is an alias of %s)", typeString(a), typeString(types.Unalias(a)))
			}
			c.errf(ref.Pos, "%s: %s has no method %s%s%s", what, typeString(env), ref.Name, alias, suggest(ref.Name, methodNames(env)))
		}
	}
	return nil
}

func sigNoRecv(s *types.Signature) *types.Signature {
	return types.NewSignatureType(nil, nil, nil, s.Params(), s.Results(), s.Variadic())
}

// serializer checks a serialize entry against the record type.
func (c *checker) serializer(s *spec.Serializer, record types.Type) *serializerPlan {
	if s.Func != nil {
		ref := *s.Func
		obj, msg := c.lookup(ref, isFunc)
		fn, ok := obj.(*types.Func)
		switch {
		case obj == nil:
			c.errf(ref.Pos, "serialize func: %s", msg)
			return nil
		case !ok:
			c.errf(ref.Pos, "serialize func: %s is a %s, not a function", ref, objKind(obj))
			return nil
		}
		sig := fn.Signature()
		if tps := sig.TypeParams(); tps.Len() > 0 {
			c.errf(ref.Pos, "serialize func: %s is a generic function (type parameters %s); name a non-generic func(%s) (string, error) or func(%s) string", ref, typeParamList(tps), typeString(record), typeString(record))
			return nil
		}
		plain, okRes := serializerResult(sig)
		if sig.Params().Len() != 1 || sig.Variadic() || !okRes || !types.Identical(sig.Params().At(0).Type(), record) {
			c.errf(ref.Pos, "serialize func: %s has type %s; want func(%s) (string, error) or func(%s) string", ref, typeString(sig), typeString(record), typeString(record))
			return nil
		}
		q := c.qual(ref)
		q.goType = typeString(sig)
		return &serializerPlan{fn: &q, plain: plain}
	}
	m := *s.Method
	obj, index, _ := types.LookupFieldOrMethod(record, true, nil, m.Name)
	fn, ok := obj.(*types.Func)
	if !ok {
		if obj == nil && index != nil {
			c.errf(m.Pos, "serialize method: record type %s has more than one method %s at the same depth of embedding (an ambiguous selector)", typeString(record), m.Name)
		} else {
			c.errf(m.Pos, "serialize method: record type %s has no method %s%s", typeString(record), m.Name, suggest(m.Name, methodNames(record)))
		}
		return nil
	}
	sig := fn.Signature()
	plain, okRes := serializerResult(sig)
	if sig.Params().Len() != 0 || !okRes {
		c.errf(m.Pos, "serialize method: %s.%s has type %s; want func() string or func() (string, error)", typeString(record), m.Name, typeString(sigNoRecv(sig)))
		return nil
	}
	rec, ok := c.typeExpr(record, m.Pos, "serialize method: the serializer takes the record type, so ")
	if !ok {
		return nil
	}
	return &serializerPlan{method: m.Name, pos: m.Pos, record: rec, plain: plain}
}

func deref(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
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

// use checks a use entry: a struct type whose pointer implements
// runtime.Resolver, and its `with` fields.
func (c *checker) use(u *spec.Use) *usePlan {
	ref := u.Resolver
	tn, msg := c.lookupType(ref)
	if tn == nil {
		c.errf(ref.Pos, "use: %s", msg)
		return nil
	}
	st, ok := tn.Type().Underlying().(*types.Struct)
	if !ok {
		c.errf(ref.Pos, "use: %s is not a struct type (underlying type %s)", ref, typeString(tn.Type().Underlying()))
		return nil
	}
	if !c.host.implements(types.NewPointer(tn.Type()), c.host.resolver) {
		c.errf(ref.Pos, "use: *%s does not implement runtime.Resolver: %s", ref.Name, missingMethod(types.NewPointer(tn.Type()), c.host.resolver))
		return nil
	}
	up := &usePlan{typ: c.qual(ref)}
	up.typ.goType = typeString(tn.Type())
	if u.With != nil {
		up.fields = c.structFields(u.With.Map, tn.Type(), st, "with")
	}
	return up
}

// outputDir is what checkSpecs needs to know of the output directory: the
// hand-written Go files in it (by base name) and the package-level names
// they declare (name → position).
type outputDir struct {
	handWritten map[string]bool
	decls       map[string]string
}

// checkOutput reports a generated file that would replace a hand-written
// file of the output directory, and generated top-level identifiers that
// a hand-written file of the output package already declares.
func (c *checker) checkOutput(out outputDir, fp *filePlan) {
	fp.reserved = make(map[string]bool, len(out.decls))
	for name := range out.decls {
		fp.reserved[name] = true
	}
	if out.handWritten[fp.name] {
		c.errf(c.p.Name.Pos, "the generated file %s would replace the hand-written file %s (it does not start with %q); rename the persona or that file", fp.name, filepath.ToSlash(filepath.Join(c.opts.OutDir, fp.name)), Header)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(out.handWritten)) {
		if strings.EqualFold(name, fp.name) {
			c.errf(c.p.Name.Pos, "the generated file %s differs only in case from the hand-written file %s: on a case-insensitive file system it would replace it, and the go command refuses a module holding both; rename the persona or that file", fp.name, filepath.ToSlash(filepath.Join(c.opts.OutDir, name)))
			return
		}
	}
	for _, name := range fp.declared() {
		if at, ok := out.decls[name]; ok {
			c.errf(c.p.Name.Pos, "generated code declares %s, which %s already declares in the output package; rename the persona or that declaration", name, at)
		}
	}
}
