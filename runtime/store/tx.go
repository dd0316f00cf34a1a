package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jmoiron/sqlx"
)

// maxTxAttempts bounds how often inTx runs a transaction that lost a lock race (MySQL deadlock
// 1213 or lock wait timeout 1205, SQLite BUSY/LOCKED) before it returns the error.
const maxTxAttempts = 5

// inTx runs f in a transaction and commits it. When f or the commit fails with a retryable lock
// error (isRetryable), the transaction is rolled back and run again from the start, up to
// maxTxAttempts times in all, with a short randomised backoff (10 ms doubling, jittered) that
// respects ctx. Any other error rolls back and is returned as is. f must do nothing but
// database work on tx (no model or network calls) and must be safe to run more than once.
func (s *Store) inTx(ctx context.Context, f func(tx *sqlx.Tx) error) error {
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
		err = s.runTx(ctx, f)
		if err == nil || !isRetryable(err) {
			return err
		}
	}
	return fmt.Errorf("store: transaction still losing lock races after %d attempts: %w", maxTxAttempts, err)
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
