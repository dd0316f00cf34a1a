package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jmoiron/sqlx"
)

// maxTxAttempts bounds how often the store runs a statement or transaction that lost a lock race
// (MySQL deadlock 1213 or lock wait timeout 1205, SQLite BUSY/LOCKED) before it returns the
// error.
const maxTxAttempts = 5

// retrying runs f until it succeeds, fails with an error that is not a lost lock race
// (isRetryable), or has run maxTxAttempts times, with a short randomised backoff between
// attempts (10 ms doubling, jittered) that respects ctx. f must be safe to run more than once.
// When ctx ends, the error is ctx's (wrapped, with the last attempt's error), never a
// follow-on error of the cancelled attempt.
func (s *Store) retrying(ctx context.Context, f func() error) error {
	var err error
	for attempt := range maxTxAttempts {
		if attempt > 0 {
			backoff := time.Duration(10<<(attempt-1)) * time.Millisecond
			backoff = backoff/2 + rand.N(backoff)
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w (after %v)", ctx.Err(), err)
			case <-time.After(backoff):
			}
		}
		err = contextError(ctx, f())
		if err == nil || !isRetryable(err) {
			return err
		}
	}
	return fmt.Errorf("store: still losing lock races after %d attempts: %w", maxTxAttempts, err)
}

// contextError makes a call that failed after ctx ended report ctx's error (context.Canceled
// or context.DeadlineExceeded), whatever follow-on error the cancelled attempt produced: a
// transaction that database/sql rolled back on cancellation reports sql.ErrTxDone ("transaction
// has already been committed or rolled back") from its next statement or Commit, which is
// replaced by ctx's error; any other error is kept after it in the chain.
func contextError(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil || errors.Is(err, ctx.Err()) {
		return err
	}
	if errors.Is(err, sql.ErrTxDone) {
		return ctx.Err()
	}
	return fmt.Errorf("%w (%w)", ctx.Err(), err)
}

// inTx runs f in a transaction and commits it, retrying the whole transaction as retrying
// does when f or the commit lost a lock race. Any other error rolls back and is returned as is.
// f must do nothing but database work on tx (no model or network calls) and must be safe to run
// more than once.
func (s *Store) inTx(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	return s.retrying(ctx, func() error { return s.runTx(ctx, f) })
}

// runTx is one attempt of inTx.
func (s *Store) runTx(ctx context.Context, f func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		// A failed rollback leaves nothing to undo: the server discards the transaction
		// when its connection closes, and database/sql closes a connection that failed.
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// exec runs one statement outside a transaction (it commits on its own), retried as retrying
// does when it lost a lock race.
func (s *Store) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := s.retrying(ctx, func() error {
		var err error
		res, err = s.db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// affected runs one statement as exec does and returns how many rows it changed.
func (s *Store) affected(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := s.exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
