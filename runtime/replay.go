package runtime

import (
	"encoding/json"
	"unsafe"

	"github.com/personagen/personagen/runtime/history"
)

// noResultText is the content of the tool message replayed for a call whose source recorded no
// result (ToolUse.HasResult false). A round is always replayed whole: every call of it gets a
// tool message, so the model API never sees a call without its answer.
const noResultText = "[no result was recorded for this call]"

// AppendReplay appends the replay of msgs (oldest first, as a history.Source returns them) to dst
// and returns the extended slice; it is the rendering half of Resolve, and what SummarizerFunc
// shows a summarizer. Per message: its turn, then, unless h.SkipToolCalls, its tool rounds.
//
// A message's turn is a user message (inbound) or an assistant message (outbound) holding the
// message as a self-describing text: five header lines (From, To, Cc, Date in UTC, Subject;
// "Name:" alone when empty, line breaks inside a value turned into spaces), a blank line, the
// body (Text trimmed, or the text of HTML when Text is blank), and one line per attachment
// ("[attachment: report.pdf (application/pdf, 1234 bytes, id att-1)]"). A message with neither
// a body nor attachments gives no turn; its rounds are still replayed.
//
// A round is the ToolUses sharing (RunID, TurnIndex). Rounds replay in the order they were
// recorded (the smallest Seq of each round first, then TurnIndex; run ids are never compared
// as text), whatever order the source gave, and the calls of a round by Position. Each round is
// one assistant message (empty text) with one ToolCall per use — ID ToolCallID, Name ToolName,
// Input the stored Arguments when they are a JSON object, {} when they are blank, and otherwise
// {"_clipped_arguments": "<the stored text>"} — then one tool message per use, in the same
// order: the result clipped to h.ReplayResultLimit characters (ending in "…[truncated]"), or
// "[no result was recorded for this call]" when the source recorded none. A ToolCallID that is
// empty or repeats an earlier one of the same round is renamed "<id>~<k>" ("call~<k>" when
// empty; k the use's 0-based index in the round), in the call and its tool message alike, so
// the output always satisfies Validate. A ReplayResultLimit below NoLimit means 4,000 here.
//
// The output depends on msgs alone: no clock, no map order, no state.
func (h *ThreadHistory) AppendReplay(dst []Message, msgs []history.Message) []Message {
	limit := h.ReplayResultLimit
	if limit == 0 || limit < NoLimit {
		limit = defaultReplayResultLimit
	}
	var uses []history.ToolUse
	for i := range msgs {
		m := &msgs[i]
		if text, ok := turnText(m); ok {
			role := RoleUser
			if m.Direction == history.Outbound {
				role = RoleAssistant
			}
			dst = append(dst, Message{Role: role, Text: text})
		}
		if h.SkipToolCalls || len(m.ToolUses) == 0 {
			continue
		}
		uses = append(uses[:0], m.ToolUses...)
		sortToolUses(uses)
		for start := 0; start < len(uses); {
			end := start + 1
			for end < len(uses) && sameRound(uses[start], uses[end]) {
				end++
			}
			dst = appendRound(dst, uses[start:end], limit)
			start = end
		}
	}
	return dst
}

// appendRound appends one round: the assistant message with its calls, then a tool message per
// call.
func appendRound(dst []Message, round []history.ToolUse, limit int) []Message {
	calls := make([]ToolCall, len(round))
	// Where each result is cut (-1: replayed whole), found once: counting characters is the
	// largest cost of a replay.
	var cutsBuf [8]int
	cuts := cutsBuf[:0]
	n := 0
	for _, u := range round {
		n += len(u.Arguments) + len(clippedArgumentsKey) + 8 // room to wrap a payload
		cut := -1
		if u.HasResult && limit >= markerLen {
			if c, ok := clipCut(u.Result, limit-markerLen, limit); ok {
				cut = c
				n += c + len(truncationMarker)
			}
		}
		cuts = append(cuts, cut)
	}
	// The round's inputs and clipped results share one buffer, each a full slice expression (or
	// a string) over its own part, so no append can reach a neighbour.
	arena := make([]byte, 0, n)
	for i, u := range round {
		var in json.RawMessage
		in, arena = appendReplayInput(arena, u.Arguments)
		calls[i] = ToolCall{ID: u.ToolCallID, Name: u.ToolName, Input: in}
	}
	uniqueCallIDs(calls)
	dst = append(dst, Message{Role: RoleAssistant, ToolCalls: calls})
	for i, u := range round {
		text := noResultText
		switch {
		case !u.HasResult:
		case cuts[i] >= 0:
			start := len(arena)
			arena = append(arena, u.Result[:cuts[i]]...)
			arena = append(arena, truncationMarker...)
			// The bytes are never written again (later appends go past them), so they can be
			// a string without a copy. A string of its own per round costs 20 of the 121
			// allocations of a request in bench/assembly; this is the replay's one unsafe use.
			b := arena[start:]
			text = unsafe.String(unsafe.SliceData(b), len(b))
		case limit != NoLimit && limit < markerLen:
			text = Clip(u.Result, limit)
		default:
			text = u.Result
		}
		dst = append(dst, ToolMessage(calls[i].ID, text))
	}
	return dst
}
