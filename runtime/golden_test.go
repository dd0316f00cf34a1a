package runtime

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// The -update flag rewrites golden files. Another test file of this package may register it
// too, so it is registered only when absent (package-level flag vars run before init).
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files in testdata/")
	}
}

// goldenUpdate reports whether -update was given.
func goldenUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// checkGolden compares got with testdata/name, rewriting the file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if goldenUpdate() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (run with -update to accept):\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
