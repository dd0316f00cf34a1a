package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"
)

// DefaultOptimizeInterval is how often an open SQLite store refreshes the planner's statistics
// (see Optimize) unless WithOptimizeInterval says otherwise.
const DefaultOptimizeInterval = time.Hour

// optimizeTimeout bounds one background Optimize; PRAGMA optimize limits its own work, so it
// only matters when the database is locked for long.
const optimizeTimeout = time.Minute

// sqliteOptimize is the PRAGMA the store runs on SQLite: mask 0x10012 = analyze the tables that
// may benefit (0x02), with a temporary analysis_limit so each takes milliseconds even on a large
// table (0x10), checking every table rather than only those this connection queried (0x10000;
// database/sql hands statements to whichever pooled connection is free). SQLite then analyzes
// a table that has no statistics yet or whose row count changed 25-fold since it was analyzed,
// and does nothing otherwise.
const sqliteOptimize = "PRAGMA optimize=0x10012"

// WithOptimizeInterval sets how often an open SQLite store runs Optimize in the background
// (default DefaultOptimizeInterval); d <= 0 turns the background runs off (Migrate still runs
// Optimize). It has no effect on MySQL.
func WithOptimizeInterval(d time.Duration) Option {
	return func(s *Store) { s.optimizeEvery = d }
}

// Optimize refreshes the query planner's statistics where the database leaves that to the
// application. On SQLite it runs PRAGMA optimize (0x10012: every table, limited analysis), which
// runs ANALYZE only on tables without statistics or whose size changed 25-fold, and is otherwise
// a no-op costing well under a millisecond. On MySQL / MariaDB it does nothing and returns nil:
// InnoDB keeps persistent statistics and recalculates them itself once a tenth of a table
// changed (innodb_stats_auto_recalc).
//
// The store runs it itself after Migrate applied a migration, and, on SQLite, in the background
// every DefaultOptimizeInterval (WithOptimizeInterval) while open. The store's own history
// queries do not depend on statistics (each names its index, see History), so stale statistics
// never slow replay; Optimize keeps the planner informed for everything else, such as a host's
// own queries through DB. Errors: the database's, wrapped.
func (s *Store) Optimize(ctx context.Context) error { return optimize(ctx, s.db, s.dialect) }

func optimize(ctx context.Context, db interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, d Dialect) error {
	if d != DialectSQLite {
		return nil
	}
	if _, err := db.ExecContext(ctx, sqliteOptimize); err != nil {
		return fmt.Errorf("store: optimize: %w", err)
	}
	return nil
}

// optimizer runs Optimize every interval until stopped; the zero value does nothing.
type optimizer struct {
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

// startOptimizer starts the background Optimize of a SQLite store (none on MySQL or with a
// non-positive interval).
func (s *Store) startOptimizer() {
	if s.dialect != DialectSQLite || s.optimizeEvery <= 0 {
		return
	}
	o := &optimizer{stop: make(chan struct{})}
	s.optimizer = o
	o.done.Add(1)
	go func() {
		defer o.done.Done()
		t := time.NewTicker(s.optimizeEvery)
		defer t.Stop()
		for {
			select {
			case <-o.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), optimizeTimeout)
				// A failed run is retried at the next tick; a store has no place to report it,
				// and stale statistics slow nothing the store itself runs.
				_ = s.Optimize(ctx)
				cancel()
			}
		}
	}()
}

// stopOptimizer stops the background Optimize and waits for a run in progress.
func (s *Store) stopOptimizer() {
	if o := s.optimizer; o != nil {
		o.once.Do(func() { close(o.stop) })
		o.done.Wait()
	}
}
