package runtime

import (
	"encoding/json"
	"strings"
	"sync"
)

// clippedArgumentsKey is the only key of the JSON object that replaces a stored argument
// payload that is not a JSON object (typically one clipped when it was recorded), so that a
// replayed ToolCall.Input is always an object.
const clippedArgumentsKey = "_clipped_arguments"

// clippedArguments is the object a payload that is not a JSON object replays as.
type clippedArguments struct {
	Arguments string `json:"_clipped_arguments"`
}

// appendReplayInput appends to arena the ToolCall.Input replayed for a stored argument payload
// and returns it, a slice of arena capped at its own end, with the grown arena: the stored
// bytes as they are when they form a JSON object, "{}" (not in arena) when the payload is empty
// or blank, and otherwise {"_clipped_arguments": "<payload>"}, encoded by encoding/json without
// HTML escaping (invalid UTF-8 becomes U+FFFD).
func appendReplayInput(arena []byte, args string) (json.RawMessage, []byte) {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return json.RawMessage("{}"), arena
	}
	start := len(arena)
	// A JSON object ends with '}': a clipped payload (ending in the truncation marker) is
	// wrapped without paying for json.Valid's error.
	if trimmed[0] == '{' && trimmed[len(trimmed)-1] == '}' {
		arena = append(arena, args...)
		if json.Valid(arena[start:]) {
			return arena[start:len(arena):len(arena)], arena
		}
		arena = arena[:start]
	}
	arena = wrapArguments(arena, args)
	return arena[start:len(arena):len(arena)], arena
}

// argumentEncoders reuses the encoders that wrap payloads, so a replay allocates no encoder per
// wrapped payload.
var argumentEncoders = sync.Pool{New: func() any {
	w := &appendWriter{}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return &argumentEncoder{w: w, enc: enc}
}}

type argumentEncoder struct {
	w   *appendWriter
	enc *json.Encoder
	v   clippedArguments // encoded through a pointer, so no value is boxed per payload
}

// appendWriter is an io.Writer appending to a byte slice.
type appendWriter struct{ b []byte }

// Write appends p; it never fails.
func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// wrapArguments appends {"_clipped_arguments":"<args>"} to b.
func wrapArguments(b []byte, args string) []byte {
	e := argumentEncoders.Get().(*argumentEncoder)
	e.w.b = b
	e.v.Arguments = args
	_ = e.enc.Encode(&e.v)   // a struct of one string always encodes
	b = e.w.b[:len(e.w.b)-1] // Encode's newline
	e.w.b, e.v.Arguments = nil, ""
	argumentEncoders.Put(e)
	return b
}

// replayInput is appendReplayInput with no arena.
func replayInput(args string) json.RawMessage {
	in, _ := appendReplayInput(nil, args)
	return in
}
