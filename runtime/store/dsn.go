package store

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// ErrUnknownDSN is returned (wrapped) by Open when the DSN's form names neither MySQL nor SQLite.
var ErrUnknownDSN = errors.New("unknown DSN form (want mysql://user:pass@tcp(host:3306)/db, user:pass@tcp(host:3306)/db, sqlite:path, file:path, path.db or :memory:)")

// sqliteBusyTimeout is how long a SQLite connection waits for another writer's lock before it
// fails with SQLITE_BUSY, unless the DSN sets _busy_timeout itself.
const sqliteBusyTimeout = 10 * time.Second

// parsedDSN is a DSN resolved to a dialect and the driver DSN Open hands to database/sql.
type parsedDSN struct {
	dialect Dialect
	// mysql is the driver configuration (MySQL only).
	mysql *mysql.Config
	// sqlite is the modernc.org/sqlite DSN (SQLite only).
	sqlite string
	// memory is true for an in-memory SQLite database, which lives only as long as its one
	// connection.
	memory bool
}

// parseDSN chooses the dialect from dsn's form and returns the driver configuration with the
// settings the store relies on forced in. See Open for the accepted forms.
func parseDSN(dsn string) (parsedDSN, error) {
	dsn = strings.TrimSpace(dsn)
	switch {
	case dsn == "":
		return parsedDSN{}, fmt.Errorf("store: empty DSN: %w", ErrUnknownDSN)
	case strings.HasPrefix(dsn, "mysql://"):
		return parseMySQLDSN(strings.TrimPrefix(dsn, "mysql://"), dsn)
	case strings.Contains(dsn, "@tcp(") || strings.Contains(dsn, "@unix(") ||
		strings.HasPrefix(dsn, "tcp(") || strings.HasPrefix(dsn, "unix("):
		return parseMySQLDSN(dsn, dsn)
	case strings.HasPrefix(dsn, "sqlite://"):
		return parseSQLiteDSN(strings.TrimPrefix(dsn, "sqlite://"))
	case strings.HasPrefix(dsn, "sqlite:"):
		return parseSQLiteDSN(strings.TrimPrefix(dsn, "sqlite:"))
	case strings.HasPrefix(dsn, "file:"), dsn == ":memory:", strings.HasPrefix(dsn, ":memory:?"):
		return parseSQLiteDSN(dsn)
	}
	path, _, _ := strings.Cut(dsn, "?")
	for _, ext := range []string{".db", ".sqlite", ".sqlite3"} {
		if strings.HasSuffix(path, ext) {
			return parseSQLiteDSN(dsn)
		}
	}
	return parsedDSN{}, fmt.Errorf("store: %w: %q", ErrUnknownDSN, RedactDSN(dsn))
}

// parseMySQLDSN parses a go-sql-driver DSN and forces the settings every query of the store
// assumes: parseTime=true and loc=UTC (DATETIME values come back as UTC time.Time), connection
// charset utf8mb4 with collation utf8mb4_bin (4-byte characters survive), session time_zone
// '+00:00' (CURRENT_TIMESTAMP defaults are UTC), and sql_mode TRADITIONAL (strict: a value too
// long or a NULL in a NOT NULL column is an error, never a silent truncation). interpolateParams
// is turned on unless the DSN sets it, so a statement costs one round trip instead of three.
// typed is the DSN as the caller wrote it (with its mysql:// prefix), which errors quote.
func parseMySQLDSN(dsn, typed string) (parsedDSN, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return parsedDSN{}, fmt.Errorf("store: MySQL DSN %q: %w", RedactDSN(typed), err)
	}
	if cfg.DBName == "" {
		return parsedDSN{}, fmt.Errorf("store: MySQL DSN %q names no database (want …/dbname)", RedactDSN(typed))
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if err := cfg.Apply(mysql.Charset("utf8mb4", "utf8mb4_bin")); err != nil {
		return parsedDSN{}, fmt.Errorf("store: MySQL DSN %q: %w", RedactDSN(typed), err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	delete(cfg.Params, "charset")
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["sql_mode"] = "'TRADITIONAL'"
	if !strings.Contains(dsn, "interpolateParams=") {
		cfg.InterpolateParams = true
	}
	return parsedDSN{dialect: DialectMySQL, mysql: cfg}, nil
}

// parseSQLiteDSN adds the modernc.org/sqlite parameters the store relies on: _txlock=immediate
// (a transaction takes the write lock at BEGIN, so two writers never deadlock upgrading a read
// lock), _foreign_keys=1, a busy timeout (sqliteBusyTimeout unless the DSN sets _busy_timeout or
// _timeout) so a writer waits for the lock instead of failing, and WAL journaling for a file
// database unless the DSN sets _journal_mode or _journal.
func parseSQLiteDSN(dsn string) (parsedDSN, error) {
	path, rawQuery, _ := strings.Cut(dsn, "?")
	if path == "" {
		return parsedDSN{}, fmt.Errorf("store: SQLite DSN %q names no file (use :memory: for an in-memory database): %w", dsn, ErrUnknownDSN)
	}
	q, err := url.ParseQuery(rawQuery)
	if err != nil {
		return parsedDSN{}, fmt.Errorf("store: SQLite DSN %q: bad query: %w", dsn, err)
	}
	memory := strings.Contains(path, ":memory:") || q.Get("mode") == "memory"
	q.Set("_txlock", "immediate")
	q.Set("_foreign_keys", "1")
	q.Del("_fk")
	if q.Get("_busy_timeout") == "" && q.Get("_timeout") == "" {
		q.Set("_busy_timeout", fmt.Sprint(sqliteBusyTimeout.Milliseconds()))
	}
	if !memory && q.Get("_journal_mode") == "" && q.Get("_journal") == "" {
		q.Set("_journal_mode", "WAL")
	}
	return parsedDSN{dialect: DialectSQLite, sqlite: path + "?" + q.Encode(), memory: memory}, nil
}

// RedactDSN hides the password of a go-sql-driver DSN ("user:secret@tcp…" → "user:***@tcp…",
// also after a mysql:// prefix, which is kept) or of another URL ("scheme://user:secret@…" →
// "scheme://user:xxxxx@…") so errors can quote the DSN as it was written.
func RedactDSN(dsn string) string {
	if rest, ok := strings.CutPrefix(dsn, "mysql://"); ok {
		return "mysql://" + redactDriverDSN(rest)
	}
	if strings.Contains(dsn, "://") {
		// Only a URL with user info is redacted as a URL: "u:secret@tcp(h)/d?x=a://b" also
		// parses, as scheme "u" with the password inside the opaque part, which Redacted keeps.
		if u, err := url.Parse(dsn); err == nil && u.User != nil {
			return u.Redacted()
		}
	}
	return redactDriverDSN(dsn)
}

// redactDriverDSN hides the password of a go-sql-driver DSN, split as the driver splits it: the
// last "/" ends the address, the last "@" before it ends the user info, and the first ":" in
// that starts the password. Where the split is ambiguous it hides more, never less.
func redactDriverDSN(dsn string) string {
	head := dsn
	if slash := strings.LastIndex(dsn, "/"); slash >= 0 {
		head = dsn[:slash]
	}
	at := strings.LastIndex(head, "@")
	if at < 0 {
		at = strings.LastIndex(dsn, "@")
	}
	if at < 0 {
		return dsn
	}
	colon := strings.Index(dsn[:at], ":")
	if colon < 0 {
		return dsn
	}
	return dsn[:colon+1] + "***" + dsn[at:]
}
