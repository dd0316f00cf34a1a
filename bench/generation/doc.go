// Package generation benchmarks the generator on 1,000 specs against `go build` of what it
// emits, side by side in one run. gen's own BenchmarkGenerate1000 times emission alone; this
// package adds `go build` of the same output as the yardstick, using the public gen and spec
// APIs only, with the example host package (github.com/personagen/personagen/examples/host) as
// the Go code the specs reference.
package generation
