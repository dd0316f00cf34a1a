package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// statTables returns the tables SQLite holds planner statistics for (sqlite_stat1).
func statTables(t *testing.T, s *Store) []string {
	t.Helper()
	var exists int
	if err := s.db.Get(&exists, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'sqlite_stat1'`); err != nil {
		t.Fatal(err)
	}
	if exists == 0 {
		return nil
	}
	var tables []string
	if err := s.db.Select(&tables, `SELECT DISTINCT tbl FROM sqlite_stat1 ORDER BY tbl`); err != nil {
		t.Fatal(err)
	}
	return tables
}

// Optimize gives SQLite statistics of the tables replay reads once they hold rows (Migrate ran
// it on the empty tables, which gives none).
func TestOptimizeAnalyzesSQLiteTables(t *testing.T) {
	s := newTestStore(t, DialectSQLite, WithOptimizeInterval(0))
	seedScale(t, s, []scaleThread{{id: "a", n: 300}, {id: "b", n: 50}})
	if got := statTables(t, s); slices.Contains(got, "messages") {
		t.Fatalf("statistics of messages before Optimize: %v", got)
	}
	if err := s.Optimize(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := statTables(t, s)
	for _, want := range []string{"messages", "tool_uses"} {
		if !slices.Contains(got, want) {
			t.Errorf("no statistics for %s after Optimize (tables with statistics: %v)", want, got)
		}
	}
}

// An open SQLite store runs Optimize in the background; Close stops it (and may be repeated).
func TestStoreOptimizesInTheBackground(t *testing.T) {
	s := newTestStore(t, DialectSQLite, WithOptimizeInterval(20*time.Millisecond))
	seedScale(t, s, []scaleThread{{id: "a", n: 300}})
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Contains(statTables(t, s), "messages") {
		if time.Now().After(deadline) {
			t.Fatal("no statistics of messages 5 s after seeding, with a 20 ms optimize interval")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_ = s.Close() // the cleanup closes again: stopping the optimizer twice must be harmless
}

// On MySQL Optimize does nothing: InnoDB keeps its statistics itself.
func TestOptimizeIsANoOpOnMySQL(t *testing.T) {
	s := newTestStore(t, DialectMySQL)
	if err := s.Optimize(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s.optimizer != nil {
		t.Error("a MySQL store started a background optimizer")
	}
}
