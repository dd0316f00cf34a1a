package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// migrations holds the schema as SQL files per dialect, migrations/{mysql,sqlite}/NNNNN_name.sql,
// in goose's annotated format (-- +goose Up / -- +goose Down). Both directories carry the same
// versions; a later feature adds its own numbered file to both.
//
//go:embed migrations/mysql/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// MigrationsFS returns the embedded migration files of dialect d, the goose-annotated SQL files
// named NNNNN_name.sql at the root of the returned file system. It returns an error wrapping
// ErrUnknownDialect for a d other than DialectMySQL and DialectSQLite.
func MigrationsFS(d Dialect) (fs.FS, error) {
	if d != DialectMySQL && d != DialectSQLite {
		return nil, fmt.Errorf("%w %q: use %q or %q", ErrUnknownDialect, string(d), DialectMySQL, DialectSQLite)
	}
	return fs.Sub(migrations, path.Join("migrations", d.driverName()))
}

// ErrUnknownDialect is returned (wrapped) by MigrationsFS and Migrate for a Dialect value that
// is neither DialectMySQL nor DialectSQLite.
var ErrUnknownDialect = errors.New("store: unknown dialect")

// Migrate applies every pending migration of the store's dialect (see the package func Migrate).
func (s *Store) Migrate(ctx context.Context) error {
	_, err := Migrate(ctx, s.db.DB, s.dialect)
	return err
}

// Migrate applies every pending embedded migration of dialect d to db, in version order, with
// github.com/pressly/goose/v3 (its Provider API; applied versions are recorded in the table
// goose_db_version). A pending migration numbered below the database's newest one is applied
// too, in version order: migrations are numbered by feature (each in its own range), so a
// database migrated by an earlier build can lack a lower number that landed later. It returns
// the file names it applied, none when the schema was current, so running it twice is
// harmless. It holds a migration lock while it runs, so any number of
// processes migrating the same database at once apply each migration once: on MySQL a named
// server lock (GET_LOCK, scoped to the database); on SQLite a row of the table
// personagen_migration_lock (SQLite has no named locks), inserted to take the lock and deleted
// to release it, with a lock older than 10 minutes (a migrator that died) taken over. Errors
// (wrapped): goose's when it cannot set up (reading the embedded files, creating
// goose_db_version), the lock's when another migrator holds it for more than 60 seconds, and a
// failed migration's; with the last, the names applied before the failure are returned too
// (they stay applied). On SQLite each file runs in a transaction, so a failed or interrupted
// file leaves nothing behind. MySQL cannot roll back DDL, so there the store runs a file's
// statements one at a time and records its progress, and the next Migrate after an
// interruption (a killed process, a cut connection) resumes the file where it stopped (see
// migrateMySQL). When it applied any migration to a SQLite database it then refreshes the
// planner's statistics as Store.Optimize does (an error doing so is returned with every name
// applied).
func Migrate(ctx context.Context, db *sql.DB, d Dialect) ([]string, error) {
	fsys, err := MigrationsFS(d)
	if err != nil {
		return nil, fmt.Errorf("store: migrations for %s: %w", d, err)
	}
	if d == DialectMySQL {
		return migrateMySQL(ctx, db, fsys)
	}
	var locker lock.SessionLocker = sqliteMigrationLock{token: newClaimToken()}
	p, err := goose.NewProvider(goose.DialectSQLite3, db, fsys, goose.WithDisableGlobalRegistry(true), goose.WithSessionLocker(locker),
		goose.WithAllowOutofOrder(true))
	if err != nil {
		return nil, fmt.Errorf("store: migrations for %s: %w", d, err)
	}
	results, err := p.Up(ctx)
	var applied []string
	for _, r := range results {
		if r.Error == nil {
			applied = append(applied, path.Base(r.Source.Path))
		}
	}
	if err != nil {
		return applied, fmt.Errorf("store: migrate %s: %w", d, err)
	}
	if len(applied) > 0 {
		if err := optimize(ctx, db, d); err != nil {
			return applied, err
		}
	}
	return applied, nil
}

// mysqlMigrationLock is a goose session locker that takes a MySQL named lock for the database
// being migrated, waiting up to a minute for another migrator to finish.
type mysqlMigrationLock struct{}

const migrationLockSQL = "CONCAT('personagen_migrate.', DATABASE())"

func (mysqlMigrationLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK("+migrationLockSQL+", 60)").Scan(&got); err != nil {
		return fmt.Errorf("store: take migration lock: %w", err)
	}
	if !got.Valid || got.Int64 != 1 {
		return fmt.Errorf("store: take migration lock: another migration held it for 60 s")
	}
	return nil
}

func (mysqlMigrationLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "DO RELEASE_LOCK("+migrationLockSQL+")"); err != nil {
		return fmt.Errorf("store: release migration lock: %w", err)
	}
	return nil
}

// sqliteMigrationLock is a goose session locker for SQLite: the lock is the one row of
// personagen_migration_lock. Taking it inserts the row (the primary key lets one inserter win);
// the others poll every 50 ms for up to a minute. A row older than sqliteStaleLock belongs to a
// migrator that died and is deleted. Each statement commits on its own under the busy timeout.
type sqliteMigrationLock struct {
	token string // identifies this migrator's row, so it releases only its own lock
}

// sqliteStaleLock is how old a SQLite migration lock must be before another migrator removes it.
const sqliteStaleLock = 10 * time.Minute

// sqliteLockWait is how long a SQLite migrator waits for another one's lock (a variable so that
// tests need not wait a minute).
var sqliteLockWait = time.Minute

func (l sqliteMigrationLock) SessionLock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS personagen_migration_lock (
		id INTEGER PRIMARY KEY CHECK (id = 1), locked_by TEXT NOT NULL, locked_at TEXT NOT NULL)`); err != nil {
		return fmt.Errorf("store: create the migration lock table: %w", err)
	}
	deadline := time.Now().Add(sqliteLockWait)
	for {
		now := time.Now().UTC()
		_, err := conn.ExecContext(ctx, "INSERT INTO personagen_migration_lock (id, locked_by, locked_at) VALUES (1, ?, ?)",
			l.token, now.Format(timeLayout))
		if err == nil {
			return nil
		}
		if !isDuplicateKey(err) && !isRetryable(err) {
			return fmt.Errorf("store: take migration lock: %w", err)
		}
		if _, err := conn.ExecContext(ctx, "DELETE FROM personagen_migration_lock WHERE locked_at < ?",
			now.Add(-sqliteStaleLock).Format(timeLayout)); err != nil && !isRetryable(err) {
			return fmt.Errorf("store: clear a stale migration lock: %w", err)
		}
		if now.After(deadline) {
			var since string
			if err := conn.QueryRowContext(ctx, "SELECT locked_at FROM personagen_migration_lock WHERE id = 1").Scan(&since); err != nil {
				return fmt.Errorf("store: take migration lock: another migration held it for %v", sqliteLockWait)
			}
			msg := "store: take migration lock: another migration has held it since " + since + " UTC"
			if at, err := time.Parse(timeLayout, since); err == nil {
				msg += fmt.Sprintf(" and still held it after %v; if no migration is running (one that died leaves its lock), the lock is taken over from %s UTC on, %v after it was taken",
					sqliteLockWait, at.Add(sqliteStaleLock).Format("2006-01-02 15:04:05"), sqliteStaleLock)
			}
			return errors.New(msg)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: take migration lock: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (l sqliteMigrationLock) SessionUnlock(ctx context.Context, conn *sql.Conn) error {
	if _, err := conn.ExecContext(ctx, "DELETE FROM personagen_migration_lock WHERE id = 1 AND locked_by = ?", l.token); err != nil {
		return fmt.Errorf("store: release migration lock: %w", err)
	}
	return nil
}

// ErrNotMigrated is returned (wrapped) by Ready when the database lacks migrations this build
// embeds.
var ErrNotMigrated = errors.New("store: the database schema is not migrated")

// Ready reports whether the store can serve: the database answers and every embedded migration
// of its dialect is applied (a newer schema, migrated by a later build, is ready too). One ping
// and one query. Errors: the database's (wrapped), or ErrNotMigrated (wrapped) naming the
// first missing migration.
func (s *Store) Ready(ctx context.Context) error {
	if err := s.db.PingContext(ctx); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	fsys, err := MigrationsFS(s.dialect)
	if err != nil {
		return err
	}
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return err
	}
	var applied []int64
	if err := s.db.SelectContext(ctx, &applied, `SELECT version_id FROM goose_db_version WHERE is_applied = ? AND version_id > 0`, true); err != nil {
		return fmt.Errorf("%w: %v", ErrNotMigrated, err)
	}
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return err
		}
		if !slices.Contains(applied, v) {
			return fmt.Errorf("%w: %s is not applied (run personagen migrate, or Store.Migrate)", ErrNotMigrated, name)
		}
	}
	return nil
}
