// Package gen compiles checked persona specs (package spec) into Go source:
// one file per spec, each holding a typed constructor that builds the
// persona's two resolver chains, tools, model settings and responsibilities
// as values of package runtime. It is the generator behind
// `personagen generate` and `personagen verify`.
//
// Generation has two phases, measured apart: LoadHost loads every Go
// package the specs reference (one golang.org/x/tools/go/packages call),
// and Emit checks each reference against that type information — missing
// packages, functions, methods, types and fields, wrong signatures, `with`
// values of the wrong type — reporting spec positions, then writes the code
// with github.com/dave/jennifer, every host identifier qualified (jen.Qual)
// so imports are never managed by hand.
//
// Generated expressions that come from a spec carry /*line file:L:C*/
// directives naming the spec, each followed by a reset to the generated
// file's own position, so a `go build` error caused by a spec (a host
// loader whose signature changed after generation) names the spec line,
// while every other error names the generated file. File names in
// directives are relative to Options.LineBase (the module root, as the
// CLI sets it), which is where `go build ./...` usually runs.
package gen
