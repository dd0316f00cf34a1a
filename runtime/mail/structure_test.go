package mail

import (
	"fmt"
	"strings"
	"testing"
)

// nested returns a message of depth multiparts, each the only part of the one above, around a
// text part "deep"; closed says whether every boundary is closed.
func nested(depth int, closed bool) string {
	var b strings.Builder
	b.WriteString("From: a@example.com\r\nTo: support@acme.example\r\nSubject: s\r\nMessage-ID: <deep@example.com>\r\n")
	for i := range depth {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=b%d\r\n\r\n--b%d\r\n", i, i)
	}
	b.WriteString("Content-Type: text/plain\r\n\r\ndeep\r\n")
	if closed {
		for i := depth - 1; i >= 0; i-- {
			fmt.Fprintf(&b, "--b%d--\r\n", i)
		}
	}
	return b.String()
}

// TestParseHoldsMultipartNesting pins the nesting limit: maxMultipartDepth nested multiparts
// parse as MIME, and the parts of a deeper one are left out with the problem recorded — never
// read as text full of boundary lines. enmime's time doubles with each nested level whose part
// ends (25 unclosed levels took 9 s, 50 never finished), so the 200-level cases below finish
// only because the limit holds; the limit is found through enmime's recursion (multipartDepth),
// which this test also checks still works.
func TestParseHoldsMultipartNesting(t *testing.T) {
	for _, closed := range []bool{true, false} {
		m := mustParse(t, nested(maxMultipartDepth, closed), arrival)
		if strings.TrimSpace(m.Text) != "deep" || strings.Contains(problems(m), "nested deeper") {
			t.Errorf("%d levels (closed %v): text %q, problems %s; want the text part read as MIME", maxMultipartDepth, closed, m.Text, problems(m))
		}
		for _, depth := range []int{maxMultipartDepth + 1, 200} {
			m := mustParse(t, nested(depth, closed), arrival)
			if m.Text != "" || m.HTML != "" || len(m.Attachments) != 0 {
				t.Errorf("%d levels (closed %v): text %q, %d attachments; want the levels below %d left out", depth, closed, m.Text[:min(len(m.Text), 80)], len(m.Attachments), maxMultipartDepth)
			}
			if !strings.Contains(problems(m), fmt.Sprintf("mime: multiparts are nested deeper than %d levels; the deeper ones are left out", maxMultipartDepth)) {
				t.Errorf("%d levels (closed %v): problems %s; want the nesting recorded", depth, closed, problems(m))
			}
		}
	}
	// A text beside the deep branch stays.
	raw := "From: a@example.com\r\nMessage-ID: <beside@example.com>\r\nContent-Type: multipart/mixed; boundary=top\r\n\r\n" +
		"--top\r\nContent-Type: text/plain\r\n\r\nbeside\r\n--top\r\n" +
		strings.TrimPrefix(nested(maxMultipartDepth, true), "From: a@example.com\r\nTo: support@acme.example\r\nSubject: s\r\nMessage-ID: <deep@example.com>\r\n") +
		"--top--\r\n"
	if m := mustParse(t, raw, arrival); m.Text != "beside" || strings.Contains(m.Text, "--b") {
		t.Errorf("a deep branch beside a text: text %q, problems %s; want only the text beside it", m.Text, problems(m))
	}
}

// TestParseReadsAtMostMaxPartLinesDelimiters pins the part limit: a message that declares a
// boundary is read up to its maxPartLines+1st line starting with "--", with the cut recorded
// (enmime appends each part by walking its siblings: 100,000 parts took 3 minutes); a message
// without a boundary is never cut, whatever its lines.
func TestParseReadsAtMostMaxPartLinesDelimiters(t *testing.T) {
	head := "From: a@example.com\r\nTo: support@acme.example\r\nSubject: s\r\nMessage-ID: <parts@example.com>\r\n"
	part := func(i int) string { return fmt.Sprintf("--B\r\nContent-Type: text/plain\r\n\r\np%d\r\n", i) }
	var b strings.Builder
	b.WriteString(head + "Content-Type: multipart/mixed; boundary=B\r\n\r\n")
	for i := range maxPartLines + 3 {
		b.WriteString(part(i))
	}
	b.WriteString("--B--\r\n")
	m := mustParse(t, b.String(), arrival)
	texts := strings.Split(strings.TrimSpace(m.Text), "\n\n")
	if len(texts) != maxPartLines || texts[0] != "p0" || texts[len(texts)-1] != fmt.Sprintf("p%d", maxPartLines-1) {
		t.Errorf("got %d texts (%q … %q), want p0 … p%d", len(texts), texts[0], texts[len(texts)-1], maxPartLines-1)
	}
	cut := strings.Index(b.String(), part(maxPartLines))
	want := fmt.Sprintf("mime: more than %d lines start with \"--\" (MIME delimiters); the message is read up to byte %d of %d, the rest is left out", maxPartLines, cut, b.Len())
	if !strings.Contains(problems(m), want) {
		t.Errorf("problems %s; want %q", problems(m), want)
	}
	if m.Size != int64(b.Len()) {
		t.Errorf("Size = %d, want the whole message's %d bytes", m.Size, b.Len())
	}

	// Exactly maxPartLines delimiter lines (the closing one included) are read whole.
	b.Reset()
	b.WriteString(head + "Content-Type: multipart/mixed; boundary=B\r\n\r\n")
	for i := range maxPartLines - 1 {
		b.WriteString(part(i))
	}
	b.WriteString("--B--\r\n")
	m = mustParse(t, b.String(), arrival)
	if n := len(strings.Split(m.Text, "\n\n")); n != maxPartLines-1 || strings.Contains(problems(m), "lines start with") {
		t.Errorf("%d delimiter lines: %d texts, problems %s; want all %d parts and no cut", maxPartLines, n, problems(m), maxPartLines-1)
	}

	// No boundary declared: a text of many "--" lines is read whole.
	body := strings.Repeat("-- \r\n", maxPartLines+10) + "end\r\n"
	m = mustParse(t, head+"\r\n"+body, arrival)
	if !strings.HasSuffix(m.Text, "end\n") || strings.Contains(problems(m), "lines start with") {
		t.Errorf("text without a boundary: ends %q, problems %s; want it whole", m.Text[max(0, len(m.Text)-10):], problems(m))
	}
}

// TestParseBoundsRepairs: at most maxRepairs multiparts of a message are read with a boundary
// found in their body (each repair parses the rest of the body again); the parts of the next
// one are left out, recorded, and no delimiter line reaches the text.
func TestParseBoundsRepairs(t *testing.T) {
	var b strings.Builder
	b.WriteString("From: a@example.com\r\nMessage-ID: <repairs@example.com>\r\nContent-Type: multipart/mixed\r\n\r\n")
	for i := range maxRepairs + 2 {
		fmt.Fprintf(&b, "--level%d\r\nContent-Type: text/plain\r\n\r\ntext %d\r\n--level%d\r\nContent-Type: multipart/mixed\r\n\r\n", i, i, i)
	}
	b.WriteString("--last\r\nContent-Type: text/plain\r\n\r\ndeepest\r\n")
	m := mustParse(t, b.String(), arrival)
	if want := "text 0\n\ntext 1\n\ntext 2\n\ntext 3"; m.Text != want {
		t.Errorf("text %q, want %q", m.Text, want)
	}
	want := fmt.Sprintf("mime: part 2.2.2.2: more than %d multiparts of the message need their boundary repaired; this one (", maxRepairs)
	if !strings.Contains(problems(m), want) {
		t.Errorf("problems %s; want %q", problems(m), want)
	}
}
