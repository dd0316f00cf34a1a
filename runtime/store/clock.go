package store

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// The store's clock. Leases, claims and the times a store stamps are judged on one clock, the
// database's, so that replicas whose local clocks disagree still agree on when a lease expired
// and when a fire is due. Unless WithClock gives it a clock of its own, a Store measures the
// database's clock when it opens and every DefaultClockSync after: it reads the database's time
// (MySQL/MariaDB UTC_TIMESTAMP(6), SQLite strftime('%f', 'now')) between two readings of the
// local clock, three times on one connection, and keeps the reading whose round trip was the
// shortest. Between measurements it advances that reading by the local clock's monotonic time
// elapsed since, so a step of the local wall clock (an NTP correction, an operator's date) does
// not move it. The result is the database's time to within the measurement's error — half the
// round trip plus the database clock's resolution (1 µs on MySQL, 1 ms on SQLite) — plus the
// local clock's drift since (bounded by clockDrift, 200 ppm: at most 12 ms a minute). Now
// subtracts that bound, so the store's clock never reads ahead of the database's: a lease is
// never judged expired, and a fire never due, before it is on the database's clock.
//
// On SQLite the database's clock is the clock of the machine the process runs on, which all
// processes sharing the file on that machine read alike; the correction then only undoes a
// local clock that WithLocalClock makes differ from it (and steps of the wall clock after Open).

// DefaultClockSync is how often an open Store measures the database's clock again.
const DefaultClockSync = time.Minute

// MaxClockError is the largest error of a measurement of the database's clock that Open and
// OpenDB accept: when even the shortest of their round trips to the database took more than
// twice this, they refuse to open the store (leases could not be judged safely on its clock).
// A later measurement worse than the one in use is ignored.
const MaxClockError = time.Second

// clockSamples is how many readings of the database's clock a measurement takes.
const clockSamples = 3

// clockDrift bounds how fast the local monotonic clock may run against the database's between
// two measurements: 200 parts per million.
const clockDrift = 200e-6

// clockTimeout bounds a measurement that has no context of its own (OpenDB, the periodic one).
const clockTimeout = 10 * time.Second

// WithLocalClock sets the local clock that a Store corrects by its measurements of the
// database's clock (default time.Now): the store reads the database's time at a measurement and
// adds the time now() says has elapsed since. A clock that runs ahead or behind the
// database's is thereby corrected. WithClock takes precedence: with it, the store measures
// nothing.
func WithLocalClock(now func() time.Time) Option { return func(s *Store) { s.localNow = now } }

// ClockMeasurement is a Store's last measurement of the database's clock.
type ClockMeasurement struct {
	// Offset is how far the database's clock was ahead of the local clock (negative: behind).
	Offset time.Duration
	// Error bounds the measurement's error: half the round trip plus the database clock's
	// resolution.
	Error time.Duration
	// At is when it was taken, on the database's clock, in UTC.
	At time.Time
}

// Clock returns the store's last measurement of the database's clock; false when the store
// reads a clock given with WithClock instead, which it does not correct.
func (s *Store) Clock() (ClockMeasurement, bool) {
	if s.dbClock == nil {
		return ClockMeasurement{}, false
	}
	m := s.dbClock.current()
	return ClockMeasurement{Offset: m.db.Sub(m.local), Error: m.err, At: m.db.UTC()}, true
}

// Now returns the store's current time, in UTC: the clock it stamps runs with and judges leases
// on. With WithClock it is that clock's reading; otherwise the database's clock as last measured
// and advanced since on the local monotonic clock, less the bound of its error, so it never
// reads ahead of the database's clock (see DefaultClockSync). A scheduler judges whether a fire
// is due on it, so that due fires and expired leases are judged alike on every replica.
func (s *Store) Now() time.Time { return s.now().UTC() }

// dbClock is the database's clock as a Store follows it.
type dbClock struct {
	local func() time.Time

	mu   sync.Mutex
	mark clockMark

	stop chan struct{}
	done sync.WaitGroup
}

// clockMark is one reading of the database's clock.
type clockMark struct {
	db    time.Time     // the database's time at local
	local time.Time     // the local clock at the middle of the round trip
	err   time.Duration // the bound of db's error
	rtt   time.Duration // the round trip it was read in
}

// current returns the measurement in use.
func (c *dbClock) current() clockMark {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mark
}

// now returns the database's time as of the last measurement, advanced by the local time
// elapsed since, less the bound of its error then.
func (c *dbClock) now() time.Time {
	m := c.current()
	elapsed := c.local().Sub(m.local)
	return m.db.Add(elapsed - m.err - driftBound(elapsed))
}

// driftBound bounds how far the local clock can have drifted from the database's in elapsed.
func driftBound(elapsed time.Duration) time.Duration {
	if elapsed < 0 {
		elapsed = -elapsed
	}
	return time.Duration(float64(elapsed) * clockDrift)
}

// startClock measures the database's clock and makes it the store's, unless WithClock gave
// the store a clock; then it measures again every interval until Close. It refuses (with an
// error saying why) a database whose clock cannot be read or not to within MaxClockError.
func (s *Store) startClock(ctx context.Context, interval time.Duration) error {
	if s.now != nil {
		return nil
	}
	local := s.localNow
	if local == nil {
		local = time.Now
	}
	c := &dbClock{local: local, stop: make(chan struct{})}
	m, err := s.measureClock(ctx, local)
	if err != nil {
		return err
	}
	if m.err > MaxClockError {
		return fmt.Errorf("store: the %s database's clock could not be read to within %v: the shortest of %d round trips took %v",
			s.dialect, MaxClockError, clockSamples, m.rtt)
	}
	c.mark = m
	s.dbClock, s.now = c, c.now
	if interval <= 0 {
		return nil
	}
	c.done.Add(1)
	go func() {
		defer c.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-c.stop:
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), clockTimeout)
				// A failed measurement keeps the last one: its error grows only by the drift
				// bound, and the next tick measures again.
				_ = s.syncClock(ctx)
				cancel()
			}
		}
	}()
	return nil
}

// syncClock measures the database's clock again and uses the new measurement unless its error
// is larger than the current one's has grown to since (its own plus the drift bound).
func (s *Store) syncClock(ctx context.Context) error {
	c := s.dbClock
	m, err := s.measureClock(ctx, c.local)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	aged := c.mark.err + driftBound(m.local.Sub(c.mark.local))
	if m.err <= aged {
		c.mark = m
	}
	return nil
}

// stopClock stops the periodic measurement, waiting for one in progress.
func (s *Store) stopClock() {
	if s.dbClock == nil {
		return
	}
	select {
	case <-s.dbClock.stop:
	default:
		close(s.dbClock.stop)
	}
	s.dbClock.done.Wait()
}

// measureClock reads the database's clock clockSamples times on one connection (so that no
// wait for a pooled connection falls inside a round trip) and returns the reading with the
// shortest round trip.
func (s *Store) measureClock(ctx context.Context, local func() time.Time) (clockMark, error) {
	fail := func(err error) (clockMark, error) {
		return clockMark{}, fmt.Errorf("store: read the %s database's clock: %w", s.dialect, err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Close()
	query, resolution := s.dialect.clockQuery()
	var best clockMark
	for i := range clockSamples {
		var t dbTime
		before := local()
		if err := conn.QueryRowContext(ctx, query).Scan(&t); err != nil {
			return fail(err)
		}
		rtt := local().Sub(before)
		if rtt < 0 {
			rtt = 0
		}
		m := clockMark{db: t.Time.Add(resolution / 2), local: before.Add(rtt / 2), err: rtt/2 + resolution/2, rtt: rtt}
		if i == 0 || m.err < best.err {
			best = m
		}
	}
	return best, nil
}
