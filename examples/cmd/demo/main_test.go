package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/internal/golden"

	_ "github.com/go-sql-driver/mysql"
)

// TestDemoPrintsBothRequests runs the demo on the in-memory SQLite store and
// compares both printed requests, transcript and JSON, with the golden
// files: the generated pipelines, the store's replay (summary, HTML-only
// message, tool rounds, attachment) and the scheduled chain end to end.
func TestDemoPrintsBothRequests(t *testing.T) {
	for _, tc := range []struct {
		name   string
		asJSON bool
	}{{"transcript", false}, {"json", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(context.Background(), "", tc.asJSON, &out); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join("testdata", tc.name+".golden"), out.Bytes())
		})
	}
}

// TestDemoOnMySQLMatchesSQLite runs the demo against MariaDB (twice, so the
// reseeding of a reused database is covered) and expects the very output
// of the SQLite run. It skips when no server answers, except under CI=true.
func TestDemoOnMySQLMatchesSQLite(t *testing.T) {
	base := os.Getenv("PERSONAGEN_TEST_MYSQL_DSN")
	if base == "" {
		base = "root@tcp(127.0.0.1:3306)/test"
	}
	admin, err := sql.Open("mysql", base)
	if err == nil {
		err = admin.Ping()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("MySQL unreachable under CI: %v", err)
		}
		t.Skipf("MySQL unreachable: %v", err)
	}
	defer admin.Close()
	db := fmt.Sprintf("personagen_demo_%d", time.Now().UnixNano())
	if _, err := admin.Exec("CREATE DATABASE " + db); err != nil {
		t.Fatal(err)
	}
	defer admin.Exec("DROP DATABASE " + db)
	dsn := strings.Replace(base, "/test", "/"+db, 1)
	if !strings.Contains(dsn, "/"+db) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot derive a scratch database from DSN %q (it must name the database /test)", base)
		}
		t.Skipf("cannot derive a scratch database from DSN %q", base)
	}
	var want bytes.Buffer
	if err := run(context.Background(), "", false, &want); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		var got bytes.Buffer
		if err := run(context.Background(), dsn, false, &got); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		g := strings.Replace(got.String(), "(mysql store)", "(sqlite store)", 1)
		if g != want.String() {
			t.Errorf("run %d on MySQL differs from SQLite:\n%s", i+1, g)
		}
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got)
}
