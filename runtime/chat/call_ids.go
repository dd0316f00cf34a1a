package chat

import "fmt"

// UniqueCallIDs gives every call of one round (one assistant message's ToolCalls) an id that is
// non-empty and unique within the round, as Validate requires, in place, and reports how many
// it renamed. A call whose id is empty, or repeats the id of an earlier call of the round, is
// renamed "<id>_<k>" (k its 0-based index in the round; "call_<k>" for an empty id), then
// "<id>_<k>_2", "<id>_<k>_3", … while that name is taken. The first holder of a repeated id and
// every unique id keep theirs, so a well-formed round is untouched and renaming a renamed round
// changes nothing. The renaming adds only characters every model API takes in a call id
// ([A-Za-z0-9_]); an id's own characters are kept (adapters map the ones their API refuses).
//
// A runner renames a model's answer with it before any call runs and records the renamed ids;
// the history replay renames stored rounds with it, so both read the same ids.
func UniqueCallIDs(calls []ToolCall) int {
	renamed := 0
	for k := range calls {
		id := calls[k].ID
		if id != "" && callIndex(calls[:k], id) < 0 {
			continue // a unique id, or the first holder of a repeated one, keeps it
		}
		base := id
		if base == "" {
			base = "call"
		}
		name := fmt.Sprintf("%s_%d", base, k)
		for n := 2; callIndex(calls, name) >= 0; n++ {
			name = fmt.Sprintf("%s_%d_%d", base, k, n)
		}
		calls[k].ID = name
		renamed++
	}
	return renamed
}
