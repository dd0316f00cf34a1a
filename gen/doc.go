// Package gen compiles checked persona specs (package spec) into Go source:
// one file per spec, each holding a typed constructor that builds the
// persona's two resolver chains, tools, model settings and responsibilities
// as values of package runtime. It is the generator behind
// `personagen generate`, `verify` and `validate -check`.
//
// What a spec compiles to and what is checked against the host's code are docs/generator.md in
// the repository.
//
// Start from Generate, the one entry point: specs and Options in, one File per spec
// out, plus PersonasFile, whose Personas function builds every persona of
// the run for a host (Write puts them into the output directory; Leftovers and FileSource
// recognise personagen's files there). Options.CheckOnly stops after
// checking, for `personagen validate -check`. Inside, generation has three
// phases, timed apart in Stats:
//
//   - loading (host.go) loads every Go package the specs reference with one
//     golang.org/x/tools/go/packages call, types from export data;
//   - checking (check.go, with.go) resolves each reference against that
//     type information — missing packages, functions, methods, types and
//     fields, wrong signatures, packages the output package cannot import,
//     `with` values of the wrong type, missing prompt files, hand-written
//     files in the output directory — reporting spec positions, and builds
//     a plan (plan.go): every host reference with its Go type, every `with`
//     value typed, file names and imports decided. For a method or function
//     tool (tools.go) it derives the JSON Schema of the input struct
//     (inputschema.go), its descriptions from doc comments that docs.go
//     reads from the host packages' files;
//   - rendering (emit.go) writes the code from the plan alone with
//     github.com/dave/jennifer, every host identifier qualified (jen.Qual)
//     so imports are never managed by hand. It looks nothing up.
//
// Generated expressions that come from a spec carry /*line file:L:C*/
// directives naming the spec, each followed by a reset to the generated
// file's own position, so a `go build` error caused by a spec (a host
// loader whose signature changed after generation) names the spec line,
// while every other error names the generated file. File names in
// directives are relative to Options.LineBase (the module root, as the
// CLI sets it), which is where `go build ./...` usually runs.
package gen
