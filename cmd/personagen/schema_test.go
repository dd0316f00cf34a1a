package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/personagen/personagen/schema"
)

func TestSchemaPrintsAndWritesTheEmbeddedSchema(t *testing.T) {
	code, stdout, _ := runCLI(t, "schema")
	if code != exitOK || !bytes.Equal(stdout, schema.JSON()) {
		t.Fatalf("schema: exit %d, %d bytes; want the embedded schema", code, len(stdout))
	}
	out := filepath.Join(t.TempDir(), "persona.schema.json")
	if code, _, stderr := runCLI(t, "schema", "-o", out); code != exitOK {
		t.Fatalf("schema -o: exit %d, %s", code, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || !bytes.Equal(b, schema.JSON()) {
		t.Errorf("written schema differs (%v)", err)
	}
	if code, _, _ := runCLI(t, "schema", "-o", filepath.Join(out, "no", "dir")); code != exitFail {
		t.Errorf("schema -o into a missing directory: exit %d, want 1", code)
	}
}

func TestVersionReportsModuleVersionOrDevel(t *testing.T) {
	tests := []struct {
		name string
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{"no build info", nil, false, "devel"},
		{"tagged module", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true, "v1.2.3"},
		{"working tree without vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "devel"},
		{"working tree with vcs", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "true"}}}, true, "devel 0123456789ab+dirty"},
	}
	for _, tt := range tests {
		if got := version(tt.info, tt.ok); got != tt.want {
			t.Errorf("%s: version = %q, want %q", tt.name, got, tt.want)
		}
	}
	code, stdout, _ := runCLI(t, "version")
	if code != exitOK || !bytes.HasPrefix(stdout, []byte("personagen ")) {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
}
