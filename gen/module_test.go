package gen

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureModule is the module path of the scratch modules tests build in;
// the fixture host package is fixtureModule + "/host".
const fixtureModule = "example.com/fixture"

// repoRoot is the personagen module root (the parent of gen/).
func repoRoot(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(wd)
}

// scratchModule creates a module in a temp dir that requires personagen
// through a replace directive pointing at this checkout, holding a copy
// of testdata/host as package example.com/fixture/host. GOFLAGS=-mod=mod
// lets the go command complete its requirements from personagen's go.mod.
func scratchModule(t testing.TB) string {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	gomod := "module " + fixtureModule + "\n\ngo 1.26\n\nrequire github.com/personagen/personagen v0.0.0\n\nreplace github.com/personagen/personagen => " + filepath.ToSlash(root) + "\n"
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), sum)
	copyDir(t, filepath.Join(root, "gen", "testdata", "host"), filepath.Join(dir, "host"), nil)
	t.Setenv("GOFLAGS", "-mod=mod")
	// Everything the scratch module needs is in the module cache once this
	// module's own dependencies are; offline, a missing package fails fast.
	t.Setenv("GOPROXY", "off")
	return dir
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies the tree at src to dst, skipping entries for which skip
// (given the slash path relative to src) returns true.
func copyDir(t testing.TB, src, dst string, skip func(rel string) bool) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel != "." && skip != nil && skip(filepath.ToSlash(rel)) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// goCmd runs the go command in dir and returns its combined output.
func goCmd(t testing.TB, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	return strings.TrimSpace(out.String()), err
}
