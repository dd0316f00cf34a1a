package turns

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/personagen/personagen/runtime/provider"
)

// maxBodyShown is how many bytes of a body a malformed-answer error shows.
const maxBodyShown = 200

// Field is a field's raw JSON as a malformed-answer error shows it: "missing" when it was
// absent (raw is ""), else raw cut to its first 40 bytes and "…".
func Field(raw string) string {
	if raw == "" {
		return "missing"
	}
	if len(raw) > 40 {
		return raw[:40] + "…"
	}
	return raw
}

// Malformed returns the error for an answer whose body is not what (the name of the API's
// answer object): "<provider.ErrMalformedResponse>: the body is not <what> (<reason>); body
// <its first 200 bytes, quoted>", wrapping provider.ErrMalformedResponse. An empty or
// white-space body shows as "empty body". The adapter adds its name: a mapping function as a
// prefix, Generate as the chat.CallError's Provider.
func Malformed(what, body, reason string) error {
	shown := "empty body"
	if strings.TrimSpace(body) != "" {
		cut := body
		if len(cut) > maxBodyShown {
			cut = cut[:maxBodyShown] // a rune cut in two shows as \x escapes
		}
		shown = "body " + strconv.Quote(cut)
		if len(cut) < len(body) {
			shown += fmt.Sprintf(" … (%d bytes)", len(body))
		}
	}
	return fmt.Errorf("%w: the body is not %s (%s); %s", provider.ErrMalformedResponse, what, reason, shown)
}

// IsObject reports whether raw (a decoded answer's raw JSON) is a JSON object.
func IsObject(raw string) bool {
	t := strings.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// TypeOf shows the raw JSON of a "type" field for an error: "no type" when it was absent,
// otherwise "type <raw>" (cut at 40 bytes).
func TypeOf(raw string) string {
	if raw == "" {
		return "no type"
	}
	if len(raw) > 40 {
		raw = raw[:40] + "…"
	}
	return "type " + raw
}
