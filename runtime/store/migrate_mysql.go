package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// MySQL commits every DDL statement on its own, so a migration interrupted halfway (the process
// killed, the connection cut, a deploy's timeout) leaves some of its statements applied and
// none recorded: goose runs the whole file again, and its first statement fails ("Table
// 'threads' already exists") on every later attempt. So on MySQL the store runs each file's
// statements itself, one at a time on one connection, and records after each how many have
// run, in the table personagen_migration_progress; goose still orders the files, holds the
// lock and records the versions. A run that finds progress for the file it is about to apply
// resumes after the statements recorded. The one statement that may have run without being
// recorded (the interruption fell between it and its record; the statements after it never
// started) is run again, and an error that says its change is already there (table or column
// exists, index or key already gone, a row already copied) counts as done. SET statements set
// session state for the statements after them and are run again on the new connection.

// progressTable records, for a MySQL migration being applied, how many of its statements ran.
const progressTable = "personagen_migration_progress"

// mysqlMigration is one embedded MySQL migration file split into its statements.
type mysqlMigration struct {
	version  int64
	name     string // the file name, 00004_message_scope.sql
	up, down []string
}

// readMySQLMigrations reads and splits the embedded MySQL migration files, in version order.
func readMySQLMigrations(fsys fs.FS) ([]mysqlMigration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var out []mysqlMigration
	for _, name := range names {
		v, err := goose.NumericComponent(name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		text, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		up, down, err := splitMigration(string(text))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, mysqlMigration{version: v, name: path.Base(name), up: up, down: down})
	}
	return out, nil
}

// splitMigration returns the statements of a goose-annotated SQL file's Up and Down sections,
// split as goose splits them: a statement ends at a line whose last character (spaces aside) is
// ";", or spans a -- +goose StatementBegin / StatementEnd block; lines starting with "--" are
// comments. A file with -- +goose NO TRANSACTION, or with text after its last statement, is an
// error.
func splitMigration(text string) (up, down []string, err error) {
	var section *[]string
	var buf strings.Builder
	block := false
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if ann, ok := strings.CutPrefix(trimmed, "-- +goose "); ok {
			switch strings.TrimSpace(ann) {
			case "Up":
				section = &up
			case "Down":
				section = &down
			case "StatementBegin":
				block = true
			case "StatementEnd":
				block = false
				*section = append(*section, strings.TrimSpace(buf.String()))
				buf.Reset()
			default:
				return nil, nil, fmt.Errorf("line %d: goose annotation %q is not supported by the MySQL migration runner", i+1, ann)
			}
			continue
		}
		if section == nil || (!block && (trimmed == "" || strings.HasPrefix(trimmed, "--"))) {
			continue
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		if !block && strings.HasSuffix(trimmed, ";") {
			*section = append(*section, strings.TrimSpace(buf.String()))
			buf.Reset()
		}
	}
	if strings.TrimSpace(buf.String()) != "" {
		return nil, nil, errors.New("text after the last statement (a statement ends with \";\" at the end of a line)")
	}
	return up, down, nil
}

// migrateMySQL applies the pending embedded MySQL migrations one file at a time (see above) and
// returns the names of the files it applied.
func migrateMySQL(ctx context.Context, db *sql.DB, fsys fs.FS) ([]string, error) {
	files, err := readMySQLMigrations(fsys)
	if err != nil {
		return nil, fmt.Errorf("store: migrations for mysql: %w", err)
	}
	if err := repairVersionTable(ctx, db); err != nil {
		return nil, fmt.Errorf("store: migrations for mysql: %w", err)
	}
	p, err := mysqlProvider(ctx, db, files)
	if err != nil {
		return nil, fmt.Errorf("store: migrations for mysql: %w", err)
	}
	names := map[int64]string{}
	for _, f := range files {
		names[f.version] = f.name
	}
	var applied []string
	for {
		r, err := p.UpByOne(ctx)
		if errors.Is(err, goose.ErrNoNextVersion) {
			return applied, nil
		}
		if err != nil {
			return applied, fmt.Errorf("store: migrate mysql: %w", err)
		}
		applied = append(applied, names[r.Source.Version])
		// Recorded by goose: its progress is no longer needed (a failure to delete it leaves a
		// row that a later run of the same version would skip, so report it).
		if _, err := db.ExecContext(ctx, "DELETE FROM "+progressTable+" WHERE version = ?", r.Source.Version); err != nil {
			return applied, fmt.Errorf("store: migrate mysql: clear the progress of %s: %w", names[r.Source.Version], err)
		}
	}
}

// repairVersionTable finishes goose's set-up of its version table when an interrupted first
// migration left it half done: goose creates goose_db_version and then inserts its version 0
// row, and MySQL commits the CREATE on its own, so an interruption between the two leaves an
// empty table, and goose then fails every later run with "missing zero version migration".
// Under the migration lock, an existing empty version table gets goose's version 0 row.
func repairVersionTable(ctx context.Context, db *sql.DB) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	var lock mysqlMigrationLock
	if err := lock.SessionLock(ctx, conn); err != nil {
		return err
	}
	defer lock.SessionUnlock(context.WithoutCancel(ctx), conn)
	versions, err := database.NewStore(database.DialectMySQL, goose.DefaultTablename)
	if err != nil {
		return err
	}
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?",
		goose.DefaultTablename).Scan(&n); err != nil || n == 0 {
		return err
	}
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+goose.DefaultTablename).Scan(&n); err != nil || n > 0 {
		return err
	}
	if err := versions.Insert(ctx, conn, database.InsertRequest{Version: 0}); err != nil {
		return fmt.Errorf("repair the version table left empty by an interrupted migration: %w", err)
	}
	return nil
}

// mysqlProvider returns a goose provider that applies files with runUp (and reverts them with
// runDown) under the MySQL migration lock, and makes sure the progress table exists.
func mysqlProvider(ctx context.Context, db *sql.DB, files []mysqlMigration) (*goose.Provider, error) {
	var migrations []*goose.Migration
	for _, f := range files {
		migrations = append(migrations, goose.NewGoMigration(f.version,
			&goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error { return runUp(ctx, db, f) }},
			&goose.GoFunc{RunDB: func(ctx context.Context, db *sql.DB) error { return runDown(ctx, db, f) }}))
	}
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+progressTable+` (
		version BIGINT NOT NULL PRIMARY KEY,
		statements_done INT NOT NULL
	) ENGINE=InnoDB`); err != nil {
		return nil, fmt.Errorf("create the migration progress table: %w", err)
	}
	return goose.NewProvider(goose.DialectMySQL, db, nil, goose.WithDisableGlobalRegistry(true),
		goose.WithSessionLocker(mysqlMigrationLock{}), goose.WithGoMigrations(migrations...), goose.WithAllowOutofOrder(true))
}

// runUp runs the Up statements of f that have not run yet, on one connection, recording after
// each how many have run.
func runUp(ctx context.Context, db *sql.DB, f mysqlMigration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	res, err := conn.ExecContext(ctx, "INSERT IGNORE INTO "+progressTable+" (version, statements_done) VALUES (?, 0)", f.version)
	if err != nil {
		return fmt.Errorf("record the start of %s: %w", f.name, err)
	}
	fresh, _ := res.RowsAffected()
	done := 0
	if fresh == 0 {
		if err := conn.QueryRowContext(ctx, "SELECT statements_done FROM "+progressTable+" WHERE version = ?", f.version).Scan(&done); err != nil {
			return fmt.Errorf("read the progress of %s: %w", f.name, err)
		}
	}
	for i, stmt := range f.up {
		if i < done {
			// Run and recorded; a SET must be set again on this connection.
			if isSessionStatement(stmt) {
				if _, err := conn.ExecContext(ctx, stmt); err != nil {
					return fmt.Errorf("%s, statement %d of %d: %w", f.name, i+1, len(f.up), err)
				}
			}
			continue
		}
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			// Statement done is the one an interrupted attempt may have run without
			// recording it (statements after it never started).
			if !(fresh == 0 && i == done && alreadyApplied(err)) {
				return fmt.Errorf("%s, statement %d of %d: %w", f.name, i+1, len(f.up), err)
			}
		}
		if _, err := conn.ExecContext(ctx, "UPDATE "+progressTable+" SET statements_done = ? WHERE version = ?", i+1, f.version); err != nil {
			return fmt.Errorf("record the progress of %s: %w", f.name, err)
		}
	}
	return nil
}

// runDown runs the Down statements of f on one connection.
func runDown(ctx context.Context, db *sql.DB, f mysqlMigration) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for i, stmt := range f.down {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("%s, down statement %d of %d: %w", f.name, i+1, len(f.down), err)
		}
	}
	return nil
}

// isSessionStatement reports whether stmt only sets session state (SET ...), which a resumed
// migration must set again on its new connection.
func isSessionStatement(stmt string) bool {
	return len(stmt) > 4 && strings.EqualFold(stmt[:4], "SET ")
}

// MySQL and MariaDB error numbers that say a statement's change is already in place.
var alreadyAppliedErrors = map[uint16]bool{
	1050: true, // ER_TABLE_EXISTS_ERROR: CREATE TABLE of a table that exists
	1051: true, // ER_BAD_TABLE_ERROR: DROP TABLE of a table already dropped
	1054: true, // ER_BAD_FIELD_ERROR: a column already renamed or dropped
	1060: true, // ER_DUP_FIELDNAME: ADD COLUMN of a column that exists
	1061: true, // ER_DUP_KEYNAME: ADD INDEX of an index that exists
	1062: true, // ER_DUP_ENTRY: INSERT ... SELECT of rows already copied
	1091: true, // ER_CANT_DROP_FIELD_OR_KEY: DROP of an index, key or constraint already dropped
	1146: true, // ER_NO_SUCH_TABLE: a table already renamed or dropped
	1176: true, // ER_KEY_DOES_NOT_EXITS: RENAME INDEX of an index already renamed
	1359: true, // ER_TRG_ALREADY_EXISTS: CREATE TRIGGER of a trigger that exists
	1360: true, // ER_TRG_DOES_NOT_EXIST: DROP TRIGGER of a trigger already dropped
	1826: true, // ER_FK_DUP_NAME: ADD CONSTRAINT ... FOREIGN KEY that exists
	3822: true, // ER_CHECK_CONSTRAINT_DUP_NAME (MySQL 8): ADD CONSTRAINT ... CHECK that exists
	4031: true, // MariaDB: duplicate CHECK constraint name
}

// alreadyApplied reports whether err says the statement's change is already there. MariaDB
// reports a foreign key that exists as 1005 ER_CANT_CREATE_TABLE with the storage engine's
// errno 121 (duplicate key) in the message, the only place the cause is given.
func alreadyApplied(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	return alreadyAppliedErrors[me.Number] || (me.Number == 1005 && strings.Contains(me.Message, "errno: 121 "))
}
