package storetest_test

import (
	"context"
	"database/sql/driver"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// Counting the round trips a store makes, and setting its clock by hand: an append into a
// stored thread costs SQLite one round trip.
func ExampleCountTrips() {
	ctx := context.Background()
	var trips atomic.Int64
	clock := storetest.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st, err := store.Open(ctx, ":memory:",
		store.WithConnector(func(c driver.Connector) driver.Connector { return storetest.CountTrips(c, &trips, nil) }),
		store.WithClock(clock.Now))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		fmt.Println(err)
		return
	}
	msg := func(id string) store.Message {
		return store.Message{Message: history.Message{ThreadID: "t-1", MessageID: id, Direction: history.Inbound,
			From: "ada@example.com", Date: clock.Now(), Text: "Hello"}}
	}
	if _, err := st.AppendMessage(ctx, msg("m-1")); err != nil {
		fmt.Println(err)
		return
	}
	before := trips.Load()
	if _, err := st.AppendMessage(ctx, msg("m-2")); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("round trips:", trips.Load()-before)
	clock.Advance(time.Hour)
	fmt.Println(clock.Now())
	// Output:
	// round trips: 1
	// 2026-03-02 10:00:00 +0000 UTC
}
