package mail

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// corpusArrival is the arrival time every corpus message is parsed with.
var corpusArrival = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// TestCorpus parses every real-world message under testdata/corpus (origins and licenses in
// testdata/corpus/README.md) and compares what Parse reads — ids, thread, addresses, date,
// subject, what must not be answered, bodies, attachments, problems — with the golden file next
// to it (<name>.golden). Run with -update to rewrite the golden files, then review the diff.
func TestCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/corpus/*/*.eml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("found %d corpus messages, want at least 30", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, "testdata/corpus/"), func(t *testing.T) {
			m := parseFile(t, f)
			if err := checkUTF8(m); err != nil {
				t.Error(err)
			}
			got := describe(m)
			golden := strings.TrimSuffix(f, ".eml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestCorpus -update to write it)", err)
			}
			if got != string(want) {
				t.Errorf("parse of %s differs from %s:\n%s", f, golden, lineDiff(string(want), got))
			}
		})
	}
}

// TestCorpusSources holds the corpus to its rule: at least half of the messages come from
// sources other than enmime's own test data, and every source directory carries its license.
func TestCorpusSources(t *testing.T) {
	files, _ := filepath.Glob("testdata/corpus/*/*.eml")
	enmime := 0
	for _, f := range files {
		if filepath.Base(filepath.Dir(f)) == "enmime" {
			enmime++
		}
	}
	if enmime*2 > len(files) {
		t.Errorf("%d of %d corpus messages come from enmime's test data; at most half may", enmime, len(files))
	}
	dirs, _ := filepath.Glob("testdata/corpus/*/")
	readme, err := os.ReadFile("testdata/corpus/README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if licenses, _ := filepath.Glob(filepath.Join(d, "LICENSE*")); len(licenses) == 0 {
			t.Errorf("%s has no LICENSE file", d)
		}
		if !strings.Contains(string(readme), "`"+filepath.Base(d)+"/`") {
			t.Errorf("README.md does not describe %s", d)
		}
	}
	for _, f := range files {
		if !strings.Contains(string(readme), filepath.Base(f)) {
			t.Errorf("README.md does not list %s", f)
		}
	}
}

func parseFile(t testing.TB, path string) *Message {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := Parse(f, corpusArrival)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return m
}

// describe renders what Parse read from m, one field a line, bodies last.
func describe(m *Message) string {
	var b strings.Builder
	line := func(k, format string, args ...any) {
		b.WriteString(strings.TrimRight(fmt.Sprintf("%-14s "+format, append([]any{k + ":"}, args...)...), " "))
		b.WriteByte('\n')
	}
	id := m.MessageID
	if m.SyntheticID {
		id += " (synthetic)"
	}
	line("message-id", "%s", id)
	line("in-reply-to", "%s", m.InReplyTo)
	line("references", "%s", strings.Join(m.References, " "))
	thread, joined := ThreadID("support", m, func(string) (string, bool) { return "", false })
	line("thread", "%s (joined %v)", thread, joined)
	line("from", "%s", m.From)
	line("to", "%s", strings.Join(m.To, ", "))
	line("cc", "%s", strings.Join(m.Cc, ", "))
	line("reply-to", "%s", strings.Join(m.ReplyTo, ", "))
	src := "header"
	if !m.DateFromHeader {
		src = "arrival"
	}
	line("date", "%s (%s)", m.Date.Format(time.RFC3339), src)
	line("subject", "%q", m.Subject)
	line("no-reply", "%s", m.NoReply)
	cids := map[string][]string{}
	for cid, id := range m.ContentIDs {
		cids[id] = append(cids[id], cid)
	}
	for _, a := range m.Attachments {
		extra := ""
		if list := cids[a.ID]; len(list) > 0 {
			slices.Sort(list)
			extra = " cid=" + strings.Join(list, ",")
		}
		line("attachment", "%s %q %s %d bytes%s", a.ID, a.Filename, a.ContentType, a.Size, extra)
	}
	for _, p := range m.Problems {
		line("problem", "%s", p)
	}
	fmt.Fprintf(&b, "--- text (from html: %v)\n%s\n", m.TextFromHTML, m.Text)
	fmt.Fprintf(&b, "--- html\n%s\n", m.HTML)
	return b.String()
}

// lineDiff shows the first differing line of two texts with its number.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want %q\n  got  %q", i+1, wl, gl)
		}
	}
	return "(equal)"
}
