package gen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"testing"
)

func TestDocTextIsWhatGoDocPrints(t *testing.T) {
	src := `package p

// LookupOrder looks up an order
// by its number, see [Env] and [time.Time].
//
// It only reads.
//
//go:noinline
func LookupOrder() {}

/*
Block comment
on two lines.
*/
func Block() {}

//go:generate echo
func DirectiveOnly() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"LookupOrder":   "LookupOrder looks up an order by its number, see Env and time.Time.\n\nIt only reads.",
		"Block":         "Block comment on two lines.",
		"DirectiveOnly": "",
	}
	for _, d := range f.Decls {
		fd := d.(*ast.FuncDecl)
		if got := docText(fd.Doc); got != want[fd.Name.Name] {
			t.Errorf("docText of %s = %q, want %q", fd.Name.Name, got, want[fd.Name.Name])
		}
	}
}

// TestDocsUnderTrimpath pins that doc comments are found when the go
// command records module-relative file names (GOFLAGS=-trimpath): by the
// base name among the package's files.
func TestDocsUnderTrimpath(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a scratch module")
	}
	mod := scratchModule(t)
	t.Setenv("GOFLAGS", "-mod=mod -trimpath")
	host, err := loadPackages(t.Context(), mod, []string{fixtureHost})
	if err != nil {
		t.Fatal(err)
	}
	pkg, msg := host.pkg(fixtureHost)
	if pkg == nil {
		t.Fatal(msg)
	}
	q := pkg.Scope().Lookup("OrderQuery")
	field := q.Type().Underlying().(*types.Struct).Field(0)
	if pos := host.fset.Position(field.Pos()); pos.Filename == "" {
		t.Fatal("no position recorded")
	}
	t.Logf("position recorded: %s", host.fset.Position(field.Pos()))
	d := newDocs(host)
	if got, want := d.of(field), "Number is the order or invoice number, e.g. INV-2024-0117."; got != want {
		t.Errorf("doc of OrderQuery.Number = %q, want %q (position %s)", got, want, host.fset.Position(field.Pos()))
	}
	if got, want := d.of(q), "OrderQuery is the input of lookup_order."; got != want {
		t.Errorf("doc of OrderQuery = %q, want %q", got, want)
	}
}
