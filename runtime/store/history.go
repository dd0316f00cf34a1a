package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/personagen/personagen/runtime"
)

// The Store is the SQL runtime.HistorySource.
var _ runtime.HistorySource = (*Store)(nil)

// historyRow is a messages row as History reads it, with the number of rows the query selected
// before its LIMIT (a window function, so the count costs no extra round trip).
type historyRow struct {
	messageRow
	Total int64 `db:"total"`
}

// historyToolUseRow is a tool_uses row as History reads it.
type historyToolUseRow struct {
	Seq        int64  `db:"seq"`
	OwnerID    int64  `db:"owner_id"`
	RunID      string `db:"run_id"`
	TurnIndex  int    `db:"turn_index"`
	Position   int    `db:"position"`
	ToolCallID string `db:"tool_call_id"`
	ToolName   string `db:"tool_name"`
	Arguments  string `db:"arguments"`
	Result     string `db:"result"`
	Succeeded  bool   `db:"succeeded"`
}

// History implements runtime.HistorySource: the messages of q.ThreadID that q selects, oldest
// first by (sent_at, seq) — seq, the insertion key, breaks ties between equal sent_at values —,
// the most recent q.Limit of them, each with its attachments' metadata and, when q.ToolUses is
// set, the tool uses recorded for it (owner_type 'message'), sorted by runtime.SortToolUses.
// Omitted counts the selected messages left before the window by the limit.
//
// It runs at most three queries whatever the thread's length: the window with the selection's
// count (a window function), the window's attachments, and the window's tool uses; the last two
// are skipped when the window is empty (the third also without q.ToolUses). The second and third
// select the window by its first message's (sent_at, seq), so a message appended while History
// runs is not mixed in. An unknown thread gives an empty History. Errors are the database's,
// wrapped with the thread id, or a stored address list that is not a JSON array of strings.
// Attachments and tool uses are ordered in Go (by position; by runtime.SortToolUses), not by
// the server.
func (s *Store) History(ctx context.Context, q runtime.HistoryQuery) (*runtime.History, error) {
	d := s.dialect
	where, args := historyFilter("", q)
	query := `SELECT seq, message_id, direction, sender, recipients, cc, subject, sent_at, text_body, html_body,
		COUNT(*) OVER () AS total FROM messages WHERE ` + where + ` ORDER BY sent_at DESC, seq DESC`
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	var rows []historyRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(query), args...); err != nil {
		return nil, fmt.Errorf("store: history of thread %q: %w", q.ThreadID, err)
	}
	h := &runtime.History{}
	if len(rows) == 0 {
		return h, nil
	}
	slices.Reverse(rows)
	h.Omitted = int(rows[0].Total) - len(rows)
	h.Messages = make([]runtime.StoredMessage, len(rows))
	index := make(map[int64]int, len(rows))
	for i, r := range rows {
		m, err := r.stored()
		if err != nil {
			return nil, fmt.Errorf("store: history of thread %q: %w", q.ThreadID, err)
		}
		h.Messages[i] = m
		index[r.Seq] = i
	}

	// The window is every selected message at or after its first one in (sent_at, seq) order.
	where, args = historyFilter("m.", q)
	where += " AND (m.sent_at > ? OR (m.sent_at = ? AND m.seq >= ?))"
	first := rows[0]
	at := d.timeArg(first.SentAt.Time)
	args = append(args, at, at, first.Seq)

	var atts []attachmentRow
	if err := s.db.SelectContext(ctx, &atts, d.rebind(`SELECT a.message_seq, a.position, a.attachment_id, a.filename,
		a.content_type, a.size_bytes FROM attachments a JOIN messages m ON m.seq = a.message_seq
		WHERE `+where), args...); err != nil {
		return nil, fmt.Errorf("store: history attachments of thread %q: %w", q.ThreadID, err)
	}
	// Sorting in Go rather than in SQL spares the server a temporary table.
	slices.SortFunc(atts, func(a, b attachmentRow) int {
		if c := cmp.Compare(a.MessageSeq, b.MessageSeq); c != 0 {
			return c
		}
		return cmp.Compare(a.Position, b.Position)
	})
	for _, a := range atts {
		if i, ok := index[a.MessageSeq]; ok {
			h.Messages[i].Attachments = append(h.Messages[i].Attachments, runtime.Attachment{
				ID: a.AttachmentID, Filename: a.Filename, ContentType: a.ContentType, Size: a.SizeBytes,
			})
		}
	}
	if !q.ToolUses {
		return h, nil
	}

	var uses []historyToolUseRow
	if err := s.db.SelectContext(ctx, &uses, d.rebind(`SELECT t.seq, t.owner_id, t.run_id, t.turn_index,
		t.position, t.tool_call_id, t.tool_name, t.arguments, t.result, t.succeeded
		FROM tool_uses t JOIN messages m ON m.seq = t.owner_id
		WHERE t.owner_type = 'message' AND t.thread_id = ? AND `+where),
		append([]any{q.ThreadID}, args...)...); err != nil {
		return nil, fmt.Errorf("store: history tool uses of thread %q: %w", q.ThreadID, err)
	}
	for _, u := range uses {
		if i, ok := index[u.OwnerID]; ok {
			h.Messages[i].ToolUses = append(h.Messages[i].ToolUses, runtime.ToolUse{
				Seq: u.Seq, RunID: u.RunID, TurnIndex: u.TurnIndex, Position: u.Position,
				ToolCallID: u.ToolCallID, ToolName: u.ToolName, Arguments: u.Arguments,
				Result: u.Result, HasResult: true, Succeeded: u.Succeeded,
			})
		}
	}
	for i := range h.Messages {
		runtime.SortToolUses(h.Messages[i].ToolUses)
	}
	return h, nil
}

// historyFilter returns the WHERE condition on messages (columns prefixed by p) that q selects,
// before its limit, and its arguments.
func historyFilter(p string, q runtime.HistoryQuery) (string, []any) {
	conds := []string{p + "thread_id = ?"}
	args := []any{q.ThreadID}
	if q.ExcludeMessageID != "" {
		conds = append(conds, p+"message_id <> ?")
		args = append(args, q.ExcludeMessageID)
	}
	if q.AfterSeq > 0 {
		conds = append(conds, p+"seq > ?")
		args = append(args, q.AfterSeq)
	}
	if q.UpToSeq > 0 {
		conds = append(conds, p+"seq <= ?")
		args = append(args, q.UpToSeq)
	}
	return strings.Join(conds, " AND "), args
}
