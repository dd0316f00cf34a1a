// Package generation benchmarks the generator on 1,000 specs against `go build` of what it
// emits. The generator's own benchmark in gen/ was not there when this was written (see
// the README's Benchmarks section); these use the public gen and spec APIs only, with the example host package
// (github.com/personagen/personagen/examples/host) as the Go code the specs reference.
package generation
