package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite" // also registers the "sqlite" database/sql driver
)

// Store is the SQL store of threads, messages, runs, tool uses and compactions, on MySQL /
// MariaDB or SQLite. It is safe for concurrent use; it holds no state besides its connection
// pool and options.
type Store struct {
	db      *sqlx.DB
	dialect Dialect
	redact  RedactFunc
	// now is the store's clock: WithClock's, or dbClock's (the database's clock, measured by
	// startClock on localNow: WithLocalClock's or time.Now).
	now      func() time.Time
	localNow func() time.Time
	dbClock  *dbClock
	// clockSync is how often the database's clock is measured again (DefaultClockSync; tests
	// set it with withClockSync).
	clockSync time.Duration

	// optimizeEvery is the interval of the background Optimize on SQLite (0: none);
	// optimizer runs it.
	optimizeEvery time.Duration
	optimizer     *optimizer

	// hooks lets tests inject faults into RecordRound; nil in production.
	hooks *roundHooks

	// wrapConnector, set by WithConnector, wraps the connector Open builds.
	wrapConnector func(driver.Connector) driver.Connector

	// maxOpenConns bounds Open's MySQL pool (WithMaxOpenConns; DefaultMaxOpenConns unless given).
	maxOpenConns int
}

// Option configures a Store at Open or OpenDB.
type Option func(*Store)

// PayloadKind says which payload of a tool use a RedactFunc is looking at.
type PayloadKind string

// The two payload kinds of a tool use.
const (
	// PayloadArguments is the call's input, the raw JSON object text the model produced.
	PayloadArguments PayloadKind = "arguments"
	// PayloadResult is the tool's result content.
	PayloadResult PayloadKind = "result"
)

// RedactFunc rewrites a tool-use payload before it is stored: toolName is the call's tool name,
// kind says whether payload is the arguments or the result. It runs on the full payload, before
// the store clips it to StoredPayloadLimit characters, so a secret cannot survive half-cut at the
// clip boundary. It must be deterministic (a retried round must redact to the same text, or the
// retry reports a conflict) and must not block on I/O.
type RedactFunc func(toolName string, kind PayloadKind, payload string) string

// WithRedact installs the host's redaction func for tool-use payloads (for example to drop API
// keys from arguments or personal data from results). Without it payloads are stored as given
// (clipped).
func WithRedact(f RedactFunc) Option { return func(s *Store) { s.redact = f } }

// WithClock sets the clock the store reads for the times it stamps itself and judges leases on:
// a run's start, finish and lease expiry, a compaction's claim and completion. The store then
// uses now as it is, uncorrected, and measures nothing (a test's fake clock). The default is the
// database's clock (see Now, WithLocalClock and DefaultClockSync). Times are stored in UTC to
// the microsecond; a clock returning a time outside years 1000 to 9999 (the zero time included)
// makes those writes fail with ErrInvalid before anything is written.
func WithClock(now func() time.Time) Option { return func(s *Store) { s.now = now } }

// WithConnector makes Open reach the database through wrap(c), where c is the driver connector
// Open built from the DSN (with the settings it forces): a host instruments the store's database
// traffic this way — statement tracing, metrics, counting round trips. wrap must return a
// connector of the same driver whose connections behave as c's. OpenDB ignores it.
func WithConnector(wrap func(c driver.Connector) driver.Connector) Option {
	return func(s *Store) { s.wrapConnector = wrap }
}

// DefaultMaxOpenConns is how many connections Open's MySQL / MariaDB pool opens at most (in use
// and idle together) unless WithMaxOpenConns says otherwise. Four processes at the default stay
// under MariaDB's and MySQL's default max_connections (151) with room for an operator's session.
const DefaultMaxOpenConns = 32

// minMySQLConns is the smallest MySQL pool Migrate can work with: it holds its migration lock on
// one connection while it applies a file on another.
const minMySQLConns = 2

// WithMaxOpenConns sets how many connections Open's MySQL / MariaDB pool opens at most, counting
// those in use and those idle; the pool also keeps up to n idle connections for reuse. The
// default is DefaultMaxOpenConns. When all n are in use, a call waits for one to be returned
// (database/sql's rule), for as long as its context allows. No call of the store holds one
// connection while it waits for another, except Migrate, which needs two: any n ≥ 2 works, a
// small n only makes calls wait. n < 2 makes Open fail with ErrInvalid, whatever the database.
// SQLite ignores n: a file database keeps database/sql's unbounded pool and an in-memory one
// its single connection. OpenDB ignores it too (the host configured its pool).
func WithMaxOpenConns(n int) Option {
	return func(s *Store) { s.maxOpenConns = n }
}

// Open connects to the database dsn names, checks the connection with a ping, and returns the
// Store. It does not create tables: call Migrate (or run `personagen migrate`) once per database.
//
// The DSN's form chooses the driver:
//
//   - MySQL / MariaDB (github.com/go-sql-driver/mysql): "mysql://user:pass@tcp(host:3306)/db",
//     or any go-sql-driver DSN containing "@tcp(" or "@unix(" (or starting with "tcp(" / "unix(").
//     Whatever the DSN says, Open forces parseTime=true, loc=UTC, charset utf8mb4 with collation
//     utf8mb4_bin, session time_zone '+00:00' and sql_mode TRADITIONAL (strict), and turns on
//     interpolateParams unless the DSN sets it. Its pool opens at most DefaultMaxOpenConns
//     connections (see WithMaxOpenConns), keeps as many idle, and retires each after 5 minutes.
//   - SQLite (modernc.org/sqlite, pure Go): "sqlite:path", "sqlite://path", "file:path?…", a path
//     ending in .db, .sqlite or .sqlite3, or ":memory:". Open forces _txlock=immediate and
//     foreign keys on, and defaults a 10 s busy timeout and (for files) WAL journaling. An
//     in-memory database exists per connection, so Open limits its pool to one connection: the
//     store's operations then queue for it instead of each seeing a different empty database.
//
// Errors: ErrInvalid (wrapped) for WithMaxOpenConns below 2; ErrUnknownDSN (wrapped) for an empty
// DSN, a DSN of neither form, or a SQLite DSN with no path; a driver parse error (wrapped) for a
// malformed MySQL DSN, and an error for one that names no database; the url.ParseQuery error
// (wrapped) for a SQLite DSN with a malformed query; and the ping's error (wrapped, with the
// password hidden) when the server cannot be reached; a ping that SQLite refuses as BUSY
// (connections racing to switch a new file to WAL) is retried up to 5 times first. Unless WithClock
// is given, Open then measures the database's clock (see Now) and fails when it cannot read it, or
// not to within MaxClockError. Close the Store when done.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	p, err := parseDSN(dsn)
	if err != nil {
		return nil, err
	}
	cfg := Store{maxOpenConns: DefaultMaxOpenConns} // the options Open itself needs
	for _, o := range opts {
		o(&cfg)
	}
	maxConns := cfg.maxOpenConns
	if maxConns < minMySQLConns {
		return nil, fmt.Errorf("%w: max open connections %d (want at least %d: Migrate holds a lock on one connection while it migrates on another)",
			ErrInvalid, maxConns, minMySQLConns)
	}
	wrap := cfg.wrapConnector
	if wrap == nil {
		wrap = func(c driver.Connector) driver.Connector { return c }
	}
	var db *sqlx.DB
	switch p.dialect {
	case DialectMySQL:
		conn, err := mysql.NewConnector(p.mysql)
		if err != nil {
			return nil, fmt.Errorf("store: MySQL DSN %q: %w", RedactDSN(dsn), err)
		}
		db = sqlx.NewDb(sql.OpenDB(wrap(conn)), p.dialect.driverName())
		db.SetMaxOpenConns(maxConns)
		db.SetMaxIdleConns(maxConns)
		db.SetConnMaxLifetime(5 * time.Minute)
	default:
		db = sqlx.NewDb(sql.OpenDB(wrap(dsnConnector{dsn: p.sqlite, driver: &sqlite.Driver{}})), p.dialect.driverName())
		if p.memory {
			db.SetMaxOpenConns(1)
			db.SetMaxIdleConns(1)
			db.SetConnMaxLifetime(0)
			db.SetConnMaxIdleTime(0)
		}
	}
	st := newStore(db, p.dialect, opts)
	// The first connections to a new SQLite file race to switch it to WAL, which SQLite may
	// refuse with BUSY without waiting: the ping is retried like a lost lock race.
	if err := st.retrying(ctx, func() error { return db.PingContext(ctx) }); err != nil {
		st.Close()
		return nil, fmt.Errorf("store: connect to %s database %q: %w", p.dialect, RedactDSN(dsn), err)
	}
	if err := st.startClock(ctx, st.clockSync); err != nil {
		st.Close()
		return nil, fmt.Errorf("%w (database %q)", err, RedactDSN(dsn))
	}
	return st, nil
}

// dsnConnector is the connector database/sql makes of a driver without one of its own (as
// sql.Open does): each connection opened with the DSN.
type dsnConnector struct {
	dsn    string
	driver driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.driver.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.driver }

// OpenDB wraps a pool the host opened itself. Its driver name ("mysql" or "sqlite", as
// db.DriverName reports it) chooses the dialect; the pool must be configured as Open would
// configure it (see Open), or times and text will not round-trip. It returns an error for any
// other driver name, and, unless WithClock is given, when it cannot measure the database's
// clock (see Open; the measurement is bounded by 10 seconds). Closing the Store closes db.
func OpenDB(db *sqlx.DB, opts ...Option) (*Store, error) {
	var d Dialect
	switch db.DriverName() {
	case "mysql":
		d = DialectMySQL
	case "sqlite":
		d = DialectSQLite
	default:
		return nil, fmt.Errorf("store: unsupported driver %q (want mysql or sqlite)", db.DriverName())
	}
	st := newStore(db, d, opts)
	ctx, cancel := context.WithTimeout(context.Background(), clockTimeout)
	defer cancel()
	if err := st.startClock(ctx, st.clockSync); err != nil {
		st.stopOptimizer()
		return nil, err
	}
	return st, nil
}

func newStore(db *sqlx.DB, d Dialect, opts []Option) *Store {
	s := &Store{db: db, dialect: d, optimizeEvery: DefaultOptimizeInterval, clockSync: DefaultClockSync}
	for _, o := range opts {
		o(s)
	}
	s.startOptimizer()
	return s
}

// DB returns the store's connection pool, for queries the store does not offer. Statements
// written for it must work on both dialects or check Dialect.
func (s *Store) DB() *sqlx.DB { return s.db }

// Dialect returns the database the store talks to.
func (s *Store) Dialect() Dialect { return s.dialect }

// Close stops the background Optimize and the clock's measurements (waiting for one in
// progress) and closes the connection pool.
func (s *Store) Close() error {
	s.stopOptimizer()
	s.stopClock()
	return s.db.Close()
}
