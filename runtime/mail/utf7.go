package mail

import (
	"unicode/utf16"
	"unicode/utf8"
)

// utf7Names are the IANA names of UTF-7 (RFC 2152), lower-cased: golang.org/x/text's index knows
// them but has no decoder, so this package decodes UTF-7 itself (decodeUTF7). IMAP's modified
// UTF-7 (UTF-7-IMAP) is a different encoding and not mail's.
var utf7Names = map[string]bool{"utf-7": true, "utf7": true, "csutf7": true, "unicode-1-1-utf-7": true, "csunicode11utf7": true}

// decodeUTF7 converts UTF-7 (RFC 2152) to UTF-8: ASCII stands for itself; "+" opens a run of
// modified base64 (no padding) holding UTF-16, closed by the first character outside the
// base64 alphabet (a closing "-" is dropped), and "+-" is "+". What is not valid UTF-7 — an
// 8-bit byte, an unpaired surrogate — becomes U+FFFD; it never fails.
func decodeUTF7(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c >= utf8.RuneSelf:
			out = utf8.AppendRune(out, utf8.RuneError)
			i++
			continue
		case c != '+':
			out = append(out, c)
			i++
			continue
		}
		i++ // the "+"
		if i < len(b) && b[i] == '-' {
			out = append(out, '+')
			i++
			continue
		}
		var units []uint16
		var bits uint32
		n := 0
		for ; i < len(b); i++ {
			v := base64Value(b[i])
			if v < 0 {
				break
			}
			bits = bits<<6 | uint32(v)
			if n += 6; n >= 16 {
				n -= 16
				units = append(units, uint16(bits>>n))
				bits &= 1<<n - 1
			}
		}
		if i < len(b) && b[i] == '-' {
			i++
		}
		for _, r := range utf16.Decode(units) {
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

// base64Value returns the value of c in the standard base64 alphabet, -1 outside it.
func base64Value(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}
