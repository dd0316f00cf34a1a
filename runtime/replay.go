package runtime

import (
	"encoding/json"
	"strings"

	"github.com/personagen/personagen/runtime/chat"
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
// "[no result was recorded for this call]" when the source recorded none; a result the source
// recorded as failed (Succeeded false) is an error result (IsError), as the run sent it. A ToolCallID that is
// empty or repeats an earlier one of the same round is renamed "<id>_<k>" ("call_<k>" when
// empty; k the use's 0-based index in the round), in the call and its tool message alike, so
// the output always satisfies Validate; the renaming adds only characters every model API
// takes in a call id. A ReplayResultLimit below NoLimit means 4,000 here.
//
// The output depends on msgs alone: no clock, no map order, no state. It costs a handful of
// allocations whatever the number of messages: every text it renders (the turns and the
// clipped results) lies in one string arena, every call input in one byte arena, every call in
// one slice; unclipped results are the source's own strings.
func (h *ThreadHistory) AppendReplay(dst []chat.Message, msgs []history.Message) []chat.Message {
	limit := h.ReplayResultLimit
	if limit == 0 || limit < NoLimit {
		limit = defaultReplayResultLimit
	}
	// First the sizes, and where each result is cut (-1: replayed whole), found once and in
	// replay order: counting characters is the largest cost of a replay.
	var scratch []history.ToolUse // a message's uses, sorted, when the source's order is not the replay's
	var cutsBuf [128]int
	cuts := cutsBuf[:0]
	nText, nInput, nCalls, nSpans := 0, 0, 0, 0
	for i := range msgs {
		m := &msgs[i]
		nText += turnTextSize(m)
		nSpans++
		if h.SkipToolCalls {
			continue
		}
		for _, u := range replayOrder(m.ToolUses, &scratch) {
			nCalls++
			nInput += len(u.Arguments) + len(clippedArgumentsKey) + 8 // room to wrap a payload
			cut := -1
			if u.HasResult && limit >= markerLen {
				if c, ok := clipCut(u.Result, limit-markerLen, limit); ok {
					cut = c
					nText += c + len(truncationMarker)
					nSpans++
				}
			}
			cuts = append(cuts, cut)
		}
	}

	// The arenas. Texts are written to text and become substrings of its final contents at
	// the end (spans say where each lies), so the builder may grow on the way; inputs are full
	// slice expressions over their own part of inputs, so no append can reach a neighbour.
	var text strings.Builder
	text.Grow(nText)
	inputs := make([]byte, 0, nInput)
	calls := make([]chat.ToolCall, 0, nCalls)
	type span struct{ msg, start, end int } // dst[msg].Text is text[start:end]
	spans := make([]span, 0, nSpans)
	for i := range msgs {
		m := &msgs[i]
		start := text.Len()
		if writeTurnText(&text, m) {
			role := chat.RoleUser
			if m.Direction == history.Outbound {
				role = chat.RoleAssistant
			}
			// Without the last block's line break, which stays in the arena unused.
			spans = append(spans, span{len(dst), start, text.Len() - 1})
			dst = append(dst, chat.Message{Role: role})
		}
		if h.SkipToolCalls || len(m.ToolUses) == 0 {
			continue
		}
		uses := replayOrder(m.ToolUses, &scratch)
		for start := 0; start < len(uses); {
			end := start + 1
			for end < len(uses) && sameRound(uses[start], uses[end]) {
				end++
			}
			round := uses[start:end]
			first := len(calls)
			for _, u := range round {
				var in json.RawMessage
				in, inputs = appendReplayInput(inputs, u.Arguments)
				calls = append(calls, chat.ToolCall{ID: u.ToolCallID, Name: u.ToolName, Input: in})
			}
			rc := calls[first:len(calls):len(calls)]
			chat.UniqueCallIDs(rc)
			dst = append(dst, chat.Message{Role: chat.RoleAssistant, ToolCalls: rc})
			for k, u := range round {
				cut := cuts[0]
				cuts = cuts[1:]
				msg := chat.ToolMessage(rc[k].ID, u.Result)
				msg.IsError = u.HasResult && !u.Succeeded
				switch {
				case !u.HasResult:
					msg.Text = noResultText
				case cut >= 0:
					s := text.Len()
					text.WriteString(u.Result[:cut])
					text.WriteString(truncationMarker)
					spans = append(spans, span{len(dst), s, text.Len()})
					msg.Text = ""
				case limit != NoLimit && limit < markerLen:
					msg.Text = Clip(u.Result, limit)
				}
				dst = append(dst, msg)
			}
			start = end
		}
	}
	all := text.String() // the builder's bytes, not a copy
	for _, s := range spans {
		dst[s.msg].Text = all[s.start:s.end]
	}
	return dst
}
