package mail

import (
	"bytes"
	"strings"

	"github.com/jhillyerd/enmime/v2"
)

// transferDecoded returns a leaf part's content with its Content-Transfer-Encoding undone.
// enmime is run with RawContent, because its own base64 decoding drops each byte that is not
// base64 and goes on, so everything after a break in the data is decoded misaligned — binary
// garbage in the text the model reads. Here:
//   - base64 stops at the first byte that is neither base64 nor white space: what decoded before
//     it is kept, the rest is left out, and the break is recorded (so is a lone character at the
//     end). Padding ends a quantum and decoding goes on after it, since some writers encode line
//     by line;
//   - quoted-printable is decoded leniently, as mime/quotedprintable does for valid input: "=XX"
//     (hex in either case) is that byte, "=" at a line's end joins the lines, trailing white space
//     is dropped, and an "=" not followed by two hex digits stands for itself;
//   - 7bit, 8bit, binary and none: the bytes as they are; any other encoding likewise, recorded.
func (st *state) transferDecoded(p *enmime.Part, text bool) []byte {
	raw := p.Content
	cte := strings.ToLower(strings.TrimSpace(stripComments(text0(p.Header.Get("Content-Transfer-Encoding")))))
	switch cte {
	case "", "7bit", "8bit", "binary":
		return raw
	case "base64":
		out, at, lone := decodeBase64(raw, text)
		switch {
		case at >= 0 && !text:
			st.m.problem(ProblemMIME, "part %s: the base64 data holds bytes that are not base64 (the first at byte %d of %d: %q); they are skipped", p.PartID, at, len(raw), raw[at:at+1])
		case at >= 0:
			st.m.problem(ProblemMIME, "part %s: the base64 data breaks at byte %d of %d (a line that is not base64: %q); the %d bytes decoded before it are kept, the rest is left out", p.PartID, at, len(raw), clipBytes(text0(string(firstLine(raw[at:]))), 60), len(out))
		case lone:
			st.m.problem(ProblemMIME, "part %s: the base64 data ends with a lone character; the %d bytes decoded before it are kept", p.PartID, len(out))
		}
		return out
	case "quoted-printable":
		return decodeQuotedPrintable(raw)
	}
	st.m.problem(ProblemMIME, "part %s: unknown Content-Transfer-Encoding %q; the content is kept as it is", p.PartID, oneLine(cte))
	return raw
}

// firstLine returns b up to its first line break.
func firstLine(b []byte) []byte {
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		return b[:i]
	}
	return b
}

// text0 returns s as valid UTF-8 (see validText).
func text0(s string) string {
	t, _ := validText([]byte(s))
	return t
}

// decodeBase64 decodes base64 data line by line up to its first line that is not base64 — that
// holds, between its leading and trailing white space, anything but the base64 alphabet and
// "=" (a space inside the line included: base64 writers never put one there, while a text
// appended to the data, such as a list footer, always has some) — and returns the bytes decoded,
// the offset of that line's first byte (-1 when every line is base64) and whether the data
// ends with a lone character (six bits, no byte). A quantum cut short by the end gives the
// whole bytes it holds; "=" ends a quantum of two or three characters and is skipped elsewhere,
// except after a lone character, where it breaks the data at its line.
//
// With stop false the data never breaks: each byte outside the alphabet, padding and white space
// is skipped, and breakAt is the offset of the first one skipped.
func decodeBase64(b []byte, stop bool) (out []byte, breakAt int, lone bool) {
	breakAt = -1
	out = make([]byte, 0, len(b)/4*3+2)
	var q [4]byte
	n := 0
	flush := func() {
		switch n {
		case 2:
			out = append(out, q[0]<<2|q[1]>>4)
		case 3:
			out = append(out, q[0]<<2|q[1]>>4, q[1]<<4|q[2]>>2)
		}
		n = 0
	}
	for start := 0; start < len(b); {
		end := len(b)
		if nl := bytes.IndexByte(b[start:], '\n'); nl >= 0 {
			end = start + nl + 1
		}
		lineStart := start + len(b[start:end]) - len(bytes.TrimLeft(b[start:end], " \t\r\n"))
		line := bytes.TrimSpace(b[start:end])
		if stop && bytes.ContainsFunc(line, func(r rune) bool { return r != '=' && (r >= 0x80 || base64Value(byte(r)) < 0) }) {
			flush()
			return out, lineStart, false
		}
		for i, c := range line {
			switch {
			case c == '=' && n == 1 && stop:
				return out, lineStart, false
			case c == '=':
				flush()
				continue
			case base64Value(c) < 0:
				if breakAt < 0 && c != ' ' && c != '\t' {
					breakAt = lineStart + i
				}
				continue
			}
			q[n] = byte(base64Value(c))
			if n++; n == 4 {
				out = append(out, q[0]<<2|q[1]>>4, q[1]<<4|q[2]>>2, q[2]<<6|q[3])
				n = 0
			}
		}
		start = end
	}
	lone = n == 1
	flush()
	return out, breakAt, lone
}

// decodeQuotedPrintable decodes quoted-printable data leniently (see transferDecoded). Hard
// line breaks keep their form (CRLF or LF).
func decodeQuotedPrintable(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		line := b
		nl := bytes.IndexByte(b, '\n')
		eol := ""
		if nl >= 0 {
			line, b = b[:nl], b[nl+1:]
			eol = "\n"
			if bytes.HasSuffix(line, []byte("\r")) {
				line, eol = line[:len(line)-1], "\r\n"
			}
		} else {
			b = nil
		}
		line = bytes.TrimRight(line, " \t")
		soft := bytes.HasSuffix(line, []byte("="))
		if soft {
			line = line[:len(line)-1]
		}
		for i := 0; i < len(line); i++ {
			if line[i] == '=' && i+2 < len(line) {
				if hi, lo := unhex(line[i+1]), unhex(line[i+2]); hi >= 0 && lo >= 0 {
					out = append(out, byte(hi<<4|lo))
					i += 2
					continue
				}
			}
			out = append(out, line[i])
		}
		if !soft {
			out = append(out, eol...)
		}
	}
	return out
}
