package gen

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenCases lists the case directories of testdata (all but the
// fixture host package and module).
func goldenCases(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var cases []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "host" && e.Name() != "other" && e.Name() != "fuzz" {
			cases = append(cases, e.Name())
		}
	}
	return cases
}

// runCase loads and emits one case the way `personagen generate` does,
// from the scratch module's root: specs under <case>/, output package
// "out" in <case>/out, static paths checked against <case>/. It returns
// the files and the diagnostics as the CLI prints them (one per line), and
// sets *planOut (when not nil) to the plan's listing.
func runCase(t *testing.T, name string, host *hostSet, planOut *string) ([]File, string) {
	t.Helper()
	specs, diags := spec.LoadPaths([]string{name})
	var stderr strings.Builder
	for _, d := range diags {
		stderr.WriteString(d.String() + "\n")
	}
	if len(diags) > 0 {
		return nil, stderr.String()
	}
	plan, err := checkSpecs(specs, host, Options{Package: "out", OutDir: filepath.Join(name, "out"), Root: name, LineBase: "."})
	var files []File
	if err == nil {
		files, err = plan.renderFiles()
	}
	var ge *Error
	switch {
	case errors.As(err, &ge):
		for _, d := range ge.Diagnostics {
			stderr.WriteString(d.String() + "\n")
		}
	case err != nil:
		t.Fatalf("Check or Render: %v", err)
	}
	if plan != nil && planOut != nil {
		*planOut = plan.String()
	}
	return files, stderr.String()
}

// casesModule returns a scratch module holding every golden case of testdata/ in a directory
// of its own, without its golden files (out/, stderr.txt, README.md, handwritten/), the absolute
// path of testdata/, and the cases' names. It skips the test under -short.
func casesModule(t *testing.T) (mod, testdata string, cases []string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	mod = scratchModule(t)
	cases = goldenCases(t)
	for _, c := range cases {
		copyDir(t, filepath.Join(testdata, c), filepath.Join(mod, c), func(rel string) bool {
			return rel == "out" || rel == "stderr.txt" || rel == "README.md" || rel == "handwritten"
		})
	}
	return mod, testdata, cases
}

// TestGoldenCases runs every case in testdata/<case>/: the specs there
// generate exactly testdata/<case>/out/*.go and print exactly
// testdata/<case>/stderr.txt (absent means nothing), twice with identical
// bytes, from a plan listed exactly as testdata/<case>/plan.txt; then all generated packages are built together with `go build`
// against the fixture host, in one scratch module. Go files of a case
// (outside out/) are packages of that module (a case's own host code);
// testdata/<case>/handwritten/ holds hand-written files of the output
// package, copied into <case>/out before generating. -update rewrites the
// golden files.
func TestGoldenCases(t *testing.T) {
	mod, testdata, cases := casesModule(t)
	for _, c := range cases {
		if _, err := os.Stat(filepath.Join(testdata, c, "handwritten")); err == nil {
			copyDir(t, filepath.Join(testdata, c, "handwritten"), filepath.Join(mod, c, "out"), nil)
		}
	}
	t.Chdir(mod)

	var all []*spec.Persona
	for _, c := range cases {
		specs, _ := spec.LoadPaths([]string{c})
		all = append(all, specs...)
	}
	host, err := loadHost(context.Background(), mod, all)
	if err != nil {
		t.Fatal(err)
	}

	built := 0
	for _, c := range cases {
		t.Run(c, func(t *testing.T) {
			var plan string
			files, stderr := runCase(t, c, host, &plan)
			again, stderr2 := runCase(t, c, host, nil)
			if stderr != stderr2 || !sameFiles(files, again) {
				t.Errorf("two runs differ")
			}
			golden := filepath.Join(testdata, c)
			checkGolden(t, filepath.Join(golden, "stderr.txt"), []byte(stderr), true)
			checkGolden(t, filepath.Join(golden, "plan.txt"), []byte(plan), true)
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
				checkGolden(t, filepath.Join(golden, "out", f.Name), f.Content, false)
				writeFile(t, filepath.Join(mod, c, "out", f.Name), f.Content)
			}
			if len(files) > 0 {
				built++
			}
			old, _ := filepath.Glob(filepath.Join(golden, "out", "*.go"))
			for _, o := range old {
				if !slices.Contains(names, filepath.Base(o)) {
					if *update {
						os.Remove(o)
					} else {
						t.Errorf("golden file %s is no longer generated", o)
					}
				}
			}
		})
	}
	if built == 0 {
		t.Fatal("no case generated code")
	}
	if out, err := goCmd(t, mod, "build", "./..."); err != nil {
		t.Fatalf("go build of the generated packages failed:\n%s", out)
	}
	if out, err := goCmd(t, mod, "vet", "./..."); err != nil {
		t.Fatalf("go vet of the generated packages failed:\n%s", out)
	}
}

func sameFiles(a, b []File) bool {
	return slices.EqualFunc(a, b, func(x, y File) bool {
		return x.Name == y.Name && x.Source == y.Source && bytes.Equal(x.Content, y.Content)
	})
}

// checkGolden compares got with the file at path, or rewrites it with
// -update. With optional, a missing file stands for empty content (and
// -update removes it when got is empty).
func checkGolden(t *testing.T, path string, got []byte, optional bool) {
	t.Helper()
	if *update {
		if optional && len(got) == 0 {
			os.Remove(path)
			return
		}
		writeFile(t, path, got)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil && !(optional && os.IsNotExist(err)) {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generated output (run with -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, got, want)
	}
}
