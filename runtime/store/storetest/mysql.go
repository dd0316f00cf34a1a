package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	"github.com/go-sql-driver/mysql"
)

// ServerEnv is the environment variable that names the test server: a go-sql-driver DSN
// (user:password@tcp(host:port)/dbname?params) that may create and drop databases.
const ServerEnv = "PERSONAGEN_TEST_MYSQL_DSN"

// DefaultServer is the test server's DSN when ServerEnv is unset or empty.
const DefaultServer = "root@tcp(127.0.0.1:3306)/test"

// MySQL creates an empty database personagen_test_<12 hex digits> with character set utf8mb4
// and collation utf8mb4_bin on the test server and returns the server's DSN with that database
// in place of the server's own (its other parameters kept), to pass to store.Open. The
// database is dropped when t ends; a failed drop is reported with t.Errorf.
//
// When the server cannot be reached (or ServerEnv does not parse), MySQL skips t — or, when
// the environment variable CI is "true", fails it with t.Fatalf. A failed CREATE DATABASE fails
// t.
func MySQL(t testing.TB) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(server())
	var admin *sql.DB
	if err == nil {
		admin, err = connect(cfg)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MySQL test server unreachable under CI=true: %v", err)
		}
		t.Skipf("MySQL test server unreachable (set %s): %v", ServerEnv, err)
	}
	defer admin.Close()
	var b [6]byte
	rand.Read(b[:])
	name := "personagen_test_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE "+name+" CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("create scratch database: %v", err)
	}
	t.Cleanup(func() {
		admin, err := connect(cfg)
		if err != nil {
			t.Errorf("drop scratch database %s: %v", name, err)
			return
		}
		defer admin.Close()
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE "+name); err != nil {
			t.Errorf("drop scratch database %s: %v", name, err)
		}
	})
	scratch := cfg.Clone()
	scratch.DBName = name
	return scratch.FormatDSN()
}

// server returns the test server's DSN.
func server() string {
	if dsn := os.Getenv(ServerEnv); dsn != "" {
		return dsn
	}
	return DefaultServer
}

// connect opens a pool on cfg and pings the server.
func connect(cfg *mysql.Config) (*sql.DB, error) {
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(conn)
	if err := db.PingContext(context.Background()); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
