package mail

import (
	"bytes"
	"strings"

	"github.com/jhillyerd/enmime/v2"
)

// maxRepairs is how many multiparts of one message repairBody reads with a boundary found in
// their body; the parts of any more are left out. Each repair parses the rest of its body again
// (enmime reads about 7 MB/s), so the bound keeps a hostile message's cost near that of the
// nesting limit; real mail needs one, rarely two.
const maxRepairs = 4

// maxBoundaryLen is the longest boundary, in bytes, that delimiterTokens and findBoundary
// consider (RFC 2046 allows 70; some writers exceed it).
const maxBoundaryLen = 1000

// delimiterTokens returns the boundaries the lines of raw may be delimiters of: for each line
// that starts with "--" (after white space), the text after the "--" up to the first white
// space, and the same without a final "--" (a closing delimiter). Only a message that mentions
// "boundary" is scanned; the others have no multipart with a boundary.
func delimiterTokens(raw []byte) map[string]bool {
	out := map[string]bool{}
	if !containsFold(raw, "boundary") {
		return out
	}
	for len(raw) > 0 {
		line := raw
		if nl := bytes.IndexByte(raw, '\n'); nl >= 0 {
			line, raw = raw[:nl], raw[nl+1:]
		} else {
			raw = nil
		}
		if tok, ok := delimiterToken(line); ok {
			out[tok] = true
			if t, ok := strings.CutSuffix(tok, "--"); ok {
				out[t] = true
			}
		}
	}
	return out
}

// delimiterToken returns the token of a line that may be a MIME delimiter: the text after a
// leading "--" (white space before it allowed) up to the first white space, when it is at most
// maxBoundaryLen bytes.
func delimiterToken(line []byte) (string, bool) {
	line = bytes.TrimLeft(line, " \t")
	if !bytes.HasPrefix(line, []byte("--")) {
		return "", false
	}
	tok := line[2:]
	if i := bytes.IndexAny(tok, " \t\r\n"); i >= 0 {
		tok = tok[:i]
	}
	if len(tok) == 0 || len(tok) > maxBoundaryLen {
		return "", false
	}
	return string(tok), true
}

// findBoundary returns the boundary whose delimiters body holds: the token of its first line
// that is "--" and a boundary alone (no white space inside, not only dashes, no quote or
// backslash, not a closing delimiter) followed by a blank line or a Content- header line, as
// every MIME part begins; "" when no line is. The strict shape keeps a quoted "-----Original
// Message-----" or a line of dashes in a plain text from being taken for one.
func findBoundary(body []byte) string {
	for len(body) > 0 {
		line := body
		nl := bytes.IndexByte(body, '\n')
		if nl >= 0 {
			line, body = body[:nl], body[nl+1:]
		} else {
			body = nil
		}
		line = bytes.TrimRight(line, " \t\r")
		if !bytes.HasPrefix(line, []byte("--")) {
			continue
		}
		tok := string(line[2:])
		if tok == "" || len(tok) > maxBoundaryLen || strings.ContainsAny(tok, " \t\"\\") ||
			strings.Trim(tok, "-") == "" || strings.HasSuffix(tok, "--") {
			continue
		}
		next := body
		if i := bytes.IndexByte(next, '\n'); i >= 0 {
			next = next[:i]
		}
		next = bytes.TrimRight(next, "\r")
		if len(bytes.TrimSpace(next)) == 0 || (len(next) >= 8 && strings.EqualFold(string(next[:8]), "content-")) {
			return tok
		}
	}
	return ""
}

// repair reads a multipart whose boundary is missing or occurs nowhere in the message (enmime
// read it as one leaf, p) with the boundary its body's delimiters show (see repairBody).
func (st *state) repair(p *enmime.Part, mediaType string) bool {
	depth := st.depthBase
	for q := p.Parent; q != nil; q = q.Parent {
		depth++
	}
	prefix := ""
	if p.Parent != nil {
		prefix = p.PartID + "."
	}
	return st.repairBody(p.PartID, prefix, mediaType, st.transferDecoded(p, true), depth)
}

// repairBody reads body, the body of a multipart of mediaType whose boundary is missing or does
// not match its delimiters, with the boundary its delimiters show (findBoundary), and walks the
// parts it finds, their ids prefixed with prefix; it returns false, with the problem recorded,
// when the body shows none and is not blank (the caller then reads it as text). depth is the
// number of multiparts around it, so the depth limit holds across repairs.
func (st *state) repairBody(partID, prefix, mediaType string, body []byte, depth int) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return true // nothing to read
	}
	if st.repairs++; st.repairs > maxRepairs {
		st.m.problem(ProblemMIME, "part %s: more than %d multiparts of the message need their boundary repaired; this one (%d bytes) is left out", partID, maxRepairs, len(body))
		return true
	}
	fail := func() bool {
		st.m.problem(ProblemMIME, "part %s: a %s without a boundary its body holds; the body is read as text", partID, mediaType)
		return false
	}
	b := findBoundary(body)
	if b == "" {
		return fail()
	}
	raw := make([]byte, 0, len(body)+len(mediaType)+len(b)+40)
	raw = append(raw, "Content-Type: "+mediaType+"; boundary=\""+b+"\"\r\n\r\n"...)
	raw = append(raw, body...)
	st.delims[b] = true
	saved := st.depthBase
	st.depthBase = depth
	root, err := st.readParts(raw)
	st.depthBase = saved
	if err != nil || root.FirstChild == nil {
		return fail()
	}
	st.m.problem(ProblemMIME, "part %s: the %s's boundary is missing or matches none of its delimiters; it is read with the delimiter --%s that its body holds", partID, mediaType, text0(b))
	_ = root.DepthMatchAll(func(c *enmime.Part) bool {
		if c != root {
			c.PartID = prefix + c.PartID
		}
		return false
	})
	root.PartID = partID
	st.walk(root)
	st.collectErrors(root)
	return true
}

// withoutDelimiters returns text without the lines that are a delimiter of a boundary one of
// the message's multiparts uses ("--boundary" or "--boundary--", white space around allowed):
// such a line is MIME structure, never text, and is left out (recorded).
func (st *state) withoutDelimiters(partID, text string) string {
	if len(st.boundaries) == 0 || !strings.Contains(text, "--") {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	out := lines[:0]
	dropped := 0
	for _, l := range lines {
		if tok, ok := delimiterToken([]byte(strings.TrimRight(l, " \t\r\n"))); ok && strings.TrimSpace(l) == "--"+tok {
			t, _ := strings.CutSuffix(tok, "--")
			if st.boundaries[tok] || st.boundaries[t] {
				dropped++
				continue
			}
		}
		out = append(out, l)
	}
	if dropped == 0 {
		return text
	}
	st.m.problem(ProblemMIME, "part %s: %d MIME delimiter lines are left out of the text", partID, dropped)
	return strings.Join(out, "")
}
