package gen

import (
	"bytes"
	"errors"
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
// of testdata/host as package example.com/fixture/host (with its
// subpackages), and personagen's go.sum. It also requires module
// example.com/other, a copy of testdata/other replaced into ./other: a
// second module whose internal packages the fixture module cannot import. GOFLAGS=-mod=mod lets the go command complete the scratch
// module's requirements from personagen's go.mod.
//
// The module graph of the scratch module is larger than the build list of
// personagen's own packages: dependencies whose go.mod predates module
// graph pruning (html2text requires goconvey) contribute go.mod files that
// building personagen never reads. GOPROXY and GOSUMDB are therefore left
// as the environment sets them: on a fresh machine the go command fetches
// those go.mod files (and checks them against the copied go.sum); with a
// warm module cache it finds everything locally and does not touch the
// network (TestScratchModuleOfflineWhenWarm pins that).
func scratchModule(t testing.TB) string {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	gomod := "module " + fixtureModule + "\n\ngo 1.26\n\nrequire (\n\tgithub.com/personagen/personagen v0.0.0\n\texample.com/other v0.0.0\n)\n\nreplace github.com/personagen/personagen => " + filepath.ToSlash(root) + "\n\nreplace example.com/other => ./other\n"
	writeFile(t, filepath.Join(dir, "go.mod"), []byte(gomod))
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "go.sum"), sum)
	copyDir(t, filepath.Join(root, "gen", "testdata", "host"), filepath.Join(dir, "host"), nil)
	copyDir(t, filepath.Join(root, "gen", "testdata", "other"), filepath.Join(dir, "other"), nil)
	t.Setenv("GOFLAGS", "-mod=mod")
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

// TestScratchModuleOfflineWhenWarm pins that scratchModule leaves the
// module proxy to the environment, and that once the module cache holds
// what the scratch module needs (after one build with the environment's
// proxy, which downloads on a fresh machine) the same build succeeds with
// GOPROXY=off: the tests never need the network with a warm cache.
func TestScratchModuleOfflineWhenWarm(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a scratch module")
	}
	before, had := os.LookupEnv("GOPROXY")
	mod := scratchModule(t)
	if after, has := os.LookupEnv("GOPROXY"); after != before || has != had {
		t.Fatalf("scratchModule changed GOPROXY from %q to %q", before, after)
	}
	if out, err := goCmd(t, mod, "build", "./host"); err != nil {
		t.Fatalf("go build with the environment's proxy:\n%s", out)
	}
	t.Setenv("GOPROXY", "off")
	if out, err := goCmd(t, mod, "build", "./host"); err != nil {
		t.Fatalf("go build with a warm cache and GOPROXY=off:\n%s", out)
	}
}

// TestOutputModuleOutsideTheWorkspace pins that Options.Validate refuses an
// output directory whose module a governing go.work does not use (the go
// command cannot build there, and every package would seem missing), and
// accepts it when go.work uses it or GOWORK=off.
func TestOutputModuleOutsideTheWorkspace(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "a", "go.mod"), []byte("module example.com/a\n"))
	writeFile(t, filepath.Join(root, "b", "go.mod"), []byte("module example.com/b\n"))
	opts := Options{Package: "personas", OutDir: filepath.Join(root, "a", "personas")}
	t.Setenv("GOWORK", "")

	writeFile(t, filepath.Join(root, "go.work"), []byte("go 1.26\n\nuse ./b\n"))
	err := opts.Validate()
	var oe *OptionsError
	if !errors.As(err, &oe) || oe.Field != "OutDir" || !strings.Contains(err.Error(), "go work use ./a") {
		t.Errorf("module outside the workspace: %v", err)
	}
	t.Setenv("GOWORK", "off")
	if err := opts.Validate(); err != nil {
		t.Errorf("GOWORK=off: %v", err)
	}
	t.Setenv("GOWORK", "")
	writeFile(t, filepath.Join(root, "go.work"), []byte("go 1.26\n\nuse (\n\t./a\n\t./b\n)\n"))
	if err := opts.Validate(); err != nil {
		t.Errorf("module in the workspace: %v", err)
	}
}

// TestOutputDirectoryThatIsAFile pins that -out naming a file is refused
// by Options.Validate, before any package is loaded.
func TestOutputDirectoryThatIsAFile(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "go.mod"), []byte("module example.com/m\n"))
	writeFile(t, filepath.Join(root, "agents.go"), []byte("package m\n"))
	err := Options{Package: "agents", OutDir: filepath.Join(root, "agents.go")}.Validate()
	if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "is a file, not a directory") {
		t.Errorf("Validate with a file as OutDir: %v", err)
	}
}
