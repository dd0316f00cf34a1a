//go:build unix

package spec

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestWalkRefusesANamedPipeWithoutBlocking pins that a FIFO named like a
// spec inside a walked directory is a diagnostic and never opened for a
// blocking read (the walk would hang forever waiting for a writer).
func TestWalkRefusesANamedPipeWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "pipe.persona.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("pipe.persona.yaml", filepath.Join(dir, "link.persona.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok.persona.yaml"), []byte("version: 1\nname: ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, diags := LoadPaths([]string{dir})
	if len(ps) != 1 || len(diags) != 1 || diags[0].Pos.File != filepath.Join(dir, "link.persona.yaml") ||
		!strings.Contains(diags[0].Message, "a named pipe, not a regular file") {
		t.Errorf("LoadPaths = %d personas, %v; want ok and one named-pipe diagnostic, at the link (the first name of the one file)", len(ps), diags)
	}
	// The race the walk cannot see: a pipe swapped in after the walk.
	if _, err := readSpec(fifo, true); err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("readSpec(fifo, regularOnly) = %v", err)
	}
}
