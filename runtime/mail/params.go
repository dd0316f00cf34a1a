package mail

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// recodeExtendedParams rewrites the RFC 2231 extended parameters of a Content-Type or
// Content-Disposition value so the media type parser can read them whatever their charset: the
// pieces of each parameter that has an extended form — name*=charset'lang'value, or the
// continuations name*0*=charset'lang'…, name*1*=…, name*2="…" — are joined in order, their
// percent-encoded bytes (a "%" not followed by two hex digits stands for itself) converted from
// the declared charset to UTF-8, and written back as the single parameter name* (UTF-8, no language) in
// place of the first piece. (mime.ParseMediaType decodes only UTF-8 and US-ASCII values and
// drops every other, so without this an ISO-8859-1 file name came out empty.) A charset
// lookupCharset does not know, or bytes that are not UTF-8 in a value declared UTF-8 or with no
// charset, are read best-effort (such bytes as windows-1252) and recorded, so a name is never
// lost silently. A value without extended parameters is returned unchanged.
func (st *state) recodeExtendedParams(v string) string {
	if !strings.Contains(v, "*") {
		return v
	}
	pieces := splitParams(v)
	type segment struct {
		n        int
		extended bool
		value    string
	}
	segs := map[string][]segment{}
	first := map[string]int{} // the piece index of a name's first segment
	extended := map[string]bool{}
	for i, p := range pieces {
		if i == 0 {
			continue
		}
		attr, value, ok := strings.Cut(p, "=")
		if !ok {
			continue
		}
		attr = strings.ToLower(strings.TrimSpace(attr))
		name, rest, ok := strings.Cut(attr, "*")
		if !ok || name == "" {
			continue
		}
		s := segment{value: strings.TrimSpace(value)}
		switch {
		case rest == "":
			s.n, s.extended = -1, true // name*: the whole value, extended
		default:
			num, star := strings.CutSuffix(rest, "*")
			n, err := strconv.Atoi(num)
			if err != nil || n < 0 || n > 999 {
				continue
			}
			s.n, s.extended = n, star
		}
		if _, seen := first[name]; !seen {
			first[name] = i
		}
		segs[name] = append(segs[name], s)
		extended[name] = extended[name] || s.extended
	}
	if len(extended) == 0 {
		return v
	}
	replaced := map[int]string{}
	drop := map[int]bool{}
	for name, list := range segs {
		if !extended[name] {
			continue
		}
		slices.SortStableFunc(list, func(a, b segment) int { return cmp.Compare(a.n, b.n) })
		if list[0].n == -1 {
			list = list[:1] // name* wins over continuations of the same name
		}
		var raw []byte
		charset := ""
		for i, s := range list {
			if !s.extended {
				raw = append(raw, unquoteParam(s.value)...)
				continue
			}
			value := unquoteParam(s.value)
			if i == 0 {
				if cs, rest, ok := strings.Cut(value, "'"); ok {
					if _, rest, ok = strings.Cut(rest, "'"); ok {
						charset, value = cs, rest
					}
				}
			}
			raw = append(raw, percentDecode(value)...)
		}
		replaced[first[name]] = name + "*=utf-8''" + percentEncode(st.paramText(name, charset, raw))
	}
	for i, p := range pieces {
		if i == 0 {
			continue
		}
		attr, _, _ := strings.Cut(p, "=")
		name, _, ok := strings.Cut(strings.ToLower(strings.TrimSpace(attr)), "*")
		if ok && extended[name] {
			if _, keep := replaced[i]; !keep {
				drop[i] = true
			}
		}
	}
	var b strings.Builder
	for i, p := range pieces {
		switch {
		case drop[i]:
			continue
		case i > 0:
			b.WriteString("; ")
		}
		if r, ok := replaced[i]; ok {
			p = r
		}
		b.WriteString(strings.TrimSpace(p))
	}
	return b.String()
}

// paramText converts the bytes of an extended parameter from charset to UTF-8 (see
// recodeExtendedParams), recording what it cannot convert exactly.
func (st *state) paramText(name, charset string, raw []byte) string {
	cs := strings.ToLower(strings.TrimSpace(charset))
	switch cs {
	case "", "us-ascii", "ascii", "utf-8", "utf8":
		text, ok := validText(raw)
		if !ok {
			st.m.problem(ProblemHeader, "parameter %s*: bytes that are not UTF-8 in a %s value, read as windows-1252", name, or(cs, "charset-less"))
		}
		return text
	}
	if dec := lookupCharset(cs); dec != nil {
		if out, err := dec(raw); err == nil {
			text, _ := validText(out)
			return text
		}
	}
	text, _ := validText(raw)
	label, _ := validText([]byte(charset))
	st.m.problem(ProblemHeader, "parameter %s*: unknown charset %q; the value is read best-effort (bytes that are not UTF-8 as windows-1252)", name, oneLine(label))
	return text
}

// splitParams splits a header value at the semicolons outside quoted strings.
func splitParams(v string) []string {
	var out []string
	start, quoted, escaped := 0, false, false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case escaped:
			escaped = false
		case c == '\\' && quoted:
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ';' && !quoted:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

// unquoteParam returns a parameter value without its surrounding quotes and backslash escapes.
func unquoteParam(v string) string {
	v = strings.TrimSpace(v)
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return v
	}
	v = v[1 : len(v)-1]
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// percentDecode decodes %XX escapes; a "%" not followed by two hex digits stands for itself.
func percentDecode(s string) []byte {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if hi, lo := unhex(s[i+1]), unhex(s[i+2]); hi >= 0 && lo >= 0 {
				out = append(out, byte(hi<<4|lo))
				i += 2
				continue
			}
		}
		out = append(out, s[i])
	}
	return out
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
