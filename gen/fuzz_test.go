package gen

import (
	"bytes"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"testing"

	"github.com/personagen/personagen/spec"
)

// FuzzGenerate holds, for any spec text: loading and generating never
// panic; a spec that generates yields Go source that parses, the same
// bytes on a second run, and a header naming its source; a spec that does
// not generate yields positioned diagnostics in this spec's file. The
// fixture host is loaded once; seeds are the golden cases' and the
// examples' specs, so plain `go test` runs them all.
func FuzzGenerate(f *testing.F) {
	if testing.Short() {
		f.Skip("loads a scratch module")
	}
	for _, glob := range []string{"testdata/*/*.persona.yaml", "../examples/*.persona.yaml"} {
		paths, _ := filepath.Glob(glob)
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	f.Add([]byte("version: 1\nname: x\ndescription: \"/* */ // \\u2028\"\n"))
	f.Add([]byte("version: 1\nname: a-b\nmessage_resolvers:\n  - load_text: {text: \"{{ .Inbound.To }}*/\"}\n"))

	mod := scratchModule(f)
	root := filepath.Join(mod, "root")
	for _, name := range []string{"prompts/system.md", "prompts/few-shot.chat", "prompts/a.md"} {
		writeFile(f, filepath.Join(root, name), []byte("user: hello\n"))
	}
	host, err := LoadPackages(f.Context(), mod, []string{fixtureHost, "example.com/fixture/nope"})
	if err != nil {
		f.Fatal(err)
	}
	name := filepath.Join(mod, "fuzz.persona.yaml")
	opts := Options{Package: "out", OutDir: filepath.Join(mod, "out"), Root: root, LineBase: mod}

	f.Fuzz(func(t *testing.T, data []byte) {
		p, diags := spec.Load(name, data)
		if len(diags) > 0 {
			return
		}
		files, err := Emit([]*spec.Persona{p}, host, opts)
		if err != nil {
			var ge *Error
			if !errors.As(err, &ge) || len(ge.Diagnostics) == 0 {
				t.Fatalf("Emit error is not positioned diagnostics: %v", err)
			}
			for _, d := range ge.Diagnostics {
				if d.Pos.File != name || d.Pos.Line < 1 {
					t.Fatalf("diagnostic outside the spec: %s", d)
				}
			}
			return
		}
		if len(files) != 1 {
			t.Fatalf("%d files for one spec", len(files))
		}
		src := files[0].Content
		if _, err := parser.ParseFile(token.NewFileSet(), files[0].Name, src, parser.ParseComments); err != nil {
			t.Fatalf("generated code does not parse: %v\n%s", err, src)
		}
		if !bytes.HasPrefix(src, []byte(Header+"\n"+SourcePrefix+"fuzz.persona.yaml\n")) {
			t.Fatalf("header missing:\n%s", src)
		}
		again, err := Emit([]*spec.Persona{p}, host, opts)
		if err != nil || !bytes.Equal(again[0].Content, src) {
			t.Fatalf("second run differs (err %v)", err)
		}
	})
}
