package runtime

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"
)

// TruncationMarker is appended to text that Clip cut short (protege's TRUNCATION_MARKER, seed
// 003). It is 12 characters long ("…" counts as one).
const TruncationMarker = "…[truncated]"

const markerLen = 12 // utf8.RuneCountInString(TruncationMarker)

// Clip returns s unchanged when it has at most limit characters (runes, not bytes); otherwise it
// returns the first limit-12 characters of s followed by TruncationMarker, so the result has
// exactly limit characters (protege's ToolUse.clip, seed 003). It never splits a UTF-8
// sequence. Invalid UTF-8 in s counts one character per invalid byte and is kept as is.
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
	return s[:cut] + TruncationMarker
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
	const hi = 0x8080808080808080
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	n, i := 0, 0                                    // n characters lie before byte i
	for i < len(b) {
		if i+8 <= len(b) && binary.LittleEndian.Uint64(b[i:])&hi == 0 {
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
		if b[i] < utf8.RuneSelf {
			i++
		} else {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
		}
		n++
	}
	return 0, false
}
