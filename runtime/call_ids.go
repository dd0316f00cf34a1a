package runtime

import (
	"fmt"
	"slices"

	"github.com/personagen/personagen/runtime/chat"
)

// uniqueCallIDs gives every call of a replayed round an id that is non-empty and unique within
// the round, as Validate requires: a call whose stored id is empty, or repeats the id of an
// earlier call of the round, is renamed "<id>_<k>" (k its 0-based index in the round; "call_<k>"
// for an empty id), then "<id>_<k>_2", "<id>_<k>_3", … while that name is taken. The renaming
// adds only characters every model API takes in a call id ([A-Za-z0-9_]); a stored id's own
// characters are kept, and each adapter maps an id its API refuses (see runtime/provider).
// Well-formed rounds are untouched. The round's tool messages use the same names.
func uniqueCallIDs(calls []chat.ToolCall) {
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
	}
}

// callIndex returns the index of the call with id in calls, or -1.
func callIndex(calls []chat.ToolCall, id string) int {
	return slices.IndexFunc(calls, func(c chat.ToolCall) bool { return c.ID == id })
}
