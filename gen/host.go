package gen

import (
	"bytes"
	"context"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/personagen/personagen/spec"
)

// hostSet is the type information of the Go packages specs reference, loaded
// once by loadHost and read (never modified) by emit. One hostSet serves any
// number of emit calls, also for specs other than those it was loaded for:
// a reference to a package it lacks is reported as not loaded.
type hostSet struct {
	pkgs map[string]*packages.Package // the packages asked for, by import path
	all  map[string]*packages.Package // those and every package they import, by import path
	fset *token.FileSet               // positions of the loaded declarations (from export data)

	ctxType       types.Type       // context.Context
	invPtr        types.Type       // *runtime.Invocation
	resolver      *types.Interface // runtime.Resolver
	tool          *types.Interface // runtime.Tool
	runtimeErr    string           // why the runtime could not be loaded, if it could not
	transcriptErr string           // why the transcript package (load_transcript's) could not be loaded
	toolErr       string           // why runtime/tool (method and function tools') could not be loaded
	goErr         string           // the go command's error when it listed nothing for some paths, on one line
}

// Len returns how many packages the go command returned for the request
// (host packages plus context and the runtime packages generated code
// imports; a path it listed nothing for is not counted).
func (h *hostSet) Len() int { return len(h.pkgs) }

// hostPackages returns the import paths the specs reference (env, qualified
// loaders, serializer funcs, value and function tools, use resolvers),
// sorted and unique.
func hostPackages(specs []*spec.Persona) []string {
	set := make(map[string]bool)
	add := func(r spec.GoRef) {
		if r.Path != "" {
			set[r.Path] = true
		}
	}
	for _, p := range specs {
		if p.Env != nil {
			add(*p.Env)
		}
		for _, t := range p.Tools {
			add(t.Ref())
		}
		for _, chain := range [][]spec.Resolver{p.MessageResolvers, p.ResponsibilityResolvers} {
			for _, r := range chain {
				switch {
				case r.LoadRecord != nil:
					add(r.LoadRecord.Loader)
					if s := r.LoadRecord.Serialize; s != nil && s.Func != nil {
						add(*s.Func)
					}
				case r.Use != nil:
					add(r.Use.Resolver)
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// loadHost loads, in one go/packages call run from dir (the output
// directory, or its nearest existing parent; "" for the working
// directory), the packages the specs reference together with the runtime
// and context, for their types only (export data, no syntax; the files of
// each package are listed, for the doc comments of tool inputs). A package
// that does not exist or does not type-check is not an error here: emit
// reports it at every spec position that references it, with the go
// command's own error text when it listed nothing (go.mod needs updates,
// a go.sum entry is missing). loadHost fails only when the go command
// cannot be run at all (ctx cancelled, no go binary).
func loadHost(ctx context.Context, dir string, specs []*spec.Persona) (*hostSet, error) {
	return loadPackages(ctx, dir, hostPackages(specs))
}

// loadPackages is loadHost for an explicit list of import paths. Paths no
// package can import (a vendored copy, builtin, C, the standard library's
// internal packages) are not asked for: checkSpecs refuses them by their path.
func loadPackages(ctx context.Context, dir string, paths []string) (*hostSet, error) {
	want := []string{"context", RuntimePath, TranscriptPath, ToolPath}
	for _, p := range paths {
		if pathRefused(p) == "" {
			want = append(want, p)
		}
	}
	slices.Sort(want)
	want = slices.Compact(want)
	// NeedFiles costs nothing more (go list reports the files anyway):
	// the doc comments of tool input types are read from them (docs.go).
	cfg := &packages.Config{
		Context: ctx,
		Mode:    packages.NeedName | packages.NeedTypes | packages.NeedImports | packages.NeedFiles,
		Dir:     existingDir(dir),
		Fset:    token.NewFileSet(),
	}
	pkgs, err := packages.Load(cfg, want...)
	if err != nil {
		return nil, fmt.Errorf("load host packages: %w", err)
	}
	h := &hostSet{pkgs: make(map[string]*packages.Package, len(pkgs)), all: make(map[string]*packages.Package), fset: cfg.Fset}
	for _, p := range pkgs {
		h.pkgs[p.PkgPath] = p
	}
	packages.Visit(pkgs, func(p *packages.Package) bool {
		if _, seen := h.all[p.PkgPath]; seen {
			return false
		}
		h.all[p.PkgPath] = p
		return true
	}, nil)
	var missing []string
	for _, w := range want {
		if _, ok := h.pkgs[w]; !ok {
			missing = append(missing, w)
		}
	}
	if len(missing) > 0 {
		// In export-data mode go/packages drops the go command's stderr
		// when it fails as a whole (go.mod needs updates, a go.sum entry
		// is missing): ask it again to learn why.
		h.goErr = goListError(ctx, cfg.Dir, missing)
	}
	h.initRuntime()
	return h, nil
}

// goListError runs `go list -e` on paths in dir and returns what the go
// command printed on stderr when it failed, folded onto one line without
// its download progress; "" when it succeeded or said nothing.
func goListError(ctx context.Context, dir string, paths []string) string {
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-e", "--"}, paths...)...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "go: downloading ") {
			continue
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, " ")
}

func (h *hostSet) initRuntime() {
	if tp, msg := h.pkg(TranscriptPath); tp == nil {
		h.transcriptErr = msg
	}
	if tp, msg := h.pkg(ToolPath); tp == nil {
		h.toolErr = msg
	}
	rt, msg := h.pkg(RuntimePath)
	if rt == nil {
		h.runtimeErr = msg
		return
	}
	cp, msg := h.pkg("context")
	if cp == nil {
		h.runtimeErr = msg
		return
	}
	iface := func(p *types.Package, name string) *types.Interface {
		if tn, ok := p.Scope().Lookup(name).(*types.TypeName); ok {
			if it, ok := tn.Type().Underlying().(*types.Interface); ok {
				return it
			}
		}
		return nil
	}
	h.resolver = iface(rt, "Resolver")
	h.tool = iface(rt, "Tool")
	if tn, ok := cp.Scope().Lookup("Context").(*types.TypeName); ok {
		h.ctxType = tn.Type()
	}
	if tn, ok := rt.Scope().Lookup("Invocation").(*types.TypeName); ok {
		h.invPtr = types.NewPointer(tn.Type())
	}
	if h.resolver == nil || h.tool == nil || h.ctxType == nil || h.invPtr == nil {
		h.runtimeErr = "package " + RuntimePath + " lacks Resolver, Tool or Invocation (incompatible runtime version?)"
	}
}

// existingDir returns dir or its nearest existing parent ("" stays "").
func existingDir(dir string) string {
	if dir == "" {
		return ""
	}
	d := filepath.Clean(dir)
	for {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// pkg returns the loaded package at path, or nil and why it is unusable.
func (h *hostSet) pkg(path string) (*types.Package, string) {
	if h == nil {
		return nil, "package " + path + " was not loaded (no host type information)"
	}
	p, ok := h.pkgs[path]
	if !ok {
		if h.goErr != "" {
			return nil, "package " + path + " was not loaded: " + h.goErr
		}
		return nil, "package " + path + " was not loaded"
	}
	if len(p.Errors) > 0 || p.Types == nil {
		for _, e := range p.Errors {
			if e.Kind != packages.ListError {
				continue
			}
			switch {
			case strings.Contains(e.Msg, "build constraints exclude all Go files"):
				return nil, "package " + path + " has no Go files in this build: build constraints exclude all of them (a cgo package needs CGO_ENABLED=1 and a C compiler; check its //go:build lines against GOOS, GOARCH and the build tags)"
			case strings.Contains(e.Msg, "no Go files in"):
				return nil, "package " + path + " has no Go files"
			case strings.Contains(e.Msg, "-mod=vendor"):
				return nil, "package " + path + " is not in the module's vendor directory: import it from a package of the module (a blank import will do) and run go mod vendor"
			}
			// The go command's text names proxies and modules and
			// varies with the network; the fact is stable.
			return nil, "cannot find package " + path + " from the output directory's module (go get it, or fix the import path)"
		}
		msg := "package " + path + " does not compile"
		if len(p.Errors) > 0 {
			msg += ": " + firstLine(p.Errors[0].Error())
		}
		return nil, msg
	}
	return p.Types, ""
}

// name returns the name the package at path declares, "" when it is not
// among the loaded packages or their imports.
func (h *hostSet) name(path string) string {
	if h == nil {
		return ""
	}
	if p, ok := h.all[path]; ok {
		return p.Name
	}
	return ""
}

// importsPath reports whether the loaded package at path imports target,
// directly or through other packages, and returns the chain of imports
// ("a imports b, which imports target"); "" when it does not.
func (h *hostSet) importsPath(path, target string) string {
	p, ok := h.all[path]
	if !ok {
		return ""
	}
	seen := make(map[string]bool)
	var chain []string
	var visit func(p *packages.Package) bool
	visit = func(p *packages.Package) bool {
		if seen[p.PkgPath] {
			return false
		}
		seen[p.PkgPath] = true
		for _, ip := range sortedImports(p) {
			if ip.PkgPath == target || visit(ip) {
				chain = append(chain, ip.PkgPath)
				return true
			}
		}
		return false
	}
	if !visit(p) {
		return ""
	}
	slices.Reverse(chain)
	return "through " + strings.Join(append([]string{path}, chain...), " → ")
}

// sortedImports returns p's imports ordered by import path, so that the
// chain importsPath reports is the same on every run.
func sortedImports(p *packages.Package) []*packages.Package {
	paths := make([]string, 0, len(p.Imports))
	for path := range p.Imports {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	out := make([]*packages.Package, len(paths))
	for i, path := range paths {
		out[i] = p.Imports[path]
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// lookup returns the package-level object ref names, or why it cannot.
// When the package has no such exported name, the message suggests the
// closest exported name among those for which like returns true (the kind
// of object the reference wants; nil means any).
func (h *hostSet) lookup(ref spec.GoRef, like func(types.Object) bool) (types.Object, string) {
	p, msg := h.pkg(ref.Path)
	if p == nil {
		return nil, msg
	}
	obj := p.Scope().Lookup(ref.Name)
	if obj == nil || !obj.Exported() {
		var names []string
		for _, n := range p.Scope().Names() {
			if o := p.Scope().Lookup(n); o.Exported() && (like == nil || like(o)) {
				names = append(names, n)
			}
		}
		return nil, fmt.Sprintf("package %s has no exported %s%s", ref.Path, ref.Name, suggest(ref.Name, names))
	}
	return obj, ""
}

// isFunc, isVar and isType are lookup's filters for suggestions.
func isFunc(o types.Object) bool { _, ok := o.(*types.Func); return ok }
func isVar(o types.Object) bool  { _, ok := o.(*types.Var); return ok }
func isType(o types.Object) bool { _, ok := o.(*types.TypeName); return ok }

func objKind(obj types.Object) string {
	switch obj.(type) {
	case *types.Func:
		return "function"
	case *types.Var:
		return "variable"
	case *types.Const:
		return "constant"
	case *types.TypeName:
		return "type"
	}
	return "declaration"
}

// qualifier prints types with package names, not import paths.
func qualifier(p *types.Package) string { return p.Name() }

func typeString(t types.Type) string { return types.TypeString(t, qualifier) }

var errorType = types.Universe.Lookup("error").Type()

// wantLoader is the loader signature, as messages show it.
const wantLoader = "func(context.Context, *runtime.Invocation) ([]T, error)"

// loaderRecord checks sig against wantLoader and returns T.
func (h *hostSet) loaderRecord(sig *types.Signature) (types.Type, bool) {
	if sig.TypeParams().Len() > 0 || sig.Variadic() || sig.Params().Len() != 2 || sig.Results().Len() != 2 {
		return nil, false
	}
	if !types.Identical(sig.Params().At(0).Type(), h.ctxType) || !types.Identical(sig.Params().At(1).Type(), h.invPtr) {
		return nil, false
	}
	sl, ok := sig.Results().At(0).Type().Underlying().(*types.Slice)
	if !ok || !types.Identical(sig.Results().At(1).Type(), errorType) {
		return nil, false
	}
	if _, named := types.Unalias(sig.Results().At(0).Type()).(*types.Named); named {
		return nil, false // a named slice type does not unify with []T
	}
	return sl.Elem(), true
}

// serializerResult classifies a serializer's results: string alone
// (plain=true) or (string, error); ok=false for anything else.
func serializerResult(sig *types.Signature) (plain, ok bool) {
	r := sig.Results()
	isString := func(t types.Type) bool {
		b, ok := types.Unalias(t).(*types.Basic)
		return ok && b.Kind() == types.String
	}
	switch {
	case r.Len() == 1 && isString(r.At(0).Type()):
		return true, true
	case r.Len() == 2 && isString(r.At(0).Type()) && types.Identical(r.At(1).Type(), errorType):
		return false, true
	}
	return false, false
}

func (h *hostSet) implements(t types.Type, iface *types.Interface) bool {
	return types.Implements(t, iface)
}

// missingMethod names what keeps t from implementing iface.
func missingMethod(t types.Type, iface *types.Interface) string {
	m, wrong := types.MissingMethod(t, iface, true)
	if m == nil {
		return ""
	}
	if wrong {
		return fmt.Sprintf("method %s has the wrong signature (want %s)", m.Name(), typeString(m.Type()))
	}
	return fmt.Sprintf("missing method %s", m.Name())
}
