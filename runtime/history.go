package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/personagen/personagen/runtime/history"
)

// NoLimit, as ThreadHistory.Limit, replays the whole thread; as ThreadHistory.ReplayResultLimit,
// replays every tool result unclipped. It is [history.NoLimit]: one convention for every limit.
const NoLimit = history.NoLimit

// DefaultReplayResultLimit is the number of characters (runes) a replayed tool result is clipped
// to when ThreadHistory.ReplayResultLimit is 0 (protege's REPLAY_RESULT_LIMIT, seed 000).
const DefaultReplayResultLimit = 4000

// ClippedArgumentsKey is the only key of the JSON object that replaces a stored argument payload
// that is not a JSON object (typically one clipped when it was recorded): the replayed call's
// Input is {"_clipped_arguments": "<the stored text>"}, so ToolCall.Input is always an object.
const ClippedArgumentsKey = "_clipped_arguments"

// NoResultText is the content of the tool message replayed for a call whose source recorded no
// result (ToolUse.HasResult false). A round is always replayed whole: every call of it gets a
// tool message, so the model API never sees a call without its answer.
const NoResultText = "[no result was recorded for this call]"

// ErrNoHistorySource is returned (wrapped) by ThreadHistory and ThreadSummary when their Source
// is nil during a reply run.
var ErrNoHistorySource = errors.New("no history source")

// ErrInvalidHistoryOption is returned (wrapped) by ThreadHistory for a Limit or
// ReplayResultLimit below NoLimit, and by ThreadSummary for an invalid Role.
var ErrInvalidHistoryOption = errors.New("invalid history option")

// ThreadHistory is the thread_history resolver (protege's ThreadHistoryResolver, seed 000): it
// replays the earlier messages of the inbound message's thread, and the tool rounds recorded for
// them, as conversation turns.
//
// It needs inv.Inbound: in a scheduled run (no Inbound), or for an Inbound with an empty
// ThreadID, it contributes nothing. The message being answered (inv.Inbound.MessageID) is left
// out; it arrives as the request's trailing user message. When it is stored (inv.Inbound.Seq >
// 0), only the messages the source received before it are replayed: one that arrived while the
// run was pending belongs to a later run. The replay is, in the order the source
// received them (never by the senders' Date headers), the most recent Limit messages, each as one turn — inbound
// as a user message, outbound as an assistant message — rendered by HistoryText; a message with
// neither a body nor attachments contributes no turn. Unless SkipToolCalls is set, each
// message's recorded tool rounds follow it (even when its own turn was skipped): per round one
// assistant message with empty text that holds all the calls of the round, followed by a tool
// message for each call with its result clipped by Clip to ReplayResultLimit characters. See AppendReplay for the
// exact rules on arguments, missing results and order.
//
// With a ThreadSummary for the same Source earlier in the chain that emitted a summary, only
// messages after that compaction's boundary are replayed (the same row the summary used, read
// once per Invocation), and when more of them lie before the window than Limit lets through, one
// user message (OmittedNote) says how many were left out. Without a ThreadSummary in the chain
// the compaction is ignored and the window is taken from the whole thread, as in the seed: a
// boundary without its summary would drop messages silently.
//
// Zero values mean the seed's defaults. The output always satisfies Validate.
type ThreadHistory struct {
	// Source reads the thread; required in reply runs.
	Source history.Source
	// Limit is the number of most recent messages replayed: 0 = history.DefaultLimit (50),
	// NoLimit (-1) = the whole thread; below -1 is an error. A history.Query's Limit means the
	// same, and Resolve passes it on as it is.
	Limit int
	// SkipToolCalls leaves the tool rounds out (the zero value includes them, the seed default).
	SkipToolCalls bool
	// ReplayResultLimit clips each replayed tool result to this many characters (runes):
	// 0 = DefaultReplayResultLimit (4000), NoLimit (-1) = unclipped; below -1 is an error.
	ReplayResultLimit int
}

// Resolve appends the thread's replay to dst (see ThreadHistory). It returns an error wrapping
// ErrNoHistorySource when Source is nil in a reply run, ErrInvalidHistoryOption for a bad Limit
// or ReplayResultLimit, and the Source's errors wrapped with the thread id; dst is then
// returned unchanged.
func (h *ThreadHistory) Resolve(ctx context.Context, inv *Invocation, dst []Message) ([]Message, error) {
	if inv == nil || inv.Inbound == nil || inv.Inbound.ThreadID == "" {
		return dst, nil
	}
	if h.Limit < NoLimit {
		return dst, fmt.Errorf("thread history: %w: limit %d (use a positive number, 0 for %d, or %d for the whole thread)",
			ErrInvalidHistoryOption, h.Limit, history.DefaultLimit, NoLimit)
	}
	if h.ReplayResultLimit < NoLimit {
		return dst, fmt.Errorf("thread history: %w: replay result limit %d (use a positive number, 0 for %d, or %d for unclipped)",
			ErrInvalidHistoryOption, h.ReplayResultLimit, DefaultReplayResultLimit, NoLimit)
	}
	if h.Source == nil {
		return dst, fmt.Errorf("thread history: %w", ErrNoHistorySource)
	}
	thread := inv.Inbound.ThreadID
	q := history.Query{
		ThreadID:         thread,
		ExcludeMessageID: inv.Inbound.MessageID,
		Limit:            h.Limit,
		ToolUses:         !h.SkipToolCalls,
	}
	if inv.Inbound.Seq > 0 {
		// A stored message is answered with what the store received before it: a message that
		// arrived while the run was pending belongs to a later run.
		q.UpToSeq = inv.Inbound.Seq - 1
	}
	key := compactionKey(h.Source, thread)
	var comp *history.Compaction
	if v, ok := inv.snap.peek(key); ok {
		comp, _ = v.(*history.Compaction)
	} else {
		inv.snap.mark(historyRanKey{key}, true)
	}
	if comp != nil {
		q.AfterSeq = comp.BoundarySeq
	}
	hist, err := h.Source.History(ctx, q)
	if err != nil {
		return dst, fmt.Errorf("thread history of %q: %w", thread, err)
	}
	if hist == nil {
		return dst, nil
	}
	if comp != nil && hist.Omitted > 0 {
		dst = append(dst, UserMessage(OmittedNote(hist.Omitted)))
	}
	return h.AppendReplay(dst, hist.Messages), nil
}

// AppendReplay appends the replay of msgs (oldest first, as a history.Source returns them) to dst
// and returns the extended slice; it is the rendering half of Resolve, also used to show a
// Summarizer the messages it summarises. Per message: its turn (HistoryText; none when the
// message has neither body nor attachments), then, unless h.SkipToolCalls, its tool rounds.
//
// A round is the ToolUses sharing (RunID, TurnIndex). Rounds replay in the order sortToolUses
// defines (first recorded round first; within a round by Position), whatever order the source
// gave. Each round is one assistant message (empty text) with one ToolCall per use — ID
// ToolCallID, Name ToolName, Input ReplayInput(Arguments) — then one tool message per use, in
// the same order: the result clipped to h.ReplayResultLimit characters, or NoResultText when
// the source recorded no result. A ToolCallID that is empty or repeats an earlier one of the
// same round is renamed "<id>~<k>" ("call~<k>" when empty; k the use's 0-based index in the
// round), in the call and its tool message alike, so the output always satisfies Validate. A negative or zero ReplayResultLimit other than NoLimit means
// DefaultReplayResultLimit here.
//
// The output depends on msgs alone: no clock, no map order, no state.
func (h *ThreadHistory) AppendReplay(dst []Message, msgs []history.Message) []Message {
	limit := h.ReplayResultLimit
	if limit == 0 || limit < NoLimit {
		limit = DefaultReplayResultLimit
	}
	var uses []history.ToolUse
	for i := range msgs {
		m := &msgs[i]
		if text, ok := HistoryText(m); ok {
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

func appendRound(dst []Message, round []history.ToolUse, limit int) []Message {
	calls := make([]ToolCall, len(round))
	// Where each result is cut (-1: replayed whole), found once: counting characters is the
	// largest cost of a replay.
	var cutsBuf [8]int
	cuts := cutsBuf[:0]
	// The round's inputs and clipped results share one buffer; each is a full slice expression
	// (or a string) over its own part, so no append can reach a neighbour.
	n := 0
	for _, u := range round {
		n += len(u.Arguments) + len(ClippedArgumentsKey) + 8 // room to wrap a payload
		cut := -1
		if u.HasResult && limit >= markerLen {
			if c, ok := clipCut(u.Result, limit-markerLen, limit); ok {
				cut = c
				n += c + len(TruncationMarker)
			}
		}
		cuts = append(cuts, cut)
	}
	arena := make([]byte, 0, n)
	for i, u := range round {
		var in json.RawMessage
		in, arena = appendReplayInput(arena, u.Arguments)
		calls[i] = ToolCall{ID: u.ToolCallID, Name: u.ToolName, Input: in}
	}
	uniqueCallIDs(calls)
	dst = append(dst, Message{Role: RoleAssistant, ToolCalls: calls})
	for i, u := range round {
		text := NoResultText
		switch {
		case !u.HasResult:
		case cuts[i] >= 0:
			start := len(arena)
			arena = append(arena, u.Result[:cuts[i]]...)
			arena = append(arena, TruncationMarker...)
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

// appendReplayInput is ReplayInput writing into arena: it returns the input, a slice of arena
// capped at its own end, and the grown arena.
func appendReplayInput(arena []byte, args string) (json.RawMessage, []byte) {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return json.RawMessage("{}"), arena
	}
	start := len(arena)
	// A JSON object ends with '}': a clipped payload (ending in the truncation marker) is
	// wrapped without paying for json.Valid's error.
	if trimmed[0] == '{' && trimmed[len(trimmed)-1] == '}' && json.Valid(unsafe.Slice(unsafe.StringData(trimmed), len(trimmed))) {
		arena = append(arena, args...)
	} else {
		arena = append(arena, `{"`+ClippedArgumentsKey+`":`...)
		arena = appendJSONString(arena, args)
		arena = append(arena, '}')
	}
	return arena[start:len(arena):len(arena)], arena
}

// appendJSONString appends s as encoding/json encodes a string with SetEscapeHTML(false):
// quotes, backslashes and control characters escaped, invalid UTF-8 as U+FFFD, U+2028 and
// U+2029 as \u2028 and \u2029.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// uniqueCallIDs gives every call of a round an id that is non-empty and unique within the round,
// as Validate requires: a call whose stored id is empty, or repeats the id of an earlier call of
// the round, is renamed "<id>~<k>" (k its 0-based index in the round; "call~<k>" for an empty
// id), then "<id>~<k>~2", "<id>~<k>~3", … while that name is taken. Well-formed rounds are
// untouched. The tool messages of the round use the same names.
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

func sameRound(a, b history.ToolUse) bool { return a.RunID == b.RunID && a.TurnIndex == b.TurnIndex }

// sortToolUses sorts one message's tool uses in place into replay order: rounds (uses sharing
// RunID and TurnIndex) by the smallest Seq of each round — the order they were recorded —, then
// by TurnIndex, and within a round by Position, then Seq. Run ids are only compared for
// equality, never as text, and timestamps play no part. The uses of one round always end up
// adjacent: rounds whose smallest Seq and TurnIndex tie (possible only when a source repeats
// Seqs) keep the order of their first appearance. Uses whose keys are all equal keep their
// relative order (the sort is stable). Sources hand tool uses over in any order; this is the
// one place that orders them.
func sortToolUses(uses []history.ToolUse) {
	if len(uses) < 2 {
		return
	}
	type roundKey struct {
		run  string
		turn int
	}
	type roundOrder struct {
		first   int64 // the round's smallest Seq
		ordinal int64 // the round's first appearance in uses, for sources with repeated Seqs
	}
	rounds := make(map[roundKey]roundOrder, 4)
	for _, u := range uses {
		k := roundKey{u.RunID, u.TurnIndex}
		if r, ok := rounds[k]; !ok {
			rounds[k] = roundOrder{first: u.Seq, ordinal: int64(len(rounds))}
		} else if u.Seq < r.first {
			rounds[k] = roundOrder{first: u.Seq, ordinal: r.ordinal}
		}
	}
	slices.SortStableFunc(uses, func(a, b history.ToolUse) int {
		ra, rb := rounds[roundKey{a.RunID, a.TurnIndex}], rounds[roundKey{b.RunID, b.TurnIndex}]
		switch {
		case ra.first != rb.first:
			return cmpInt(ra.first, rb.first)
		case a.TurnIndex != b.TurnIndex:
			return cmpInt(int64(a.TurnIndex), int64(b.TurnIndex))
		case ra.ordinal != rb.ordinal:
			return cmpInt(ra.ordinal, rb.ordinal)
		case a.Position != b.Position:
			return cmpInt(int64(a.Position), int64(b.Position))
		}
		return cmpInt(a.Seq, b.Seq)
	})
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// ReplayInput returns the ToolCall.Input replayed for a stored argument payload: the stored
// bytes as they are when they form a JSON object, "{}" when the payload is empty or blank, and
// otherwise (clipped, invalid, or a JSON value that is not an object) the object
// {"_clipped_arguments": "<payload>"} (see ClippedArgumentsKey), encoded without HTML escaping;
// invalid UTF-8 in such a payload becomes U+FFFD, as encoding/json writes it.
func ReplayInput(args string) json.RawMessage {
	in, _ := appendReplayInput(nil, args)
	return in
}

// HistoryText renders a stored message as the self-describing text of its replayed turn, and
// reports whether it has content (a body or attachments); a message without content renders
// as ("", false). The text is blocks separated by one blank line:
//
//	From: Ada <ada@example.com>
//	To: support@acme.test, billing@acme.test
//	Cc:
//	Date: Mon, 02 Jan 2006 15:04:05 +0000
//	Subject: Invoice
//
//	<body>
//
//	[attachment: report.pdf (application/pdf, 1234 bytes, id att-1)]
//
// The five header lines are always present, in this order, "Name: value" or "Name:" when the
// value is empty; To and Cc join their addresses with ", "; Date is FormatDate(Date) (UTC).
// Line breaks inside header values, and inside attachment fields, become spaces, so a value
// can never forge a header line. The body is Text with surrounding white space trimmed, or,
// when that is blank, HTMLText(HTML); it is omitted when blank. Each attachment adds one
// AttachmentNote line (metadata only), in the message's order.
func HistoryText(m *history.Message) (string, bool) {
	body := strings.TrimSpace(m.Text)
	if body == "" && m.HTML != "" {
		body = HTMLText(m.HTML)
	}
	if body == "" && len(m.Attachments) == 0 {
		return "", false
	}
	from, subject := oneLine(m.From), oneLine(m.Subject)
	var date [64]byte
	d := m.Date.UTC().AppendFormat(date[:0], DateLayout)
	n := len("From: \nTo: \nCc: \nDate: \nSubject: \n\n\n") + len(from) + len(subject) + len(d) + len(body)
	for _, a := range m.To {
		n += len(a) + 2
	}
	for _, a := range m.Cc {
		n += len(a) + 2
	}
	for _, a := range m.Attachments {
		n += len(a.Filename) + len(a.ContentType) + len(a.ID) + 64
	}
	b := make([]byte, 0, n)
	b = appendHeader(b, "From", from)
	b = appendListHeader(b, "To", m.To)
	b = appendListHeader(b, "Cc", m.Cc)
	b = appendHeader(b, "Date", unsafe.String(unsafe.SliceData(d), len(d)))
	b = appendHeader(b, "Subject", subject)
	if body != "" {
		b = append(b, '\n')
		b = append(b, body...)
		b = append(b, '\n')
	}
	if len(m.Attachments) > 0 {
		b = append(b, '\n')
		for _, a := range m.Attachments {
			b = append(b, "[attachment: "...)
			b = append(b, oneLine(a.Filename)...)
			b = append(b, " ("...)
			b = append(b, oneLine(a.ContentType)...)
			b = append(b, ", "...)
			b = strconv.AppendInt(b, a.Size, 10)
			b = append(b, " bytes, id "...)
			b = append(b, oneLine(a.ID)...)
			b = append(b, ")]\n"...)
		}
	}
	b = b[:len(b)-1] // the last block's line break
	return unsafe.String(unsafe.SliceData(b), len(b)), true
}

// appendHeader appends "Name: value\n", or "Name:\n" for an empty value; value is one line.
func appendHeader(b []byte, name, value string) []byte {
	b = append(b, name...)
	b = append(b, ':')
	if value != "" {
		b = append(b, ' ')
		b = append(b, value...)
	}
	return append(b, '\n')
}

// appendListHeader appends the header of the values joined with ", ", made one line and
// trimmed as header() does with strings.Join's result.
func appendListHeader(b []byte, name string, values []string) []byte {
	if len(values) == 1 {
		return appendHeader(b, name, oneLine(values[0]))
	}
	return appendHeader(b, name, oneLine(strings.Join(values, ", ")))
}

func header(b *strings.Builder, name, value string) {
	b.WriteString(name)
	b.WriteString(":")
	if v := oneLine(value); v != "" {
		b.WriteString(" ")
		b.WriteString(v)
	}
	b.WriteString("\n")
}

var lineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "\u2028", " ", "\u2029", " ")

// oneLine replaces line breaks by spaces and trims the result.
func oneLine(s string) string {
	if hasLineBreak(s) {
		s = lineBreaks.Replace(s)
	}
	return strings.TrimSpace(s)
}

// hasLineBreak reports whether s holds "\r", "\n", U+2028 or U+2029 (both encoded as
// E2 80 A8/A9). A byte loop: strings.ContainsAny with non-ASCII runes decodes every rune.
func hasLineBreak(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\r', '\n':
			return true
		case 0xE2:
			if i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xA8 || s[i+2] == 0xA9) {
				return true
			}
		}
	}
	return false
}
