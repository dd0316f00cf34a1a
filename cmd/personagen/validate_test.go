package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/personagen/personagen/internal/golden"
)

// checkGolden compares got with the file at path, or rewrites it under -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr []byte) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), args, &o, &e)
	return code, o.Bytes(), e.Bytes()
}

// TestValidateInvalidCorpus runs `personagen validate` on every case under
// testdata/validate/<case>/ (the case directory, or the paths listed in its
// args.txt) in all three formats and compares the output with the case's
// stderr.txt (text), stdout.json and stdout.github goldens. Every case is
// invalid: exit 1 and at least one diagnostic.
func TestValidateInvalidCorpus(t *testing.T) {
	dirs, err := filepath.Glob("testdata/validate/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 40 {
		t.Fatalf("only %d cases in testdata/validate; the corpus must hold at least 40", len(dirs))
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			args := []string{dir}
			if b, err := os.ReadFile(filepath.Join(dir, "args.txt")); err == nil {
				args = strings.Fields(string(b))
			}
			code, stdout, stderr := runCLI(t, append([]string{"validate"}, args...)...)
			if code != exitFail || len(stdout) != 0 || len(stderr) == 0 {
				t.Errorf("text: exit %d, stdout %q, stderr %q; want exit 1, diagnostics on stderr only", code, stdout, stderr)
			}
			checkGolden(t, filepath.Join(dir, "stderr.txt"), stderr)

			code, stdout, stderr = runCLI(t, append([]string{"validate", "-format", "json"}, args...)...)
			var diags []jsonDiagnostic
			if err := json.Unmarshal(stdout, &diags); err != nil || code != exitFail || len(diags) == 0 || len(stderr) != 0 {
				t.Errorf("json: exit %d, %d diagnostics, decode error %v, stderr %q", code, len(diags), err, stderr)
			}
			checkGolden(t, filepath.Join(dir, "stdout.json"), stdout)

			code, stdout, _ = runCLI(t, append([]string{"validate", "-format", "github"}, args...)...)
			if code != exitFail || !bytes.HasPrefix(stdout, []byte("::error file=")) {
				t.Errorf("github: exit %d, output %q", code, stdout)
			}
			checkGolden(t, filepath.Join(dir, "stdout.github"), stdout)
		})
	}
}

func TestValidateValidSpecsExitZeroSilently(t *testing.T) {
	for _, format := range []string{"text", "json", "github"} {
		code, stdout, stderr := runCLI(t, "validate", "-format", format, "../../spec/testdata/valid/minimal.persona.yaml")
		want := ""
		if format == "json" {
			want = "[]\n"
		}
		if code != exitOK || string(stdout) != want || len(stderr) != 0 {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0, %q, nothing", format, code, stdout, stderr, want)
		}
	}
}

// TestValidateWarningsKeepExitZeroUnlessStrict pins how a warning prints in each format and
// that only -strict makes it fail: full.persona.yaml replays the history before its few-shot
// transcript, so its first per-message resolver (line 22) draws the cache-order warning.
func TestValidateWarningsKeepExitZeroUnlessStrict(t *testing.T) {
	const path = "../../spec/testdata/valid/full.persona.yaml"
	const msg = "load_text changes per message but comes before load_transcript at line 27, which changes per persona: every request differs from here on, so the prompt cache serves nothing after it; move the entry at line 27 before this one, or this one after it"
	tests := []struct {
		format, stdout, stderr string
	}{
		{"text", "", path + ":22:5: warning: " + msg + "\n"},
		{"json", "[\n  {\n    \"file\": \"" + path + "\",\n    \"line\": 22,\n    \"column\": 5,\n    \"message\": \"" + msg + "\",\n    \"severity\": \"warning\"\n  }\n]\n", ""},
		{"github", "::warning file=" + ghProperty(path) + ",line=22,col=5::" + msg + "\n", ""},
	}
	for _, tt := range tests {
		for _, strict := range []bool{false, true} {
			args := []string{"validate", "-format", tt.format}
			want := exitOK
			if strict {
				args, want = append(args, "-strict"), exitFail
			}
			code, stdout, stderr := runCLI(t, append(args, path)...)
			if code != want || string(stdout) != tt.stdout || string(stderr) != tt.stderr {
				t.Errorf("%v: exit %d, stdout %q, stderr %q\nwant exit %d, stdout %q, stderr %q", args, code, stdout, stderr, want, tt.stdout, tt.stderr)
			}
		}
	}
}

func TestValidateHistroyPointsAtLine7(t *testing.T) {
	code, _, stderr := runCLI(t, "validate", "testdata/validate/histroy-under-resolver/spec.persona.yaml")
	want := "testdata/validate/histroy-under-resolver/spec.persona.yaml:7:5: "
	if code != exitFail || !strings.HasPrefix(string(stderr), want) ||
		!strings.Contains(string(stderr), `"histroy"`) || !strings.Contains(string(stderr), `did you mean "thread_history"`) {
		t.Errorf("exit %d, stderr %q; want exit 1 and a line starting %q naming histroy with a suggestion", code, stderr, want)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "usage: personagen"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"validate without paths", []string{"validate"}, "no paths given"},
		{"validate bad format", []string{"validate", "-format", "xml", "x"}, `unknown format "xml" (want text, json or github)` + "\n"},
		{"validate format given a path", []string{"validate", "-format", "x.persona.yaml"}, `unknown format "x.persona.yaml" (want text, json or github); "x.persona.yaml" looks like a path: -format takes its value first, as in -format json x.persona.yaml`},
		{"validate format given a directory", []string{"validate", "-format", "testdata", "a.persona.yaml"}, `"testdata" looks like a path`},
		{"validate bad flag", []string{"validate", "-nope", "x"}, "flag provided but not defined: -nope"},
		{"validate flag after a path", []string{"validate", "x", "-format", "json"}, `flag "-format" after a path; put flags before PATH...`},
		{"validate empty path", []string{"validate", "x", ""}, "an empty path"},
		{"schema extra argument", []string{"schema", "x"}, "usage: personagen schema"},
		{"version extra argument", []string{"version", "x"}, "usage: personagen version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			if code != exitUsage || !strings.Contains(string(stderr), tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tt.want)
			}
		})
	}
}

func TestUsageListsCommandsSorted(t *testing.T) {
	code, stdout, _ := runCLI(t, "help")
	if code != exitOK {
		t.Fatalf("help exit %d", code)
	}
	var names []string
	for _, l := range strings.Split(string(stdout), "\n") {
		if strings.HasPrefix(l, "  ") {
			names = append(names, strings.Fields(l)[0])
		}
	}
	for _, want := range []string{"schema", "validate", "version"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("usage lists %v, missing %s", names, want)
		}
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] > names[i] {
			t.Errorf("usage not sorted: %v", names)
		}
	}
}

func TestGitHubEscapesPropertiesAndData(t *testing.T) {
	if got := ghProperty("a:b,c%d"); got != "a%3Ab%2Cc%25d" {
		t.Errorf("ghProperty = %q", got)
	}
	if got := ghData("x\ny%"); got != "x%0Ay%25" {
		t.Errorf("ghData = %q", got)
	}
}
