package runtime

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzReplayInputMatchesEncodingJSON pins replayInput (a payload validated in the round's
// buffer, the wrapping through pooled encoders) against the rule written plainly with
// encoding/json: the stored bytes when they are a JSON object, "{}" when blank, else
// {"_clipped_arguments": <the payload as encoding/json writes a string, without HTML escaping>}.
func FuzzReplayInputMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", " ", "{}", `{"a":1}`, `{"a":` + "…[truncated]", "x\u2028y\x01\"\\<>&\xff", "[1]", "\t{\"a\":1}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := replayInput(s), referenceReplayInput(s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func referenceReplayInput(args string) []byte {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return []byte("{}")
	}
	if trimmed[0] == '{' && json.Valid([]byte(trimmed)) {
		return []byte(args)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(args) // encoding a string cannot fail
	return append(append([]byte(`{"`+clippedArgumentsKey+`":`), bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...), '}')
}
