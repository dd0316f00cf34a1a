package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/personagen/personagen/runtime/store/storetest"
)

// eachDB runs f as a subtest against a fresh, migrated store on SQLite (a file in a temporary
// directory) and on MySQL (a scratch database personagen_test_<random>, dropped at the end).
// An unreachable MySQL server skips the MySQL half, or fails it when CI=true.
func eachDB(t *testing.T, f func(t *testing.T, s *Store), opts ...Option) {
	t.Helper()
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			f(t, newTestStore(t, d, opts...))
		})
	}
}

// newTestStore returns a fresh migrated store of dialect d, closed (and for MySQL dropped) when
// the test ends.
func newTestStore(t testing.TB, d Dialect, opts ...Option) *Store {
	t.Helper()
	return openMigrated(t, migratedDSN(t, d), opts...)
}

// openMigrated opens a store on dsn and migrates it; the store is closed when the test ends.
func openMigrated(t testing.TB, dsn string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatalf("Open(%q): %v", dsn, err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

// scratchDSN returns the DSN of an empty database of dialect d that lives as long as the test
// (for MySQL, see storetest.MySQL).
func scratchDSN(t testing.TB, d Dialect) string {
	t.Helper()
	if d == DialectSQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	}
	return storetest.MySQL(t)
}

// openScratch opens a store on an empty database of dialect d (see scratchDSN), closed when
// the test ends; tests of the migrations start from it.
func openScratch(t testing.TB, d Dialect) *Store {
	t.Helper()
	s, err := Open(context.Background(), scratchDSN(t, d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// mysqlSchema is the schema the embedded migrations build on MySQL, captured once per test
// binary from a database migrated for real: its CREATE TABLE statements and goose's applied
// versions. Replaying it costs one statement per table, where the migrations' ALTERs rebuild
// tables several times over.
var mysqlSchema struct {
	once     sync.Once
	creates  []string
	versions []int64
	err      error
}

// migratedDSN is scratchDSN with the store's schema in place (Migrate then finds nothing to
// do): SQLite is migrated for real, MySQL gets the schema the migrations built in a template
// database (see mysqlSchema). Tests of the migrations themselves use scratchDSN.
func migratedDSN(t testing.TB, d Dialect) string {
	t.Helper()
	dsn := scratchDSN(t, d)
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d == DialectSQLite {
		if err := s.Migrate(ctx); err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		return dsn
	}
	mysqlSchema.once.Do(func() { mysqlSchema.creates, mysqlSchema.versions, mysqlSchema.err = captureMySQLSchema(t) })
	if mysqlSchema.err != nil {
		t.Fatalf("capture the migrated MySQL schema: %v", mysqlSchema.err)
	}
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS = 0"); err != nil {
		t.Fatal(err)
	}
	for _, q := range mysqlSchema.creates {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("replay the schema: %v\n%s", err, q)
		}
	}
	for _, v := range mysqlSchema.versions {
		if _, err := conn.ExecContext(ctx, "INSERT INTO goose_db_version (version_id, is_applied) VALUES (?, 1)", v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.ExecContext(ctx, "SET FOREIGN_KEY_CHECKS = 1"); err != nil {
		t.Fatal(err)
	}
	return dsn
}

// captureMySQLSchema migrates a template database, reads back its tables' CREATE statements
// and applied versions, and drops it.
func captureMySQLSchema(t testing.TB) ([]string, []int64, error) {
	dsn := scratchDSN(t, DialectMySQL) // dropped with the test that captures it
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		return nil, nil, err
	}
	var tables []string
	if err := s.DB().SelectContext(ctx, &tables, "SHOW TABLES"); err != nil {
		return nil, nil, err
	}
	var creates []string
	for _, table := range tables {
		var row struct {
			Table  string `db:"Table"`
			Create string `db:"Create Table"`
		}
		if err := s.DB().GetContext(ctx, &row, "SHOW CREATE TABLE `"+table+"`"); err != nil {
			return nil, nil, err
		}
		creates = append(creates, row.Create)
	}
	// Triggers after the tables they write.
	var triggers []string
	if err := s.DB().SelectContext(ctx, &triggers, "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = DATABASE() ORDER BY trigger_name"); err != nil {
		return nil, nil, err
	}
	for _, name := range triggers {
		rows, err := s.DB().QueryxContext(ctx, "SHOW CREATE TRIGGER `"+name+"`")
		if err != nil {
			return nil, nil, err
		}
		var create string
		for rows.Next() {
			row := map[string]any{}
			if err := rows.MapScan(row); err != nil {
				rows.Close()
				return nil, nil, err
			}
			b, _ := row["SQL Original Statement"].([]byte)
			create = string(b)
		}
		rows.Close()
		if create == "" {
			return nil, nil, fmt.Errorf("SHOW CREATE TRIGGER %s: no statement", name)
		}
		creates = append(creates, create)
	}
	var versions []int64
	if err := s.DB().SelectContext(ctx, &versions, "SELECT version_id FROM goose_db_version WHERE is_applied ORDER BY id"); err != nil {
		return nil, nil, err
	}
	return creates, versions, nil
}
