package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/personagen/personagen/runtime/history"
)

// The Store is the SQL history.Source.
var _ history.Source = (*Store)(nil)

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

// History implements [history.Source]: the window of q.ThreadID's messages that q selects, in
// the order the store received them (by seq, the insertion key; sent_at, which the sender sets,
// plays no part), at most q.Limit of them (0 = history.DefaultLimit, history.NoLimit = all),
// each with its attachments' metadata in their stored order and, when q.ToolUses is set, the
// tool uses recorded for it (owner_type 'message'), in no particular order (the replay orders
// them by seq). Omitted counts the selected messages left before the window by the limit.
//
// It runs at most three queries whatever the thread's length: the window with the selection's
// count (a window function), the window's attachments, and the window's tool uses; the last two
// are skipped when the window is empty (the third also without q.ToolUses). The second and third
// select the window by its first message's seq; a message appended while History runs is not
// mixed in. An unknown thread gives an empty Window. Errors: a query that fails
// [history.Query.Check] (wrapping history.ErrInvalidQuery), the database's, wrapped with the
// thread id, or a stored address list that is not a JSON array of strings.
func (s *Store) History(ctx context.Context, q history.Query) (*history.Window, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	d := s.dialect
	where, args := historyFilter("", q)
	query := `SELECT ` + messageColumns + `, COUNT(*) OVER () AS total FROM messages WHERE ` + where + ` ORDER BY seq DESC`
	if n, bounded := q.MaxMessages(); bounded {
		query += " LIMIT ?"
		args = append(args, n)
	}
	var rows []historyRow
	if err := s.db.SelectContext(ctx, &rows, d.rebind(query), args...); err != nil {
		return nil, fmt.Errorf("store: history of thread %q: %w", q.ThreadID, err)
	}
	w := &history.Window{}
	if len(rows) == 0 {
		return w, nil
	}
	slices.Reverse(rows)
	w.Omitted = int(rows[0].Total) - len(rows)
	w.Messages = make([]history.Message, len(rows))
	index := make(map[int64]int, len(rows))
	for i, r := range rows {
		m, err := r.stored(q.ThreadID)
		if err != nil {
			return nil, fmt.Errorf("store: history of thread %q: %w", q.ThreadID, err)
		}
		w.Messages[i] = m
		index[r.Seq] = i
	}

	// The window is every selected message from its first one on, in seq order.
	where, args = historyFilter("m.", q)
	where += " AND m.seq >= ?"
	args = append(args, rows[0].Seq)

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
			w.Messages[i].Attachments = append(w.Messages[i].Attachments, history.Attachment{
				ID: a.AttachmentID, Filename: a.Filename, ContentType: a.ContentType, Size: a.SizeBytes,
			})
		}
	}
	if !q.ToolUses {
		return w, nil
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
			w.Messages[i].ToolUses = append(w.Messages[i].ToolUses, history.ToolUse{
				Seq: u.Seq, RunID: u.RunID, TurnIndex: u.TurnIndex, Position: u.Position,
				ToolCallID: u.ToolCallID, ToolName: u.ToolName, Arguments: u.Arguments,
				Result: u.Result, HasResult: true, Succeeded: u.Succeeded,
			})
		}
	}
	return w, nil
}

// historyFilter returns the WHERE condition on messages (columns prefixed by p) that q selects,
// before its limit, and its arguments.
func historyFilter(p string, q history.Query) (string, []any) {
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
	if q.InboundUpToSeq > 0 {
		conds = append(conds, "("+p+"direction = 'outbound' OR "+p+"seq <= ?)")
		args = append(args, q.InboundUpToSeq)
	}
	return strings.Join(conds, " AND "), args
}
