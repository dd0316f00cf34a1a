package strict

import "regexp"

// callIDPattern is the form of a tool call id every server takes: Anthropic's documented
// pattern for tool_use ids, which the adapters keep on all three APIs.
var callIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// The longest call id each server takes: Chat Completions' documented 40; 64 for the other two,
// the adapters' assumption (the APIs document no limit).
const (
	maxAnthropicCallID = 64
	maxChatCallID      = 40
	maxResponsesCallID = 64
)

// The call-id rules' messages.
const (
	AnToolUseID       = "tool_use ids must match ^[a-zA-Z0-9_-]+$ and have at most 64 characters"
	AnDuplicateID     = "tool_use ids must be unique"
	OaCallIDTooLong   = "string too long: a tool call id has at most %d characters"
	OaCallIDPattern   = "a tool call id must match ^[a-zA-Z0-9_-]+$"
	OaDuplicateCallID = "tool call ids must be unique within the request"
)

// anCallID checks one tool_use id or tool_use_id.
func anCallID(path, id string) error {
	if !callIDPattern.MatchString(id) || len(id) > maxAnthropicCallID {
		return fail(path, "%s, got %q", AnToolUseID, id)
	}
	return nil
}

// oaCallID checks one Chat Completions or Responses call id under max.
func oaCallID(path, id string, max int) error {
	if len(id) > max {
		return fail(path, OaCallIDTooLong+", got %d", max, len(id))
	}
	if !callIDPattern.MatchString(id) {
		return fail(path, "%s, got %q", OaCallIDPattern, id)
	}
	return nil
}

// uniqueIDs returns the path of the first id of ids that an earlier one repeats, or "".
func uniqueIDs(ids []string, paths []string) (string, string) {
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if seen[id] {
			return paths[i], id
		}
		seen[id] = true
	}
	return "", ""
}

func duplicate(path, msg, id string) error { return fail(path, "%s: %s", msg, id) }
