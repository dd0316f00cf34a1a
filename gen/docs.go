package gen

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"strings"
)

// docs reads the doc comments of host declarations: the descriptions of
// method and function tools and of the fields and types of their inputs.
// Host packages are loaded from export data, which keeps each
// declaration's file and line but no comments, so docs parses the file a
// declaration's position names (once per checkSpecs call, comments only kept) and
// finds the declaration there by line and name. A file it cannot find or
// parse gives no docs, never an error: descriptions are optional.
type docs struct {
	host  *hostSet
	files map[string]map[docKey]string // by file name; nil map: unreadable
}

// docKey identifies a declaration in one file: its kind ('t' a type, 'f'
// a function or method, 'v' a struct field), the line of its name, and the
// name (an embedded field's is its type's name).
type docKey struct {
	kind byte
	line int
	name string
}

// kindOf is the docKey kind of obj.
func kindOf(obj types.Object) byte {
	switch obj.(type) {
	case *types.TypeName:
		return 't'
	case *types.Func:
		return 'f'
	}
	return 'v'
}

func newDocs(h *hostSet) *docs { return &docs{host: h, files: make(map[string]map[docKey]string)} }

// of returns the doc comment of obj as plain text (see docText), or "".
// For a struct field it is the comment above the field, else the comment
// at the end of its line; for a type the comment of its spec, or of its
// declaration when that declares only it.
func (d *docs) of(obj types.Object) string {
	if d == nil || d.host == nil || d.host.fset == nil || !obj.Pos().IsValid() {
		return ""
	}
	pos := d.host.fset.Position(obj.Pos())
	file := d.file(obj.Pkg(), pos.Filename)
	if file == "" {
		return ""
	}
	index, ok := d.files[file]
	if !ok {
		index = indexFile(file)
		d.files[file] = index
	}
	return index[docKey{kindOf(obj), pos.Line, obj.Name()}]
}

// file returns the path of the source file a position of package pkg
// names: the name itself when it exists (the go command records absolute
// paths), else the file of that base name among the package's files (a
// build with -trimpath records paths relative to the module).
func (d *docs) file(pkg *types.Package, name string) string {
	if name == "" {
		return ""
	}
	if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
		return name
	}
	if pkg == nil {
		return ""
	}
	p, ok := d.host.all[pkg.Path()]
	if !ok {
		return ""
	}
	base := filepath.Base(filepath.FromSlash(name))
	for _, f := range p.GoFiles {
		if filepath.Base(f) == base {
			return f
		}
	}
	return ""
}

// indexFile parses a Go file for its comments and returns the doc text of
// every type, function, method and struct field it declares, by docKey.
func indexFile(name string) map[docKey]string {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	index := make(map[docKey]string)
	add := func(kind byte, id *ast.Ident, groups ...*ast.CommentGroup) {
		if id == nil {
			return
		}
		for _, g := range groups {
			if text := docText(g); text != "" {
				index[docKey{kind, fset.Position(id.Pos()).Line, id.Name}] = text
				return
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GenDecl:
			for _, s := range n.Specs {
				if ts, ok := s.(*ast.TypeSpec); ok {
					var decl *ast.CommentGroup
					if !n.Lparen.IsValid() {
						decl = n.Doc
					}
					add('t', ts.Name, ts.Doc, decl)
				}
			}
		case *ast.FuncDecl:
			add('f', n.Name, n.Doc)
		case *ast.StructType:
			for _, fd := range n.Fields.List {
				if len(fd.Names) == 0 {
					add('v', embeddedName(fd.Type), fd.Doc, fd.Comment)
				}
				for _, id := range fd.Names {
					add('v', id, fd.Doc, fd.Comment)
				}
			}
		}
		return true
	})
	return index
}

// embeddedName is the identifier naming an embedded field's type: T in T,
// *T, pkg.T, T[X] and *pkg.T[X, Y].
func embeddedName(e ast.Expr) *ast.Ident {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.SelectorExpr:
			return x.Sel
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x
		default:
			return nil
		}
	}
}

// docText renders a doc comment as the plain text a model reads, the way
// go doc prints it as text: comment markers and directives (//go:…)
// removed, each paragraph on one line, paragraphs separated by a blank
// line, doc links ([Env], [time.Time]) by their names, lists and code
// blocks indented; surrounding white space trimmed.
func docText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	text := g.Text()
	if strings.TrimSpace(text) == "" {
		return ""
	}
	p := comment.Parser{
		LookupPackage: func(name string) (string, bool) { return name, true },
		LookupSym:     func(recv, name string) bool { return true },
	}
	pr := comment.Printer{TextWidth: -1}
	return strings.TrimSpace(string(pr.Text(p.Parse(text))))
}
