package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/ instead of comparing with them")

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// Check compares got with the file at path. Under -update it writes got to path instead,
// creating the directories it needs. A missing file or a difference fails t with a message that
// names the file and shows both texts.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test with -update to create it): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run go test with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
