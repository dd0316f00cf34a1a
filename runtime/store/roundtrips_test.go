package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"sync/atomic"
)

// tripConnector wraps a driver.Connector and counts the calls that reach the server: each
// BEGIN, COMMIT, ROLLBACK, statement execution, query, prepare and ping is one round trip. A
// call the driver declines with driver.ErrSkip (database/sql then prepares instead) is not
// counted; the prepare and statement execution that replace it are.
type tripConnector struct {
	driver.Connector
	trips *atomic.Int64
	log   *queryLog // when set, records every query run and, apart, every statement and transaction
}

// queryLog records the text and arguments of the queries a tripConnector's connections run,
// and apart from them the statements they execute (BEGIN, COMMIT and ROLLBACK included).
type queryLog struct {
	mu      sync.Mutex
	queries []loggedQuery
	execs   []string
}

type loggedQuery struct {
	query string
	args  []any
}

func (l *queryLog) add(query string, args []driver.NamedValue) {
	vals := make([]any, len(args))
	for i, a := range args {
		vals[i] = a.Value
	}
	l.mu.Lock()
	l.queries = append(l.queries, loggedQuery{query, vals})
	l.mu.Unlock()
}

func (l *queryLog) addExec(stmt string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.execs = append(l.execs, stmt)
	l.mu.Unlock()
}

// takeExecs returns the statements recorded since the last takeExecs.
func (l *queryLog) takeExecs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.execs
	l.execs = nil
	return e
}

// take returns the queries recorded since the last take.
func (l *queryLog) take() []loggedQuery {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queries
	l.queries = nil
	return q
}

func (c tripConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tripConn{Conn: conn, trips: c.trips, log: c.log}, nil
}

type tripConn struct {
	driver.Conn
	trips *atomic.Int64
	log   *queryLog
}

func (c *tripConn) count(err error) error {
	if !errors.Is(err, driver.ErrSkip) {
		c.trips.Add(1)
	}
	return err
}

func (c *tripConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if c.count(err) != nil {
		return nil, err
	}
	c.log.addExec("BEGIN")
	return tripTx{Tx: tx, trips: c.trips, log: c.log}, nil
}

func (c *tripConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if c.count(err) != nil {
		return nil, err
	}
	return tripStmt{Stmt: st, trips: c.trips}, nil
}

func (c *tripConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if !errors.Is(err, driver.ErrSkip) {
		c.log.addExec(query)
	}
	return r, c.count(err)
}

func (c *tripConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if c.log != nil {
		c.log.add(query, args)
	}
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
	trips *atomic.Int64
	log   *queryLog
}

func (t tripTx) Commit() error   { t.trips.Add(1); t.log.addExec("COMMIT"); return t.Tx.Commit() }
func (t tripTx) Rollback() error { t.trips.Add(1); t.log.addExec("ROLLBACK"); return t.Tx.Rollback() }

type tripStmt struct {
	driver.Stmt
	trips *atomic.Int64
}

func (s tripStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.trips.Add(1)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (s tripStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.trips.Add(1)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}
