package schedule

import (
	"time"

	"github.com/personagen/personagen/runtime/store"
)

// Clock is the scheduler's time: Now decides which fires are due, After paces the Start loop,
// the lease renewals and the retries. The store stamps runs and compares leases on its own
// clock (store.Store.Now); by default the scheduler reads that same clock (StoreClock), and a
// test that substitutes a clock it moves by hand gives it to both (store.WithClock(c.Now)).
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed on this clock.
	After(d time.Duration) <-chan time.Time
}

// SystemClock returns this machine's clock: time.Now and time.After, uncorrected.
func SystemClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// StoreClock returns the clock of st: Now is st.Now (the database's clock, or the clock st was
// given with store.WithClock), After the real timer. It is a scheduler's default clock, so that
// fires are judged due on the clock leases are judged on, the same on every replica whatever
// its local clock says.
func StoreClock(st *store.Store) Clock { return storeClock{st} }

type storeClock struct{ st *store.Store }

func (c storeClock) Now() time.Time                         { return c.st.Now() }
func (c storeClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
