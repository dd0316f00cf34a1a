package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

// holdSQLiteWriteLock takes the write lock of the SQLite file at path from another connection
// and releases it after d; it returns once the lock is held.
func holdSQLiteWriteLock(t *testing.T, path string, d time.Duration) <-chan struct{} {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(d)
		conn.ExecContext(context.Background(), "COMMIT")
		conn.Close()
		db.Close()
	}()
	return done
}

// Single-statement writes retry SQLite BUSY like transactions do: with a 40 ms busy timeout
// and the write lock held elsewhere for 150 ms, each still succeeds.
func TestSingleStatementWritesRetryABusySQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	s, err := Open(context.Background(), "sqlite:"+path+"?_busy_timeout=40")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	seedThread(t, s, "c", 4)
	seqs := threadSeqs(t, s, "c")
	steps := []struct {
		name string
		do   func() error
	}{
		{"StartRun", func() error {
			_, _, err := s.StartRun(ctx, NewRun{Key: "k", Kind: RunScheduled, Persona: "p", Responsibility: "r", FireAt: fireAt, Holder: "w"})
			return err
		}},
		{"RenewLease", func() error { _, err := s.RenewLease(ctx, "k", "w", time.Hour); return err }},
		{"FinishRun", func() error { _, err := s.FinishRun(ctx, "k", "w", Finish{Status: RunSucceeded}); return err }},
		{"Compact", func() error { _, err := s.Compact(ctx, "c", seqs[1], fixedSummary(nil)); return err }},
	}
	for _, st := range steps {
		released := holdSQLiteWriteLock(t, path, 150*time.Millisecond)
		if err := st.do(); err != nil {
			t.Errorf("%s with the database locked for 150 ms: %v", st.name, err)
		}
		<-released
	}
}

// A call whose context is cancelled while its transaction is open reports the context's error,
// not database/sql's "transaction has already been committed or rolled back" from the commit
// of the transaction it rolled back.
func TestCancelledTransactionReportsTheContextsError(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, 2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s.hooks = &roundHooks{afterInsert: func(ctx context.Context, tx *sqlx.Tx) error {
			cancel()
			// Wait until database/sql has rolled the transaction back, so the commit meets a
			// finished transaction.
			for {
				if _, err := tx.Exec("SELECT 1"); errors.Is(err, sql.ErrTxDone) {
					return nil
				}
				time.Sleep(time.Millisecond)
			}
		}}
		_, err := s.RecordRound(ctx, r)
		if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "already been committed") {
			t.Fatalf("RecordRound cancelled mid-transaction: %v; want context.Canceled alone", err)
		}
		s.hooks = nil
		if n := countRows(t, s, "tool_uses", ""); n != 0 {
			t.Errorf("%d rows of the cancelled round stored", n)
		}
	})
}
