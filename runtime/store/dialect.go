package store

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"
)

// Dialect names the SQL database a Store talks to. Every SQL difference between the two lives in
// this file (the unexported helpers below), so the rest of the package writes one query text.
type Dialect string

// The two dialects the store supports.
const (
	// DialectMySQL is MySQL 8 or MariaDB 10.5+ through github.com/go-sql-driver/mysql.
	DialectMySQL Dialect = "mysql"
	// DialectSQLite is SQLite through the pure-Go driver modernc.org/sqlite.
	DialectSQLite Dialect = "sqlite"
)

// String returns the dialect's name ("mysql" or "sqlite").
func (d Dialect) String() string { return string(d) }

// driverName is the database/sql driver name registered for the dialect.
func (d Dialect) driverName() string {
	if d == DialectSQLite {
		return "sqlite"
	}
	return "mysql"
}

// rebind turns a query written with '?' placeholders into the dialect's placeholder form. Both
// supported dialects take '?', so it returns q unchanged today; queries go through it anyway so
// a third dialect needs no query edits.
func (d Dialect) rebind(q string) string { return sqlx.Rebind(sqlx.QUESTION, q) }

// insertIgnoringConflict returns an INSERT of cols into table that does nothing when a row with
// the same conflict key exists. It is NOT "INSERT IGNORE": only the key conflict is ignored, so
// truncation, NULL and check errors still fail the statement. One row of '?' placeholders.
func (d Dialect) insertIgnoringConflict(table string, cols, conflict []string) string {
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + placeholders(len(cols)) + ")"
	if d == DialectSQLite {
		return q + " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO NOTHING"
	}
	return q + " ON DUPLICATE KEY UPDATE " + conflict[0] + " = " + conflict[0]
}

// ignoringDuplicates returns the suffix that makes an INSERT leave alone every row that
// collides with a stored one on any unique key (primary key included), inserting the others.
// Like insertIgnoringConflict it is not "INSERT IGNORE": only key collisions are ignored.
func (d Dialect) ignoringDuplicates(keyColumn string) string {
	if d == DialectSQLite {
		return " ON CONFLICT DO NOTHING"
	}
	return " ON DUPLICATE KEY UPDATE " + keyColumn + " = " + keyColumn
}

// upsert returns an INSERT of cols into table that, when a row with the same conflict key
// exists, overwrites the update columns with the values the INSERT carried. One row of '?'
// placeholders.
func (d Dialect) upsert(table string, cols, conflict, update []string) string {
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + placeholders(len(cols)) + ")"
	sets := make([]string, len(update))
	for i, c := range update {
		if d == DialectSQLite {
			sets[i] = c + " = excluded." + c
		} else {
			sets[i] = c + " = VALUES(" + c + ")"
		}
	}
	if d == DialectSQLite {
		return q + " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO UPDATE SET " + strings.Join(sets, ", ")
	}
	return q + " ON DUPLICATE KEY UPDATE " + strings.Join(sets, ", ")
}

// forUpdate returns the suffix that write-locks the rows a SELECT reads inside a transaction:
// " FOR UPDATE" on MySQL; "" on SQLite, whose transactions (begun IMMEDIATE by Open) already hold
// the database's write lock.
func (d Dialect) forUpdate() string {
	if d == DialectSQLite {
		return ""
	}
	return " FOR UPDATE"
}

// placeholders returns n '?' placeholders separated by ", ".
func placeholders(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

// timeLayout is how times are stored as text on SQLite: fixed width, UTC, microseconds, so text
// order is time order.
const timeLayout = "2006-01-02 15:04:05.000000"

// timeArg converts t into the argument the dialect stores in a time column: on MySQL a
// time.Time in UTC truncated to the microsecond (DATETIME(6) holds no more, and truncating in Go
// keeps MySQL from rounding), on SQLite the timeLayout text of the same instant.
func (d Dialect) timeArg(t time.Time) any {
	t = t.UTC().Truncate(time.Microsecond)
	if d == DialectSQLite {
		return t.Format(timeLayout)
	}
	return t
}

// dbTime scans a time column of either dialect: a time.Time (MySQL with parseTime=true, or
// SQLite when the driver recognised the text) or text in timeLayout or RFC 3339 form. The result
// is always in UTC. A NULL leaves Valid false.
type dbTime struct {
	Time  time.Time
	Valid bool
}

// Scan implements sql.Scanner.
func (t *dbTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*t = dbTime{}
		return nil
	case time.Time:
		*t = dbTime{Time: v.UTC(), Valid: true}
		return nil
	case []byte:
		return t.parse(string(v))
	case string:
		return t.parse(v)
	}
	return fmt.Errorf("store: cannot scan %T into a time", src)
}

func (t *dbTime) parse(s string) error {
	for _, layout := range []string{timeLayout, "2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
		if v, err := time.Parse(layout, s); err == nil {
			*t = dbTime{Time: v.UTC(), Valid: true}
			return nil
		}
	}
	return fmt.Errorf("store: cannot parse time %q", s)
}

// clockQuery returns the query that reads the database's clock in UTC, and the resolution of
// its answer: MySQL's UTC_TIMESTAMP(6) to the microsecond (whatever the session's time zone),
// SQLite's strftime to the millisecond.
func (d Dialect) clockQuery() (string, time.Duration) {
	if d == DialectSQLite {
		return "SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')", time.Millisecond
	}
	return "SELECT UTC_TIMESTAMP(6)", time.Microsecond
}

// MySQL server error numbers the store acts on.
const (
	mysqlDupEntry         = 1062 // ER_DUP_ENTRY
	mysqlDupEntryWithKey  = 1586 // ER_DUP_ENTRY_WITH_KEY_NAME
	mysqlBadNull          = 1048 // ER_BAD_NULL_ERROR
	mysqlLockWaitTimeout  = 1205 // ER_LOCK_WAIT_TIMEOUT
	mysqlLockDeadlock     = 1213 // ER_LOCK_DEADLOCK
	sqlitePrimaryBusy     = 5    // SQLITE_BUSY (primary code; extended codes keep it in the low byte)
	sqlitePrimaryLocked   = 6    // SQLITE_LOCKED
	sqliteConstraintPK    = 1555 // SQLITE_CONSTRAINT_PRIMARYKEY
	sqliteConstraintUniqu = 2067 // SQLITE_CONSTRAINT_UNIQUE
	sqliteConstraintNull  = 1299 // SQLITE_CONSTRAINT_NOTNULL
)

// isDuplicateKey reports whether err is a unique or primary key violation, judged by the
// driver's error code (never by message text).
func isDuplicateKey(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlDupEntry || me.Number == mysqlDupEntryWithKey
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqliteConstraintUniqu || se.Code() == sqliteConstraintPK
	}
	return false
}

// isNotNull reports whether err is a NULL written to a NOT NULL column, judged by the driver's
// error code.
func isNotNull(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlBadNull
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqliteConstraintNull
	}
	return false
}

// isRetryable reports whether err means "the transaction lost a lock race; running it again
// from the start may succeed": MySQL deadlock (1213) or lock wait timeout (1205), SQLite
// BUSY or LOCKED (any extended code).
func isRetryable(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number == mysqlLockDeadlock || me.Number == mysqlLockWaitTimeout
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		p := se.Code() & 0xff
		return p == sqlitePrimaryBusy || p == sqlitePrimaryLocked
	}
	return false
}

// isBadConn reports whether err says the connection broke (the server may or may not have seen
// the statement).
func isBadConn(err error) bool {
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn)
}

// nullTime is timeArg for a nullable time column: NULL for the zero time.
func (d Dialect) nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return d.timeArg(t)
}

// indexed returns table (with its alias, if any: "messages m") as a FROM clause item that
// reads it through index: "messages m FORCE INDEX (index)" on MySQL, "messages m INDEXED BY
// index" on SQLite. The history queries name their index so that their plans do not depend on
// statistics: both planners otherwise misjudge a store's skewed threads (one thread of 100,000
// messages among thousands of ten), SQLite with or without ANALYZE, MariaDB by preferring
// ref access on thread_id to the range on (thread_id, seq). A missing index then fails the
// statement (MySQL error 1176; SQLite at prepare, also when the index cannot serve the query)
// instead of falling back to a scan; TestHistoryQueryPlans pins the resulting plans.
func (d Dialect) indexed(table, index string) string {
	if d == DialectSQLite {
		return table + " INDEXED BY " + index
	}
	return table + " FORCE INDEX (" + index + ")"
}

// joinInOrder returns the join operator that keeps the written join order, the left table
// being the outer loop: STRAIGHT_JOIN on MySQL, CROSS JOIN on SQLite (whose planner never
// reorders the tables of a CROSS JOIN). Both take an ON clause.
func (d Dialect) joinInOrder() string {
	if d == DialectSQLite {
		return "CROSS JOIN"
	}
	return "STRAIGHT_JOIN"
}

// hourOf returns the expression of a time column's UTC hour as text "YYYY-MM-DD HH".
func (d Dialect) hourOf(col string) string {
	if d == DialectSQLite {
		return "substr(" + col + ", 1, 13)"
	}
	return "DATE_FORMAT(" + col + ", '%Y-%m-%d %H')"
}

// dayOf returns the expression of a time column's UTC day as text "YYYY-MM-DD".
func (d Dialect) dayOf(col string) string {
	if d == DialectSQLite {
		return "substr(" + col + ", 1, 10)"
	}
	return "DATE_FORMAT(" + col + ", '%Y-%m-%d')"
}
