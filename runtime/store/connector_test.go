package store

import (
	"context"
	"database/sql/driver"
	"sync/atomic"
	"testing"

	"github.com/personagen/personagen/runtime/store/storetest"
)

// WithConnector puts the host's wrapper between the store and its driver, on both dialects:
// every round trip goes through it.
func TestWithConnectorSeesEveryRoundTrip(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			dsn := migratedDSN(t, d)
			var trips atomic.Int64
			s, err := Open(context.Background(), dsn, WithConnector(func(c driver.Connector) driver.Connector {
				return storetest.CountTrips(c, &trips, nil)
			}))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if trips.Load() == 0 {
				t.Fatal("Open's ping did not go through the wrapper")
			}
			trips.Store(0)
			if _, err := s.Run(context.Background(), "none"); err == nil {
				t.Fatal("want ErrRunNotFound")
			}
			if n := trips.Load(); n != 1 {
				t.Errorf("Run: %d round trips through the wrapper, want 1", n)
			}
		})
	}
}
