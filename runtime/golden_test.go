package runtime

import (
	"path/filepath"
	"testing"

	"github.com/personagen/personagen/internal/golden"
)

// checkGolden compares got with testdata/name, rewriting the file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}
