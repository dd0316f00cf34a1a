package chat

import "fmt"

// The rules Validate checks, one text per way a list can break them; PairingError.Problem is
// one of these.
const (
	// problemUnknownRole: a message's Role is not one of the four roles.
	problemUnknownRole = "unknown role"
	// problemToolFirst: the list starts with a tool message.
	problemToolFirst = "tool message stands first"
	// problemNoCallID: a tool message has an empty ToolCallID.
	problemNoCallID = "tool message without a call id"
	// problemOrphanResult: a tool message answers no call of the round it stands in (there is
	// no open round, or the open round has no call with that id).
	problemOrphanResult = "tool result without a matching call in its round"
	// problemDuplicateResult: a second tool message answers the same call of one round.
	problemDuplicateResult = "second tool result for one call"
	// problemMissingResult: a round ends (a user, system or plain assistant message, or the end
	// of the list) before every call of it has a result.
	problemMissingResult = "tool call without a result"
	// problemSplitRound: an assistant message with tool calls comes before the previous round
	// has all its results, so one round's results would be split across assistant messages.
	problemSplitRound = "round split across assistant messages"
	// problemDuplicateCall: one round (one assistant message) calls the same id twice.
	problemDuplicateCall = "duplicate tool call id in one round"
	// problemEmptyCall: an assistant message holds a tool call with an empty ID.
	problemEmptyCall = "tool call without an id"
	// problemCallsOnNonAssistant: a message whose role is not assistant has ToolCalls.
	problemCallsOnNonAssistant = "tool calls on a non-assistant message"
	// problemCallIDOnNonTool: a message whose role is not tool has a ToolCallID.
	problemCallIDOnNonTool = "tool call id on a non-tool message"
)

// PairingError is the error Validate returns for the first message that breaks the pairing
// invariant. Index is that message's 0-based index in the list (for problemMissingResult, the
// assistant message whose call has no result). ID is the tool call id concerned ("" when the
// rule concerns none). Round is the index of the assistant message that opened the round
// concerned, or -1 when there is none. End, for a missing result and a split round, is
// the index of the message that ended the round early, or -1 when the list ended first (and
// for every other problem).
type PairingError struct {
	Index   int
	ID      string
	Round   int
	End     int
	Problem string
}

// Error renders the problem with its indexes and id, for example
// `message 3: tool result without a matching call in its round (id "c9", round opened at message 1)`.
func (e *PairingError) Error() string {
	s := fmt.Sprintf("message %d: %s", e.Index, e.Problem)
	switch e.Problem {
	case problemMissingResult:
		end := fmt.Sprintf("message %d", e.End)
		if e.End < 0 {
			end = "the end of the list"
		}
		return s + fmt.Sprintf(" (id %q has no result before %s)", e.ID, end)
	case problemSplitRound:
		return s + fmt.Sprintf(" (the round opened at message %d still waits for id %q)", e.Round, e.ID)
	}
	switch {
	case e.ID != "" && e.Round >= 0:
		return s + fmt.Sprintf(" (id %q, round opened at message %d)", e.ID, e.Round)
	case e.ID != "":
		return s + fmt.Sprintf(" (id %q)", e.ID)
	}
	return s
}

// Validate checks the pairing invariant of a message list, which every model API enforces in
// some form: an assistant message with tool calls opens a round, and the tool messages
// that directly follow it answer its calls, one result per call in any order, until every call
// has its result. Nothing else may stand inside a round, no round may be left partial, and no
// tool message may stand outside one. Call ids must be unique within a round; the same id in two
// different rounds is legal. ToolCalls belong to assistant messages only and ToolCallID to tool
// messages only.
//
// Validate returns nil for a valid list (an empty list included) and otherwise a *PairingError
// for the first violation in list order. It never panics and does not modify msgs.
func Validate(msgs []Message) error {
	round := -1     // index of the assistant message whose round is open, -1 when none
	var open []bool // open[k] is true once call k of the open round has its result
	waiting := 0    // calls of the open round still without a result
	firstWaiting := func() string {
		for k, done := range open {
			if !done {
				return msgs[round].ToolCalls[k].ID
			}
		}
		return ""
	}
	fail := func(i int, id string, r int, p string) error {
		return &PairingError{Index: i, ID: id, Round: r, End: -1, Problem: p}
	}
	for i, m := range msgs {
		if !m.Role.Valid() {
			return fail(i, "", -1, problemUnknownRole)
		}
		if m.Role != RoleAssistant && len(m.ToolCalls) > 0 {
			return fail(i, m.ToolCalls[0].ID, -1, problemCallsOnNonAssistant)
		}
		if m.Role != RoleTool && m.ToolCallID != "" {
			return fail(i, m.ToolCallID, -1, problemCallIDOnNonTool)
		}
		if m.Role == RoleTool {
			switch {
			case i == 0:
				return fail(i, m.ToolCallID, -1, problemToolFirst)
			case m.ToolCallID == "":
				return fail(i, "", round, problemNoCallID)
			case round < 0:
				return fail(i, m.ToolCallID, -1, problemOrphanResult)
			}
			k := callIndex(msgs[round].ToolCalls, m.ToolCallID)
			switch {
			case k < 0:
				return fail(i, m.ToolCallID, round, problemOrphanResult)
			case open[k]:
				return fail(i, m.ToolCallID, round, problemDuplicateResult)
			}
			open[k] = true
			if waiting--; waiting == 0 {
				round, open = -1, open[:0]
			}
			continue
		}
		// Any other message ends the open round; it must be complete by now.
		if round >= 0 && waiting > 0 {
			if m.Role == RoleAssistant && len(m.ToolCalls) > 0 {
				return &PairingError{Index: i, ID: firstWaiting(), Round: round, End: i, Problem: problemSplitRound}
			}
			return &PairingError{Index: round, ID: firstWaiting(), Round: round, End: i, Problem: problemMissingResult}
		}
		round, open = -1, open[:0]
		if m.Role != RoleAssistant || len(m.ToolCalls) == 0 {
			continue
		}
		if id, dup := duplicateCall(m.ToolCalls); dup {
			if id == "" {
				return fail(i, "", i, problemEmptyCall)
			}
			return fail(i, id, i, problemDuplicateCall)
		}
		round, waiting = i, len(m.ToolCalls)
		for range m.ToolCalls {
			open = append(open, false)
		}
	}
	if round >= 0 {
		return &PairingError{Index: round, ID: firstWaiting(), Round: round, End: -1, Problem: problemMissingResult}
	}
	return nil
}

// duplicateCall reports the first call whose ID is empty or repeats an earlier call's ID.
func duplicateCall(calls []ToolCall) (string, bool) {
	var seen map[string]bool
	if len(calls) > 16 { // rounds are small; avoid a map unless one is large
		seen = make(map[string]bool, len(calls))
	}
	for k, c := range calls {
		if c.ID == "" {
			return "", true
		}
		if seen != nil {
			if seen[c.ID] {
				return c.ID, true
			}
			seen[c.ID] = true
		} else if callIndex(calls[:k], c.ID) >= 0 {
			return c.ID, true
		}
	}
	return "", false
}

// callIndex returns the index of the call with the given id in calls, or -1.
func callIndex(calls []ToolCall, id string) int {
	for k, c := range calls {
		if c.ID == id {
			return k
		}
	}
	return -1
}
