package storetest

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
)

// CountTrips returns a connector whose connections behave as c's and add one to n for every
// call that reaches the server: each BEGIN, COMMIT, ROLLBACK, statement execution, query,
// prepare and ping is one round trip. A call the driver declines with driver.ErrSkip
// (database/sql then prepares instead) is not counted; the prepare and the execution of the
// prepared statement that replace it are. Pass it to store.WithConnector, or to sql.OpenDB.
//
// When log is not nil it records what the connections run (see QueryLog).
func CountTrips(c driver.Connector, n *atomic.Int64, log *QueryLog) driver.Connector {
	return tripConnector{Connector: c, n: n, log: log}
}

// QueryLog records what the connections of a CountTrips connector run: the text and arguments
// of every query (QueryContext on the connection, before it runs: a query the driver declines
// with driver.ErrSkip is recorded too), and apart from them the text of every statement
// executed on the connection (not one declined with driver.ErrSkip) and "BEGIN", "COMMIT" and
// "ROLLBACK" for each transaction. Statements run through a prepared statement are counted by
// CountTrips but not recorded. The zero QueryLog is empty and ready to use; it is safe for
// concurrent use.
type QueryLog struct {
	mu      sync.Mutex
	queries []Query
	execs   []string
}

// Query is one query a QueryLog recorded: its text and its arguments' values, as the
// connection received them.
type Query struct {
	Text string
	Args []any
}

// Take returns the queries recorded since the last Take, in the order they ran.
func (l *QueryLog) Take() []Query {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queries
	l.queries = nil
	return q
}

// TakeExecs returns the statements (and transaction boundaries) recorded since the last
// TakeExecs, in the order they ran.
func (l *QueryLog) TakeExecs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.execs
	l.execs = nil
	return e
}

func (l *QueryLog) query(text string, args []driver.NamedValue) {
	if l == nil {
		return
	}
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	l.mu.Lock()
	l.queries = append(l.queries, Query{text, vals})
	l.mu.Unlock()
}

func (l *QueryLog) exec(stmt string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.execs = append(l.execs, stmt)
	l.mu.Unlock()
}

type tripConnector struct {
	driver.Connector
	n   *atomic.Int64
	log *QueryLog
}

func (c tripConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tripConn{Conn: conn, n: c.n, log: c.log}, nil
}

type tripConn struct {
	driver.Conn
	n   *atomic.Int64
	log *QueryLog
}

func (c *tripConn) count(err error) error {
	if !errors.Is(err, driver.ErrSkip) {
		c.n.Add(1)
	}
	return err
}

func (c *tripConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if c.count(err) != nil {
		return nil, err
	}
	c.log.exec("BEGIN")
	return tripTx{Tx: tx, n: c.n, log: c.log}, nil
}

func (c *tripConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if c.count(err) != nil {
		return nil, err
	}
	return tripStmt{Stmt: st, n: c.n}, nil
}

func (c *tripConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		c.log.exec(query)
	}
	return r, c.count(err)
}

func (c *tripConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.log.query(query, args)
	r, err := c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	return r, c.count(err)
}

func (c *tripConn) Ping(ctx context.Context) error {
	return c.count(c.Conn.(driver.Pinger).Ping(ctx))
}

func (c *tripConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *tripConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *tripConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type tripTx struct {
	driver.Tx
	n   *atomic.Int64
	log *QueryLog
}

func (t tripTx) Commit() error   { t.n.Add(1); t.log.exec("COMMIT"); return t.Tx.Commit() }
func (t tripTx) Rollback() error { t.n.Add(1); t.log.exec("ROLLBACK"); return t.Tx.Rollback() }

type tripStmt struct {
	driver.Stmt
	n *atomic.Int64
}

func (s tripStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.n.Add(1)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s tripStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.n.Add(1)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
