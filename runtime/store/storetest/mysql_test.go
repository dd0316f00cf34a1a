package storetest

import (
	"database/sql"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// TestMySQLMakesAnEmptyDatabaseDroppedAtTheEnd pins what a caller gets: a DSN naming a new,
// empty utf8mb4_bin database on the test server, gone once the test that asked for it ends.
func TestMySQLMakesAnEmptyDatabaseDroppedAtTheEnd(t *testing.T) {
	var name string
	t.Run("scratch", func(t *testing.T) {
		dsn := MySQL(t)
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		name = cfg.DBName
		db := open(t, dsn)
		var collation string
		var tables int
		if err := db.QueryRow("SELECT DEFAULT_COLLATION_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = DATABASE()").Scan(&collation); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()").Scan(&tables); err != nil {
			t.Fatal(err)
		}
		if collation != "utf8mb4_bin" || tables != 0 {
			t.Errorf("scratch database %s: collation %s, %d tables; want utf8mb4_bin, 0", name, collation, tables)
		}
	})
	if name == "" {
		t.Skip("no scratch database (MySQL unreachable)")
	}
	var n int
	if err := open(t, server()).QueryRow("SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("scratch database %s still exists after its test", name)
	}
}

// TestMySQLSkipsWhenTheServerIsUnreachable pins that a machine without a server passes: outside
// CI the test that asks for a database is skipped.
func TestMySQLSkipsWhenTheServerIsUnreachable(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv(ServerEnv, "root@tcp(127.0.0.1:1)/test")
	var after bool
	t.Run("unreachable", func(t *testing.T) {
		defer func() {
			if !t.Skipped() {
				t.Error("MySQL did not skip the test")
			}
		}()
		MySQL(t)
		after = true
	})
	if after {
		t.Error("MySQL returned with no server")
	}
}

// open opens a pool on dsn, closed when t ends.
func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
