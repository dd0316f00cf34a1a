package gen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/personagen/personagen/spec"
)

// benchSpecs writes n random valid specs (the property test's writer, a
// fixed seed) into a scratch module and loads them; it returns the module
// directory and the specs.
func benchSpecs(b *testing.B, n int) (string, []*spec.Persona) {
	b.Helper()
	mod := scratchModule(b)
	for _, f := range []string{"prompts/a.md", "prompts/b.md", "prompts/empty.md"} {
		writeFile(b, filepath.Join(mod, "root", f), []byte("Prompt.\n"))
	}
	writeFile(b, filepath.Join(mod, "root", "prompts", "few.chat"), []byte("user: hi\n\nassistant: hello\n"))
	w := &specWriter{r: rand.New(rand.NewPCG(7, 7))}
	for i := range n {
		writeFile(b, filepath.Join(mod, "specs", fmt.Sprintf("s%04d.persona.yaml", i)), []byte(w.spec(i)))
	}
	b.Chdir(mod)
	specs, diags := spec.LoadPaths([]string{"specs"})
	if len(diags) > 0 {
		b.Fatalf("invalid bench specs: %v", diags[0])
	}
	return mod, specs
}

// BenchmarkGenerate1000 measures emission alone — checks against the
// loaded types, jennifer, gofmt, line directives — for 1,000 random specs
// (ns/op is per 1,000 specs). Package loading is measured apart by
// BenchmarkLoadPackages; compare both with `go build` of the output.
func BenchmarkGenerate1000(b *testing.B) {
	mod, specs := benchSpecs(b, 1000)
	host, err := loadHost(context.Background(), mod, specs)
	if err != nil {
		b.Fatal(err)
	}
	opts := Options{Package: "out", OutDir: "out", Root: "root", LineBase: "."}
	b.ReportAllocs()
	for b.Loop() {
		files, err := emit(specs, host, opts)
		if err != nil || len(files) != len(specs)+1 { // the specs' files and PersonasFile
			b.Fatalf("Emit: %d files, %v", len(files), err)
		}
	}
}

// BenchmarkLoadPackages measures LoadHost for the same 1,000 specs: one
// go/packages call (the go command and export data of the host packages
// and the runtime), the part of generation the go command dominates.
func BenchmarkLoadPackages(b *testing.B) {
	mod, specs := benchSpecs(b, 1000)
	for b.Loop() {
		if _, err := loadHost(context.Background(), mod, specs); err != nil {
			b.Fatal(err)
		}
	}
}
