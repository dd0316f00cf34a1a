package runtime

import "fmt"

// uniqueCallIDs gives every call of a replayed round an id that is non-empty and unique within
// the round, as Validate requires: a call whose stored id is empty, or repeats the id of an
// earlier call of the round, is renamed "<id>~<k>" (k its 0-based index in the round; "call~<k>"
// for an empty id), then "<id>~<k>~2", "<id>~<k>~3", … while that name is taken. Well-formed
// rounds are untouched. The round's tool messages use the same names.
func uniqueCallIDs(calls []ToolCall) {
	for k := range calls {
		id := calls[k].ID
		if id != "" && callIndex(calls[:k], id) < 0 {
			continue // a unique id, or the first holder of a repeated one, keeps it
		}
		base := id
		if base == "" {
			base = "call"
		}
		name := fmt.Sprintf("%s~%d", base, k)
		for n := 2; callIndex(calls, name) >= 0; n++ {
			name = fmt.Sprintf("%s~%d~%d", base, k, n)
		}
		calls[k].ID = name
	}
}
