package turns

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// The longest tool call id each API takes. Chat Completions refuses a longer tool_calls[].id
// or tool_call_id with "string too long. Expected a string with maximum length 40". The
// Messages API documents only the pattern ^[a-zA-Z0-9_-]+$ and the Responses API no limit at
// all; 64 is an assumption for both (the APIs' own ids are about 30 characters, and 64 is the
// limit gateways in front of OpenAI report for call_id).
const (
	MaxAnthropicCallID = 64
	MaxChatCallID      = 40
	MaxResponsesCallID = 64
)

// hashLen is the length of the hash a renamed id ends in (hex digits of SHA-256).
const hashLen = 10

// IDs holds the ids a request sends for its tool calls and results (see CallIDs). The zero
// IDs sends every id unchanged.
type IDs struct {
	byTurn [][]string // per turn: the wire id of each call (Assistant) or result (Results)
}

// Of returns the id to send for call or result k of turn i, whose id in the messages is orig.
func (m IDs) Of(i, k int, orig string) string {
	if m.byTurn == nil || m.byTurn[i] == nil {
		return orig
	}
	return m.byTurn[i][k]
}

// ValidCallID reports whether id is one every adapter sends unchanged under the limit max: 1
// to max characters of [A-Za-z0-9_-] (Anthropic's pattern; the OpenAI APIs take these too).
func ValidCallID(id string, max int) bool {
	if id == "" || len(id) > max {
		return false
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return false
		}
	}
	return true
}

func idByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// CallIDs returns the ids to send for the calls and results of ts (as Normalize returns them)
// to an API that takes ValidCallID ids of at most max characters, unique within the request.
// Calls are taken in request order: a call keeps its id when it is valid and no earlier call
// of the request was sent with it; otherwise it is renamed "<its valid characters, cut to
// fit>_<10 hex digits of SHA-256 of the id>" ("call_<hash>" when no character is valid), and
// while that name is taken, hashes of "<id>\x00<n>" for n = 1, 2, … are tried. A result is
// sent with the id of the call it answers in the turn before it. So the ids depend on the
// messages alone (a request is byte-for-byte the same for the same history), the id a call gets
// depends only on the calls before it (a longer conversation keeps the ids of its start, and
// the provider's prompt cache still hits), well-formed unique ids are unchanged, and no two
// calls of a request share an id.
func CallIDs(ts []Turn, max int) IDs {
	if callIDsFit(ts, max) {
		return IDs{}
	}
	calls, results := 0, 0
	for _, t := range ts {
		calls += len(t.Calls)
		results += len(t.Results)
	}
	flat := make([]string, 0, calls+results)
	used := make(map[string]bool, calls)
	m := IDs{byTurn: make([][]string, len(ts))}
	var round []string // the wire ids of the last Assistant turn's calls
	var roundTurn Turn
	for i, t := range ts {
		switch {
		case t.Kind == Assistant && len(t.Calls) > 0:
			start := len(flat)
			for _, c := range t.Calls {
				id := c.ID
				if !ValidCallID(id, max) || used[id] {
					id = renamed(c.ID, max, used)
				}
				used[id] = true
				flat = append(flat, id)
			}
			round = flat[start:len(flat):len(flat)]
			roundTurn = t
			m.byTurn[i] = round
		case t.Kind == Results:
			start := len(flat)
			for _, r := range t.Results {
				id := r.CallID
				for k, c := range roundTurn.Calls {
					if c.ID == r.CallID {
						id = round[k]
						break
					}
				}
				flat = append(flat, id)
			}
			m.byTurn[i] = flat[start:len(flat):len(flat)]
		}
	}
	return m
}

// callIDsFit reports whether every call id of ts is valid under max and unique in the request,
// the common case, in which nothing is renamed.
func callIDsFit(ts []Turn, max int) bool {
	n := 0
	for _, t := range ts {
		for _, c := range t.Calls {
			if !ValidCallID(c.ID, max) {
				return false
			}
			n++
		}
	}
	if n <= 16 {
		var buf [16]string
		seen := buf[:0]
		for _, t := range ts {
			for _, c := range t.Calls {
				for _, s := range seen {
					if s == c.ID {
						return false
					}
				}
				seen = append(seen, c.ID)
			}
		}
		return true
	}
	seen := make(map[string]struct{}, n)
	for _, t := range ts {
		for _, c := range t.Calls {
			if _, dup := seen[c.ID]; dup {
				return false
			}
			seen[c.ID] = struct{}{}
		}
	}
	return true
}

// renamed returns the first name of the renaming scheme (see CallIDs) for id that used does
// not hold.
func renamed(id string, max int, used map[string]bool) string {
	keep := make([]byte, 0, max)
	for i := 0; i < len(id) && len(keep) < max-1-hashLen; i++ {
		if idByte(id[i]) {
			keep = append(keep, id[i])
		}
	}
	if len(keep) == 0 {
		keep = append(keep, "call"...)
	}
	keep = append(keep, '_')
	for n := 0; ; n++ {
		in := id
		if n > 0 {
			in = id + "\x00" + strconv.Itoa(n)
		}
		sum := sha256.Sum256([]byte(in))
		name := string(keep) + hex.EncodeToString(sum[:])[:hashLen]
		if !used[name] {
			return name
		}
	}
}
