package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/personagen/personagen/runtime/history"
)

// The Store is the SQL history.Source.
var _ history.Source = (*Store)(nil)

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

// maxListedSeqs is the largest window whose tool uses are read by naming its
// seqs (an IN list, one index lookup per seq); a larger one (a compaction's read of a whole
// stretch) selects them by the window's seq range within the thread instead. Either way the
// rows read are the window's own; the list keeps well below both databases' limits on
// placeholders per statement.
const maxListedSeqs = 500

// History implements [history.Source]: the window of q.ThreadID's messages that q selects, in
// the order the store received them (by seq, the insertion key; sent_at, which the sender sets,
// plays no part), at most q.Limit of them (0 = history.DefaultLimit, history.NoLimit = all),
// each with its attachments' metadata in their stored order (a column of the message's row) and,
// when q.ToolUses is set, the
// tool uses recorded for it (owner_type 'message'), in no particular order (the replay orders
// them by seq). When q.CountOmitted is set, Omitted counts the selected messages left before
// the window by the limit; otherwise it is 0.
//
// Its cost follows the window, not the thread or the database: at most three queries, each
// reading only the window's rows through an index (the plans are pinned by
// TestHistoryQueryPlans on both databases):
//
//  1. the window: the thread's most recent selected messages, read backwards along the index
//     (thread_id, seq) and stopped after the limit;
//  2. with q.CountOmitted and a full window only, the omitted count: index entries of
//     (thread_id, seq) between q.AfterSeq and the window, counted without reading a row;
//  3. with q.ToolUses, the window's tool uses: looked up by the window's seqs (up to
//     maxListedSeqs of them, one index probe each), or, for a larger window, by the window's
//     seq range within the thread.
//
// Query 3 is skipped for an empty window. It names the window's own seqs (or its first and
// last), so a message appended while History runs is not mixed in. An unknown thread
// gives an empty Window. Errors: a query that fails [history.Query.Check] (wrapping
// history.ErrInvalidQuery), the database's, wrapped with the thread id, or a stored address
// list that is not a JSON array of strings, or stored attachments that are not a JSON array.
func (s *Store) History(ctx context.Context, q history.Query) (*history.Window, error) {
	if err := q.Check(); err != nil {
		return nil, fmt.Errorf("store: history: %w", err)
	}
	query, args := windowQuery(s.dialect, q)
	var rows []messageRow
	if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(query), args...); err != nil {
		return nil, fmt.Errorf("store: history of thread %q: %w", q.ThreadID, err)
	}
	w := &history.Window{}
	if len(rows) == 0 {
		return w, nil
	}
	slices.Reverse(rows)
	w.Messages = make([]history.Message, len(rows))
	index := make(map[int64]int, len(rows))
	seqs := make([]int64, len(rows))
	for i, r := range rows {
		m, err := r.stored(q.ThreadID)
		if err != nil {
			return nil, fmt.Errorf("store: history of thread %q: %w", q.ThreadID, err)
		}
		w.Messages[i] = m
		index[r.Seq] = i
		seqs[i] = r.Seq
	}

	if n, bounded := q.MaxMessages(); q.CountOmitted && bounded && len(rows) == n {
		query, args := omittedQuery(s.dialect, q, seqs[0])
		if err := s.db.GetContext(ctx, &w.Omitted, s.dialect.rebind(query), args...); err != nil {
			return nil, fmt.Errorf("store: history omitted count of thread %q: %w", q.ThreadID, err)
		}
	}

	if !q.ToolUses {
		return w, nil
	}

	var uses []historyToolUseRow
	query, args = toolUsesQuery(s.dialect, q.ThreadID, seqs)
	if err := s.db.SelectContext(ctx, &uses, s.dialect.rebind(query), args...); err != nil {
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

// The indexes the history queries read through (see Dialect.indexed).
const (
	indexThreadWindow = "messages_thread_window"   // messages (thread_id, seq, message_id)
	indexUsesOwner    = "tool_uses_round_position" // tool_uses (owner_type, owner_id, run_id, …)
	indexUsesThread   = "tool_uses_thread_owner"   // tool_uses (thread_id, owner_id, seq)
)

// windowQuery returns the query of q's window, newest first: the selected messages of the
// thread read backwards along (thread_id, seq, message_id) and stopped after q's limit, so it
// reads the window's rows and no others (the excluded message is skipped in the index).
func windowQuery(d Dialect, q history.Query) (string, []any) {
	where, args := historyFilter(q)
	query := `SELECT ` + messageColumns + ` FROM ` + d.indexed("messages", indexThreadWindow) + ` WHERE ` + where + ` ORDER BY seq DESC`
	if n, bounded := q.MaxMessages(); bounded {
		query += " LIMIT ?"
		args = append(args, n)
	}
	return query, args
}

// omittedQuery returns the query that counts the selected messages of q older than the
// window's first message, first: the entries of (thread_id, seq, message_id) between
// q.AfterSeq and first, less the excluded message's, counted in the index without reading a
// row (with q.InboundUpToSeq, less the later inbound messages, which reads the rows).
func omittedQuery(d Dialect, q history.Query, first int64) (string, []any) {
	query := `SELECT COUNT(*) FROM ` + d.indexed("messages", indexThreadWindow) + ` WHERE thread_id = ? AND seq > ? AND seq < ?`
	args := []any{q.ThreadID, q.AfterSeq, first}
	if q.ExcludeMessageID != "" {
		query += ` AND message_id <> ?`
		args = append(args, q.ExcludeMessageID)
	}
	if q.InboundUpToSeq > 0 { // this one condition reads the rows: direction is not in the index
		query += ` AND (direction = 'outbound' OR seq <= ?)`
		args = append(args, q.InboundUpToSeq)
	}
	return query, args
}

// toolUsesQuery returns the query of the tool uses recorded for the window's messages, whose
// seqs are seqs (ascending), in no particular order: one probe of the owner index per seq, or
// for a window of more than maxListedSeqs messages the thread's tool uses in the window's seq
// range, read along (thread_id, owner_id).
func toolUsesQuery(d Dialect, thread string, seqs []int64) (string, []any) {
	const cols = `seq, owner_id, run_id, turn_index, position, tool_call_id, tool_name, arguments, result, succeeded`
	if len(seqs) <= maxListedSeqs {
		return `SELECT ` + cols + ` FROM ` + d.indexed("tool_uses", indexUsesOwner) + ` WHERE owner_type = 'message'
		AND owner_id IN (` + placeholders(len(seqs)) + `)`, seqArgs(seqs)
	}
	return `SELECT ` + cols + ` FROM ` + d.indexed("tool_uses", indexUsesThread) + ` WHERE thread_id = ?
		AND owner_type = 'message' AND owner_id >= ? AND owner_id <= ?`, []any{thread, seqs[0], seqs[len(seqs)-1]}
}

func seqArgs(seqs []int64) []any {
	args := make([]any, len(seqs))
	for i, s := range seqs {
		args[i] = s
	}
	return args
}

// historyFilter returns the WHERE condition on messages that q selects, before its limit, and
// its arguments.
func historyFilter(q history.Query) (string, []any) {
	conds := []string{"thread_id = ?"}
	args := []any{q.ThreadID}
	if q.ExcludeMessageID != "" {
		conds = append(conds, "message_id <> ?")
		args = append(args, q.ExcludeMessageID)
	}
	if q.AfterSeq > 0 {
		conds = append(conds, "seq > ?")
		args = append(args, q.AfterSeq)
	}
	if q.UpToSeq > 0 {
		conds = append(conds, "seq <= ?")
		args = append(args, q.UpToSeq)
	}
	if q.InboundUpToSeq > 0 {
		conds = append(conds, "(direction = 'outbound' OR seq <= ?)")
		args = append(args, q.InboundUpToSeq)
	}
	return strings.Join(conds, " AND "), args
}
