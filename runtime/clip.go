package runtime

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
	if len(s) <= limit { // a string never has more characters than bytes
		return s
	}
	keep := limit - markerLen
	if keep < 0 {
		keep = limit
	}
	n, cut := 0, 0
	for i := range s { // ranges over characters; an invalid byte counts as one
		if n == keep {
			cut = i
		}
		if n == limit { // s has more than limit characters
			if keep == limit {
				return s[:cut]
			}
			return s[:cut] + TruncationMarker
		}
		n++
	}
	return s
}
