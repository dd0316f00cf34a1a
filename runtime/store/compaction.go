package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

// DefaultCompactionLease is how long a pending compaction claim keeps other callers out before
// it counts as abandoned and may be taken over.
const DefaultCompactionLease = 5 * time.Minute

// ErrBoundaryNotFound is returned (wrapped) by Compact when the boundary seq names no message of
// the thread.
var ErrBoundaryNotFound = errors.New("store: compaction boundary is not a message of the thread")

// ErrBoundaryTooNew is returned (wrapped) by Compact for a boundary that is the thread's newest
// message: the message being answered would then be both in the summary and replayed after it.
// A boundary must be strictly older (by seq, the order of arrival) than the newest message.
var ErrBoundaryTooNew = errors.New("store: compaction boundary is the thread's newest message")

// ErrEmptySummary is returned (wrapped) by Compact when the Summarizer returned blank text.
var ErrEmptySummary = errors.New("store: summarizer returned an empty summary")

// CompactOutcome says what a Compact call did.
type CompactOutcome string

// The outcomes of Compact.
const (
	// CompactCompleted: this call claimed the boundary, called the Summarizer and stored its
	// summary.
	CompactCompleted CompactOutcome = "completed"
	// CompactAlreadyDone: a completed compaction of the thread at this boundary or a later one
	// exists; nothing was done.
	CompactAlreadyDone CompactOutcome = "already completed"
	// CompactPending: another caller holds a fresh claim on the boundary (or took over a stale
	// one first); the previous completed summary stays in use. Try again later.
	CompactPending CompactOutcome = "pending"
	// CompactClaimLost: this call's claim went stale while its Summarizer ran and another caller
	// took it over, so the summary it got was discarded (the other caller's will be stored).
	CompactClaimLost CompactOutcome = "claim lost"
)

// CompactResult is what Compact reports: the Outcome, and Compaction, the thread's completed
// compaction in use after the call — the one this call stored, the existing one at or after
// the boundary, or, while pending, the previous completed one (nil when the thread has none).
// TookOver is true when this call's claim was a stale claim taken over.
type CompactResult struct {
	Outcome    CompactOutcome
	Compaction *history.Compaction
	TookOver   bool
}

// CompactOption adjusts one Compact call.
type CompactOption func(*compactConfig)

type compactConfig struct {
	lease time.Duration
}

// CompactLease sets how long a pending claim is honoured before another caller may take it over
// (default DefaultCompactionLease). Choose it longer than a Summarizer call ever takes; a
// non-positive d keeps the default.
func CompactLease(d time.Duration) CompactOption {
	return func(c *compactConfig) {
		if d > 0 {
			c.lease = d
		}
	}
}

// compactionRow is a compactions row as Compact and LatestCompaction read it.
type compactionRow struct {
	BoundarySeq       int64  `db:"boundary_seq"`
	BoundaryMessageID string `db:"boundary_message_id"`
	Status            string `db:"status"`
	Summary           string `db:"summary"`
	ClaimToken        string `db:"claim_token"`
	ClaimedAt         dbTime `db:"claimed_at"`
}

const (
	statusPending   = "pending"
	statusCompleted = "completed"
)

// LatestCompaction implements [history.Source]: the thread's completed compaction with the
// greatest boundary, or (nil, nil) when it has none. One query.
func (s *Store) LatestCompaction(ctx context.Context, threadID string) (*history.Compaction, error) {
	var rows []compactionRow
	err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(`SELECT boundary_seq, boundary_message_id, status,
		summary, claim_token, claimed_at FROM compactions WHERE thread_id = ? AND status = 'completed'
		ORDER BY boundary_seq DESC LIMIT 1`), threadID)
	if err != nil {
		return nil, fmt.Errorf("store: latest compaction of thread %q: %w", threadID, err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	return rows[0].compaction(threadID), nil
}

func (r compactionRow) compaction(threadID string) *history.Compaction {
	return &history.Compaction{ThreadID: threadID, BoundarySeq: r.BoundarySeq,
		BoundaryMessageID: r.BoundaryMessageID, Summary: r.Summary}
}

// Compact summarises threadID up to and including the message whose seq is boundarySeq, once
// per boundary however many callers ask:
//
//  1. When a completed compaction at boundarySeq or later exists, it returns
//     CompactAlreadyDone. A boundary must be a message of the thread older (by seq, the order
//     of arrival) than its newest message: the newest is the one being answered, which would
//     otherwise be both summarised and replayed.
//  2. It claims the boundary by inserting a 'pending' row on the unique key (thread_id,
//     boundary_seq) with a random claim token and the claim time. A caller whose insert hits
//     the key reads the row: completed → CompactAlreadyDone; pending and younger than the lease
//     → CompactPending; pending and older → it takes the claim over with a compare-and-swap
//     (UPDATE … WHERE claim_token = the token it read), and only the caller whose swap changed
//     the row proceeds (the others get CompactPending).
//  3. The claimant reads the messages after the previous completed compaction's boundary up to
//     boundarySeq with all their tool rounds (a boundary is a message, so every round of a
//     message lies on the same side of it) and hands them, as data, to summarizer with the
//     previous summary — outside any transaction, and with no lock held but the claim row.
//     Rendering them is the summarizer's business (runtime.SummarizerFunc renders them as the
//     replay does).
//  4. It completes the row (status, summary, previous_boundary_seq, completed_at) with a
//     compare-and-swap on its token: CompactCompleted, or CompactClaimLost when a taker-over
//     changed the token meanwhile.
//
// Whenever a step after the claim fails — the Summarizer errs or returns blank text or a summary
// over MaxBodyBytes, or the claim's INSERT, the takeover or the completing UPDATE returns an
// error — the claim is released (its pending row deleted, best effort, even when ctx has ended)
// so the next caller can claim at once instead of waiting out the lease, and the error is
// returned. A completing UPDATE whose acknowledgement was lost has completed the row, so the
// release matches nothing and a retried Compact returns CompactAlreadyDone: retrying Compact
// after any error is safe and never stores a second summary. Times come from the store's clock
// (WithClock).
//
// The host picks boundaries (see runtime.CompactionPolicy): compact only messages whose runs
// have finished, since tool rounds recorded for a message after its compaction are neither in the
// summary nor replayed. Errors: ErrInvalid for an empty thread id, a boundary below 1, a nil
// summarizer, a summary over MaxBodyBytes or not valid UTF-8, or a bad store clock;
// ErrBoundaryNotFound; ErrBoundaryTooNew; ErrEmptySummary; the Summarizer's error (wrapped); the
// database's (wrapped). Lock races are retried up to 5 times.
func (s *Store) Compact(ctx context.Context, threadID string, boundarySeq int64, summarizer history.Summarizer, opts ...CompactOption) (CompactResult, error) {
	cfg := compactConfig{lease: DefaultCompactionLease}
	for _, o := range opts {
		o(&cfg)
	}
	if threadID == "" || boundarySeq < 1 || summarizer == nil {
		return CompactResult{}, fmt.Errorf("%w: compact thread %q at boundary %d (summarizer set: %t)",
			ErrInvalid, threadID, boundarySeq, summarizer != nil)
	}
	fail := func(err error) (CompactResult, error) {
		return CompactResult{}, fmt.Errorf("store: compact thread %q at %d: %w", threadID, boundarySeq, err)
	}
	prev, err := s.LatestCompaction(ctx, threadID)
	if err != nil {
		return CompactResult{}, err
	}
	if prev != nil && prev.BoundarySeq >= boundarySeq {
		return CompactResult{Outcome: CompactAlreadyDone, Compaction: prev}, nil
	}
	d := s.dialect
	var boundary struct {
		MessageID string `db:"message_id"`
		Newest    int64  `db:"newest"`
	}
	err = s.db.GetContext(ctx, &boundary, d.rebind(`SELECT message_id,
		(SELECT MAX(seq) FROM messages WHERE thread_id = ?) AS newest FROM messages WHERE seq = ? AND thread_id = ?`),
		threadID, boundarySeq, threadID)
	if errors.Is(err, sql.ErrNoRows) {
		return fail(fmt.Errorf("%w: seq %d", ErrBoundaryNotFound, boundarySeq))
	}
	if err != nil {
		return fail(err)
	}
	if boundarySeq >= boundary.Newest {
		return fail(fmt.Errorf("%w: seq %d is the thread's newest message", ErrBoundaryTooNew, boundarySeq))
	}
	boundaryID := boundary.MessageID

	token, tookOver, res, err := s.claim(ctx, threadID, boundarySeq, boundaryID, cfg.lease, prev)
	if err != nil || token == "" {
		return res, err
	}
	var prevSeq int64
	var prevSummary string
	if prev != nil {
		prevSeq, prevSummary = prev.BoundarySeq, prev.Summary
	}
	w, err := s.History(ctx, history.Query{ThreadID: threadID, AfterSeq: prevSeq, UpToSeq: boundarySeq,
		Limit: history.NoLimit, ToolUses: true})
	if err != nil {
		s.release(ctx, threadID, boundarySeq, token)
		return fail(err)
	}
	in := history.SummaryInput{
		ThreadID: threadID, Previous: prevSummary, BoundarySeq: boundarySeq, PreviousBoundarySeq: prevSeq,
		Messages: w.Messages,
	}
	summary, err := summarizer.Summarize(ctx, in)
	if err == nil && strings.TrimSpace(summary) == "" {
		err = ErrEmptySummary
	}
	if err != nil {
		s.release(ctx, threadID, boundarySeq, token)
		return fail(fmt.Errorf("summarize: %w", err))
	}
	if err := checkBytes("summary", summary, MaxBodyBytes); err != nil {
		s.release(ctx, threadID, boundarySeq, token)
		return fail(err)
	}
	now, err := s.clock()
	if err != nil {
		s.release(ctx, threadID, boundarySeq, token)
		return fail(err)
	}

	var prevArg any
	if prev != nil {
		prevArg = prevSeq
	}
	n, err := s.affectedHook(ctx, "complete", d.rebind(`UPDATE compactions SET status = 'completed', summary = ?,
		previous_boundary_seq = ?, completed_at = ? WHERE thread_id = ? AND boundary_seq = ? AND claim_token = ?
		AND status = 'pending'`), summary, prevArg, d.timeArg(now), threadID, boundarySeq, token)
	if err != nil {
		// The claim would otherwise block the boundary for the whole lease. When the UPDATE did
		// complete the row (its acknowledgement lost), the release matches nothing and a retry
		// finds the compaction done.
		s.release(ctx, threadID, boundarySeq, token)
		return fail(fmt.Errorf("complete: %w", err))
	}
	if n != 1 {
		return CompactResult{Outcome: CompactClaimLost, Compaction: prev, TookOver: tookOver}, nil
	}
	done := &history.Compaction{ThreadID: threadID, BoundarySeq: boundarySeq, BoundaryMessageID: boundaryID, Summary: summary}
	return CompactResult{Outcome: CompactCompleted, Compaction: done, TookOver: tookOver}, nil
}

// claim tries to own the compaction row (threadID, boundarySeq). It returns the claim token when
// this caller owns it, or "" and the result to report (already done or pending).
func (s *Store) claim(ctx context.Context, threadID string, boundarySeq int64, boundaryID string,
	lease time.Duration, prev *history.Compaction) (token string, tookOver bool, res CompactResult, err error) {
	d := s.dialect
	pending := CompactResult{Outcome: CompactPending, Compaction: prev}
	// A row can vanish between a failed insert and the read (its claimant released it), so the
	// claim is retried a few times before the caller is told it is pending.
	for range 3 {
		token = newClaimToken()
		now, err := s.clock()
		if err != nil {
			return "", false, CompactResult{}, err
		}
		_, err = s.exec(ctx, d.rebind(`INSERT INTO compactions (thread_id, boundary_seq, boundary_message_id,
			status, summary, claim_token, claimed_at) VALUES (?, ?, ?, 'pending', '', ?, ?)`),
			threadID, boundarySeq, boundaryID, token, d.timeArg(now))
		if err == nil {
			return token, false, CompactResult{}, nil
		}
		if !isDuplicateKey(err) {
			// The INSERT may have committed with its acknowledgement lost: release the claim so
			// that a retry can claim at once instead of waiting out the lease.
			s.release(ctx, threadID, boundarySeq, token)
			return "", false, CompactResult{}, fmt.Errorf("store: claim compaction of thread %q at %d: %w", threadID, boundarySeq, err)
		}
		var rows []compactionRow
		if err = s.db.SelectContext(ctx, &rows, d.rebind(`SELECT boundary_seq, boundary_message_id, status, summary,
			claim_token, claimed_at FROM compactions WHERE thread_id = ? AND boundary_seq = ?`), threadID, boundarySeq); err != nil {
			return "", false, CompactResult{}, fmt.Errorf("store: read compaction claim of thread %q at %d: %w", threadID, boundarySeq, err)
		}
		if len(rows) == 0 {
			continue
		}
		row := rows[0]
		if row.Status == statusCompleted {
			return "", false, CompactResult{Outcome: CompactAlreadyDone, Compaction: row.compaction(threadID)}, nil
		}
		if now.Sub(row.ClaimedAt.Time) < lease {
			return "", false, pending, nil
		}
		n, err := s.affected(ctx, d.rebind(`UPDATE compactions SET claim_token = ?, claimed_at = ?
			WHERE thread_id = ? AND boundary_seq = ? AND status = 'pending' AND claim_token = ?`),
			token, d.timeArg(now), threadID, boundarySeq, row.ClaimToken)
		if err != nil {
			s.release(ctx, threadID, boundarySeq, token)
			return "", false, CompactResult{}, fmt.Errorf("store: take over compaction claim of thread %q at %d: %w", threadID, boundarySeq, err)
		}
		if n == 1 {
			return token, true, CompactResult{}, nil
		}
		return "", false, pending, nil
	}
	return "", false, pending, nil
}

// release deletes this caller's pending claim so that another caller can claim at once; it
// runs even when ctx has ended. Its error is ignored: an unreleased claim expires after the
// lease.
func (s *Store) release(ctx context.Context, threadID string, boundarySeq int64, token string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = s.exec(ctx, s.dialect.rebind(`DELETE FROM compactions WHERE thread_id = ? AND boundary_seq = ?
		AND claim_token = ? AND status = 'pending'`), threadID, boundarySeq, token)
}

// affectedHook is affected with the test hook named step in front of it (compactHooks).
func (s *Store) affectedHook(ctx context.Context, step, query string, args ...any) (int64, error) {
	if s.hooks != nil && s.hooks.beforeStatement != nil {
		if err := s.hooks.beforeStatement(step); err != nil {
			return 0, err
		}
	}
	return s.affected(ctx, query, args...)
}

// newClaimToken returns 32 random hex digits.
func newClaimToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
