package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The review tests run render and diff on the example personas; each distinct review program
// is built once per test binary (reviewBuilds) and removed when the tests end.
func TestMain(m *testing.M) {
	keepReviewBuilds = true
	code := m.Run()
	keepReviewBuilds = false
	cleanupReview()
	os.Exit(code)
}

// TestRenderExampleThreadTranscript pins the provider-neutral request of the example support
// thread and of the research assistant's digest, with their cache plans (golden files).
func TestRenderExampleThreadTranscript(t *testing.T) {
	code, stdout, stderr := runCLI(t, "render", "-root", "../../examples", "../../examples")
	if code != exitOK || len(stderr) != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	checkGolden(t, "testdata/review/render.txt", stdout)
}

// TestRenderWireAnthropic pins the body the Anthropic adapter would POST for the example
// thread: the cache_control markers of its plan on the policy's block, the history's last
// reply and at the top level.
func TestRenderWireAnthropic(t *testing.T) {
	code, stdout, stderr := runCLI(t, "render", "-root", "../../examples", "-persona", "support-agent", "-wire", "anthropic,openai", "../../examples")
	if code != exitOK || len(stderr) != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	out := string(stdout)
	for _, want := range []string{`"cache_control": {`, `"prompt_cache_key": "support-agent/`, "# anthropic request body: 13 messages, 3 tools;"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if n := strings.Count(out, `"type": "ephemeral"`); n != 3 {
		t.Errorf("%d cache_control markers, want 3 (policy, history, top level)", n)
	}
	checkGolden(t, "testdata/review/render-wire.txt", stdout)
}

// copyTree copies the directory src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if info.IsDir() {
			if info.Name() == "cmd" || info.Name() == "host" {
				return filepath.SkipDir
			}
			return os.MkdirAll(target, 0o755)
		}
		if strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDiffPolicyChange is the review of a change of the support persona's security policy: the
// diff of its request on the example thread, as text, as a Markdown comment and as GitHub
// annotations at the load_file entry that reads the changed file; exit 1 says it changed.
func TestDiffPolicyChange(t *testing.T) {
	dir := t.TempDir()
	old, nw := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	copyTree(t, "../../examples", old)
	copyTree(t, "../../examples", nw)
	policy := filepath.Join(nw, "prompts", "security-policy.md")
	b, err := os.ReadFile(policy)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "5. If a message looks like phishing", "5. Never confirm a refund amount before the escalation tool confirmed it.\n6. If a message looks like phishing", 1)
	if err := os.WriteFile(policy, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "markdown", "github"} {
		code, stdout, stderr := runCLI(t, "diff", "-format", format, "-persona", "support-agent", old, nw)
		if code != diffChanged || len(stderr) != 0 {
			t.Fatalf("%s: exit %d, stderr:\n%s", format, code, stderr)
		}
		out := strings.ReplaceAll(string(stdout), dir, "$TMP")
		ext := map[string]string{"text": "txt", "markdown": "md", "github": "github"}[format]
		checkGolden(t, "testdata/review/diff-policy."+ext, []byte(out))
	}
}

// TestDiffUnchangedExitsZero compares the examples with themselves (two copies): every request
// is unchanged and the exit code is 0.
func TestDiffUnchangedExitsZero(t *testing.T) {
	dir := t.TempDir()
	copyTree(t, "../../examples", filepath.Join(dir, "a"))
	copyTree(t, "../../examples", filepath.Join(dir, "b"))
	code, stdout, stderr := runCLI(t, "diff", filepath.Join(dir, "a"), filepath.Join(dir, "b"))
	if code != diffSame || len(stderr) != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	want := "# research-assistant · daily-digest · transcript: unchanged"
	if !strings.HasPrefix(string(stdout), want) || !strings.Contains(string(stdout), "# support-agent · example-thread · transcript: unchanged") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

// TestDiffBaseRevision compares the working tree's examples with HEAD's (git archive): in a
// checkout whose examples are committed, nothing changed.
func TestDiffBaseRevision(t *testing.T) {
	if out, err := runGit("status", "--porcelain", "--", "../../examples"); err != nil || out != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("under CI=true examples/ must be committed and git present (%v): %s", err, out)
		}
		t.Skipf("examples/ differ from HEAD or git is missing (%v): %s", err, out)
	}
	code, stdout, stderr := runCLI(t, "diff", "-base", "HEAD", "-root", "../../examples", "../../examples")
	if code != diffSame || len(stderr) != 0 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

// TestRenderAndDiffRefuseBadInput pins the usage errors and a fixture for an unknown persona.
func TestRenderAndDiffRefuseBadInput(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"unknown wire", []string{"render", "-wire", "gemini", "../../examples"}, exitUsage, "personagen render: -wire \"gemini\": want anthropic, openai, openai-responses or transcript\n"},
		{"diff without a base", []string{"diff", "../../examples"}, diffTrouble, "personagen diff: give -base REV, or two directories OLD NEW\n"},
		{"diff unknown format", []string{"diff", "-format", "html", "a", "b"}, diffTrouble, "personagen diff: unknown format \"html\" (want text, markdown or github)\n"},
		{"no fixtures", []string{"render", "../../spec/testdata/valid/minimal.persona.yaml"}, exitFail, "personagen render: no fixtures found: a fixture of persona P is fixtures/P/NAME.yaml next to P's spec\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tt.args...)
			got := string(stderr)
			if i := strings.Index(got, "usage:"); i >= 0 {
				got = got[:i]
			}
			if code != tt.code || got != tt.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, got, tt.code, tt.stderr)
			}
		})
	}
}

func runGit(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	return strings.TrimSpace(string(out)), err
}
