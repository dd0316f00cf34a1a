package schedule

import "time"

// Clock is the scheduler's time: Now decides which fires are due, After paces the Start loop and
// the lease renewals. The store keeps its own clock (store.WithClock) for the times it records
// and the leases it compares; give both the same clock. SystemClock is the default; tests
// substitute a clock they move by hand.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// SystemClock returns the real clock: time.Now and time.After.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
