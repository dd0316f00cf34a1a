package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// summaryPreamble opens the message ThreadSummary emits, followed by a blank line and the
// stored summary. It is a fixed text, so a compacted thread replays byte-identically.
const summaryPreamble = "[The older part of this thread was condensed into the summary below so that it fits " +
	"in the context. It covers every message before the ones that follow it.]"

// ErrSummaryAfterHistory is returned (wrapped) by ThreadSummary when a ThreadHistory for the same
// source and thread already ran in the same Invocation: that history ignored the compaction, so
// the summary would repeat what it replayed. Put thread_summary before thread_history.
var ErrSummaryAfterHistory = errors.New("thread summary must come before thread history")

// ThreadSummary is the thread_summary resolver: when the inbound message's thread has a
// completed compaction, it emits one message, of role Role, holding a fixed preamble ("[The
// older part of this thread was condensed into the summary below …]"), a blank line, and the
// compaction's Summary. It contributes nothing in a scheduled run, for an empty ThreadID, or
// when the thread has no completed compaction.
//
// The compaction row is read once per Invocation (or taken from inv.View, when set, without a
// read) and shared with a later ThreadHistory on the same Source, which then replays only the messages after the row's boundary; both therefore see
// the same row even when a compaction completes while the run is assembling its request.
type ThreadSummary struct {
	// Source reads the thread's compaction; required in reply runs.
	Source history.Source
	// Role of the emitted message; "" = RoleUser. RoleTool is refused (a tool message needs a call).
	Role chat.Role
}

// Resolve appends the summary message to dst (see ThreadSummary). It returns an error wrapping
// ErrNoHistorySource when Source is nil in a reply run, an error naming the role for an invalid
// Role, ErrSummaryAfterHistory when a ThreadHistory on the same Source and thread ran before it
// in this Invocation, and the Source's errors wrapped with the thread id.
func (s *ThreadSummary) Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error) {
	if inv == nil || inv.Inbound == nil || inv.Inbound.ThreadID == "" {
		return dst, nil
	}
	role := s.Role
	if role == "" {
		role = chat.RoleUser
	}
	if !role.Valid() || role == chat.RoleTool {
		return dst, fmt.Errorf("thread summary: %w: role %q (use user, system or assistant; a tool message needs a call)", errInvalidHistoryOption, s.Role)
	}
	if s.Source == nil {
		return dst, fmt.Errorf("thread summary: %w", ErrNoHistorySource)
	}
	comp, err := inv.snap.compaction(ctx, s.Source, inv.Inbound.ThreadID, inv.View)
	if err != nil {
		return dst, err
	}
	if comp == nil {
		return dst, nil
	}
	return append(dst, chat.Message{Role: role, Text: summaryText(comp.Summary)}), nil
}

// summaryText returns the text of the message ThreadSummary emits for a stored summary.
func summaryText(summary string) string { return summaryPreamble + "\n\n" + summary }
