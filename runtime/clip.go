package runtime

import "unicode/utf8"

// truncationMarker is appended to text that Clip cut short. It is 12 characters long ("…"
// counts as one).
const truncationMarker = "…[truncated]"

const markerLen = 12 // utf8.RuneCountInString(truncationMarker)

// Clip returns s unchanged when it has at most limit characters (runes, not bytes); otherwise it
// returns the first limit-12 characters of s followed by "…[truncated]", so the result has
// exactly limit characters. It never splits a UTF-8 sequence. Invalid UTF-8 in s counts one character per invalid byte and is kept as is.
//
// A limit below the marker's length (12) cannot hold the marker: Clip then returns the first
// limit characters of s with no marker, and "" for limit <= 0.
func Clip(s string, limit int) string {
	if limit <= 0 {
		return ""
	}
	keep := limit - markerLen
	if keep < 0 {
		keep = limit
	}
	cut, over := clipCut(s, keep, limit)
	switch {
	case !over:
		return s
	case keep == limit:
		return s[:cut]
	}
	return s[:cut] + truncationMarker
}

// clipCut reports whether s has more than limit characters and, when it has, the byte offset
// at which its character number keep (counted from 0, keep <= limit) starts. It scans at most
// limit+1 characters and steps over ASCII eight bytes at a time: tool results are mostly ASCII
// JSON, and clipping them is the largest cost of replaying a history. Characters are counted as
// a range loop counts them (an invalid byte is one character).
func clipCut(s string, keep, limit int) (cut int, over bool) {
	if len(s) <= limit { // a string never has more characters than bytes
		return 0, false
	}
	n, i := 0, 0 // n characters lie before byte i
	for i < len(s) {
		if i+8 <= len(s) && word(s[i:i+8])&0x8080808080808080 == 0 {
			// Eight ASCII characters: n … n+7.
			if keep >= n && keep < n+8 {
				cut = i + keep - n
			}
			if limit < n+8 {
				return cut, true
			}
			n, i = n+8, i+8
			continue
		}
		if n == keep {
			cut = i
		}
		if n == limit {
			return cut, true
		}
		if s[i] < utf8.RuneSelf {
			i++
		} else {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
		}
		n++
	}
	return 0, false
}

// word returns the first 8 bytes of s as a little-endian word; the compiler turns the shifts
// into one 8-byte load, as binary.LittleEndian.Uint64 does for a byte slice.
func word(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
