package docs

import (
	"regexp"
	"strings"
	"unicode"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	// Lang is the first word of the fence's info string ("go", "sh", "text"; "" for none).
	Lang string
	// Flags are the info string's later words that hold no "=" ("tour", "output").
	Flags []string
	// Attrs are the info string's later words of the form key=value ("file=main.go").
	Attrs map[string]string
	// Text is the block's content: its lines, each ending in "\n", with the indentation of the
	// opening fence removed.
	Text string
	// Line is the 1-based line of the opening fence.
	Line int
}

// Has reports whether the block's info string holds the word flag.
func (b Block) Has(flag string) bool {
	for _, f := range b.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

// Blocks returns the fenced code blocks of md in order. A fence is a line that, after at most
// three spaces of indentation or the indentation of a list item, starts with three or more
// backquotes or tildes; the block ends at the first later line holding only a run of at least
// as many of the same character. A block whose fence is never closed runs to the end of md.
func Blocks(md string) []Block {
	var out []Block
	var cur *Block
	var marker, indent string
	for i, line := range strings.SplitAfter(md, "\n") {
		if line == "" {
			break // the end of md, after its last newline
		}
		trimmed := strings.TrimLeft(line, " ")
		body := strings.TrimRight(trimmed, "\r\n")
		if cur == nil {
			m := fenceRE.FindString(body)
			if m == "" {
				continue
			}
			marker, indent = m, line[:len(line)-len(trimmed)]
			words := strings.Fields(body[len(m):])
			b := Block{Attrs: map[string]string{}, Line: i + 1}
			for j, w := range words {
				if j == 0 {
					b.Lang = w
					continue
				}
				if k, v, ok := strings.Cut(w, "="); ok {
					b.Attrs[k] = v
				} else {
					b.Flags = append(b.Flags, w)
				}
			}
			cur = &b
			continue
		}
		if strings.HasPrefix(body, marker) && strings.Trim(body, marker[:1]+" \t") == "" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.Text += strings.TrimPrefix(strings.TrimRight(line, "\r\n"), indent) + "\n"
	}
	if cur != nil {
		out = append(out, *cur)
	}
	return out
}

var fenceRE = regexp.MustCompile("^(```+|~~~+)")

// prose returns md with its fenced code blocks and HTML comments blanked out (replaced by
// spaces, newlines kept), so that headings and links are read from what a reader sees as text.
// Line numbers are unchanged.
func prose(md string) string {
	lines := strings.SplitAfter(md, "\n")
	var marker string
	for i, line := range lines {
		body := strings.TrimRight(strings.TrimLeft(line, " "), "\r\n")
		switch {
		case marker == "":
			if m := fenceRE.FindString(body); m != "" {
				marker = m
				lines[i] = blank(line)
			}
		default:
			if strings.HasPrefix(body, marker) && strings.Trim(body, marker[:1]+" \t") == "" {
				marker = ""
			}
			lines[i] = blank(line)
		}
	}
	return commentRE.ReplaceAllStringFunc(strings.Join(lines, ""), blank)
}

var commentRE = regexp.MustCompile(`(?s)<!--.*?-->`)

// withoutCodeSpans blanks out the inline code spans of s: a run of n backquotes up to the next
// run of exactly n. A run without a closing one is text.
func withoutCodeSpans(s string) string {
	b := []byte(s)
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(b, i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run(b, j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			i += n
			continue
		}
		copy(b[i:end], blank(string(b[i:end])))
		i = end
	}
	return string(b)
}

// run is the length of the run of backquotes at b[i].
func run(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

// blank replaces every byte of s but its newlines with a space, keeping its length.
func blank(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c != '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// Link is one inline link (or image) of a Markdown file.
type Link struct {
	Target string // as written: "docs/spec.md#yaml-rules", "#quick-start", "https://…"
	Line   int    // 1-based
}

// Links returns the inline links and images of md's prose, in order: [text](target), the
// target up to the first space (a title after it is ignored). Links inside code blocks, code
// spans and HTML comments are not links.
func Links(md string) []Link {
	p := withoutCodeSpans(prose(md))
	var out []Link
	for _, m := range linkRE.FindAllStringSubmatchIndex(p, -1) {
		out = append(out, Link{Target: p[m[2]:m[3]], Line: 1 + strings.Count(p[:m[0]], "\n")})
	}
	return out
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// Anchors returns the anchors GitHub gives the ATX headings of md ("## Quick start" →
// "quick-start"), numbered "-1", "-2", … from the second heading of one slug on.
func Anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, line := range strings.Split(prose(md), "\n") {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		s := Slug(strings.ReplaceAll(m[1], "`", ""))
		if n, dup := seen[s]; dup {
			seen[s] = n + 1
			s += "-" + itoa(n+1)
		} else {
			seen[s] = 0
		}
		out[s] = true
	}
	return out
}

var headingRE = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)

// Slug is GitHub's anchor of a heading's text: link syntax reduced to its text, lower-cased,
// every character but letters, digits, marks, spaces, '-' and '_' removed, and each space
// made a '-'.
func Slug(heading string) string {
	heading = mdLinkRE.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var mdLinkRE = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}
