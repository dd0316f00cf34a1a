package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/personagen/personagen/internal/golden"
)

// tree lists every path below dir with its size, to tell whether a
// command wrote anything there.
func tree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %d %s", p, info.Size(), info.ModTime()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestValidateCheckCorpus runs `personagen validate -check` on every case
// under testdata/check/<case>/ with the arguments in its args.txt, in all
// three formats, and compares the output with the case's stderr.txt,
// stdout.json and stdout.github goldens. Every case has problems (exit 1,
// at least one diagnostic) and -check writes nothing: the case's tree is
// unchanged afterwards, and its -out directory is not created.
func TestValidateCheckCorpus(t *testing.T) {
	t.Chdir(filepath.Join(repoRoot(t), "cmd", "personagen"))
	dirs, err := filepath.Glob("testdata/check/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "args.txt"))
			if err != nil {
				t.Fatal(err)
			}
			args := append([]string{"validate", "-check"}, strings.Fields(string(b))...)
			before := tree(t, dir)

			code, stdout, stderr := runCLI(t, args...)
			if code != exitFail || len(stdout) != 0 || len(stderr) == 0 {
				t.Errorf("text: exit %d, stdout %q, stderr %q; want exit 1, diagnostics on stderr only", code, stdout, stderr)
			}
			checkGolden(t, filepath.Join(dir, "stderr.txt"), stderr)

			code, stdout, stderr = runCLI(t, append([]string{"validate", "-format", "json"}, args[1:]...)...)
			var diags []jsonDiagnostic
			if err := json.Unmarshal(stdout, &diags); err != nil || code != exitFail || len(diags) == 0 || len(stderr) != 0 {
				t.Errorf("json: exit %d, %d diagnostics, decode error %v, stderr %q", code, len(diags), err, stderr)
			}
			checkGolden(t, filepath.Join(dir, "stdout.json"), stdout)

			code, stdout, _ = runCLI(t, append([]string{"validate", "-format", "github"}, args[1:]...)...)
			if code != exitFail || !bytes.HasPrefix(stdout, []byte("::error file=")) {
				t.Errorf("github: exit %d, output %q", code, stdout)
			}
			checkGolden(t, filepath.Join(dir, "stdout.github"), stdout)

			if after := tree(t, dir); !slices.Equal(before, after) && !golden.Update() {
				t.Errorf("validate -check changed the case directory:\nbefore %q\nafter  %q", before, after)
			}
		})
	}
}

// TestValidateCheckUsage pins -check's usage errors and its bare form.
func TestValidateCheckUsage(t *testing.T) {
	t.Chdir(filepath.Join(repoRoot(t), "cmd", "personagen"))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"-out without -check", []string{"validate", "-out", "x", "testdata/check"}, exitUsage, "-out is used with -check only"},
		{"bad package name", []string{"validate", "-check", "-pkg", "func", "testdata/check/loader-misspelled"}, exitUsage, `personagen validate: -pkg: package name "func" is a Go keyword`},
		{"no module", []string{"validate", "-check", "-pkg", "x", "-out", t.TempDir(), "testdata/check/loader-misspelled"}, exitUsage, "is not inside a Go module"},
		{"bare, nothing to check", []string{"validate", "-check"}, exitUsage, "there is none below this directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.code || !strings.Contains(string(stderr), tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.want)
			}
			// A check that could not run prints no result: "[]" on stdout would read as valid.
			for _, format := range []string{"json", "github"} {
				args := append([]string{tc.args[0], "-format", format}, tc.args[1:]...)
				if code, stdout, _ := runCLI(t, args...); code != tc.code || len(stdout) != 0 {
					t.Errorf("-format %s: exit %d, stdout %q; want %d and nothing on stdout", format, code, stdout, tc.code)
				}
			}
		})
	}

	// Bare -check at the repository root checks the root generate.go's
	// line: the committed examples are valid.
	t.Chdir(repoRoot(t))
	if code, stdout, stderr := runCLI(t, "validate", "-check", "-format", "json"); code != exitOK || string(stdout) != "[]\n" || len(stderr) != 0 {
		t.Errorf("bare validate -check at the root: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestDashDashEndsFlags pins that "--" ends the flags: a spec file whose
// name starts with "-" is read after it, and refused as a flag without it.
func TestDashDashEndsFlags(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("-x.persona.yaml", []byte("version: 1\nname: dash\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "validate", "--", "-x.persona.yaml"); code != exitOK || len(stderr) != 0 {
		t.Errorf("validate -- -x.persona.yaml: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "validate", "-x.persona.yaml"); code != exitUsage {
		t.Errorf("validate -x.persona.yaml: exit %d, stderr %q; want a usage error", code, stderr)
	}
}
