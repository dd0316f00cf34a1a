package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// testMySQLDSN is the server the MySQL half of the tests uses; each test makes its own scratch
// database on it.
func testMySQLDSN() string {
	if dsn := os.Getenv("PERSONAGEN_TEST_MYSQL_DSN"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

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
	dsn := scratchDSN(t, d)
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

// scratchDSN returns the DSN of an empty database of dialect d that lives as long as the test.
func scratchDSN(t testing.TB, d Dialect) string {
	t.Helper()
	if d == DialectSQLite {
		return "sqlite:" + filepath.Join(t.TempDir(), "store.db")
	}
	ctx := context.Background()
	admin, err := Open(ctx, testMySQLDSN())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MySQL test server unreachable under CI=true: %v", err)
		}
		t.Skipf("MySQL test server unreachable (set PERSONAGEN_TEST_MYSQL_DSN): %v", err)
	}
	defer admin.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "personagen_test_" + hex.EncodeToString(b[:])
	if _, err := admin.DB().ExecContext(ctx, "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("create scratch database: %v", err)
	}
	t.Cleanup(func() {
		admin, err := Open(context.Background(), testMySQLDSN())
		if err != nil {
			t.Errorf("drop scratch database %s: %v", name, err)
			return
		}
		defer admin.Close()
		if _, err := admin.DB().ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop scratch database %s: %v", name, err)
		}
	})
	cfg, err := mysql.ParseDSN(testMySQLDSN())
	if err != nil {
		t.Fatalf("PERSONAGEN_TEST_MYSQL_DSN: %v", err)
	}
	cfg.DBName = name
	return cfg.FormatDSN()
}
