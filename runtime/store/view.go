package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime/history"
)

// ErrCompactionNotFound is returned (wrapped) by CompactionAt when the thread has no completed
// compaction at the boundary.
var ErrCompactionNotFound = errors.New("store: compaction not found")

// View returns what a reply run starting now on threadID would read: UpToSeq, the seq of the
// thread's newest message (0 for an unknown or empty thread), and Compaction, its latest
// completed compaction (nil for none). One query. A runner records both on the run (NewRun.ViewSeq,
// NewRun.CompactionSeq) so that every attempt of the run reads the thread alike. Errors: the
// database's (wrapped).
func (s *Store) View(ctx context.Context, threadID string) (history.View, error) {
	var rows []struct {
		Newest sql.NullInt64 `db:"newest"`
		compactionRow
	}
	// One row always: the newest seq, joined with the latest completed compaction when there is one.
	err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT
		(SELECT MAX(seq) FROM messages WHERE thread_id = ?) AS newest,
		COALESCE(c.boundary_seq, 0) AS boundary_seq, COALESCE(c.boundary_message_id, '') AS boundary_message_id,
		COALESCE(c.status, '') AS status, COALESCE(c.summary, '') AS summary,
		COALESCE(c.claim_token, '') AS claim_token, c.claimed_at
		FROM (SELECT 1 AS one) o LEFT JOIN (SELECT boundary_seq, boundary_message_id, status, summary, claim_token,
		claimed_at FROM compactions WHERE thread_id = ? AND status = 'completed' ORDER BY boundary_seq DESC LIMIT 1) c ON 1 = 1`),
		threadID, threadID)
	if err != nil {
		return history.View{}, fmt.Errorf("store: view of thread %q: %w", threadID, err)
	}
	if len(rows) == 0 {
		return history.View{}, fmt.Errorf("store: view of thread %q: no row", threadID)
	}
	r := rows[0]
	v := history.View{UpToSeq: r.Newest.Int64}
	if r.Status == statusCompleted {
		v.Compaction = r.compaction(threadID)
	}
	return v, nil
}

// CompactionAt returns threadID's completed compaction whose boundary is boundarySeq: the one a
// resumed run started with (Run.CompactionSeq), though a later one may have completed since. One
// query. Errors: ErrCompactionNotFound (wrapped); the database's (wrapped).
func (s *Store) CompactionAt(ctx context.Context, threadID string, boundarySeq int64) (*history.Compaction, error) {
	var rows []compactionRow
	err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT boundary_seq, boundary_message_id, status,
		summary, claim_token, claimed_at FROM compactions WHERE thread_id = ? AND boundary_seq = ? AND status = 'completed'`),
		threadID, boundarySeq)
	if err != nil {
		return nil, fmt.Errorf("store: compaction of thread %q at %d: %w", threadID, boundarySeq, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: thread %q at boundary %d", ErrCompactionNotFound, threadID, boundarySeq)
	}
	return rows[0].compaction(threadID), nil
}
