package store

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
)

func TestParseDSNChoosesTheDriverFromTheForm(t *testing.T) {
	cases := []struct {
		dsn    string
		want   Dialect
		memory bool
	}{
		{"mysql://app:pw@tcp(db.internal:3306)/agents", DialectMySQL, false},
		{"app:pw@tcp(127.0.0.1:3306)/agents?parseTime=false&loc=Local&charset=latin1", DialectMySQL, false},
		{"app@unix(/run/mysqld/mysqld.sock)/agents", DialectMySQL, false},
		{"tcp(127.0.0.1:3306)/agents", DialectMySQL, false},
		{"sqlite:personagen.db", DialectSQLite, false},
		{"sqlite://var/lib/personagen", DialectSQLite, false},
		{"file:data/p.sqlite?_txlock=deferred", DialectSQLite, false},
		{"/tmp/x.db", DialectSQLite, false},
		{"data/x.sqlite3", DialectSQLite, false},
		{":memory:", DialectSQLite, true},
		{"file::memory:?cache=shared", DialectSQLite, true},
		{"sqlite:file:x?mode=memory", DialectSQLite, true},
	}
	for _, c := range cases {
		p, err := parseDSN(c.dsn)
		if err != nil {
			t.Errorf("parseDSN(%q): %v", c.dsn, err)
			continue
		}
		if p.dialect != c.want || p.memory != c.memory {
			t.Errorf("parseDSN(%q) = %s memory=%v, want %s memory=%v", c.dsn, p.dialect, p.memory, c.want, c.memory)
		}
	}
}

func TestParseDSNForcesMySQLSettings(t *testing.T) {
	p, err := parseDSN("app:pw@tcp(127.0.0.1:3306)/agents?parseTime=false&loc=Local&charset=latin1&collation=latin1_swedish_ci")
	if err != nil {
		t.Fatal(err)
	}
	c := p.mysql
	if !c.ParseTime || c.Loc != time.UTC || c.Collation != "utf8mb4_bin" || !c.InterpolateParams {
		t.Errorf("config parseTime=%v loc=%v collation=%q interpolate=%v; want true, UTC, utf8mb4_bin, true",
			c.ParseTime, c.Loc, c.Collation, c.InterpolateParams)
	}
	if c.Params["time_zone"] != "'+00:00'" || c.Params["sql_mode"] != "'TRADITIONAL'" {
		t.Errorf("session params = %v", c.Params)
	}
	if _, ok := c.Params["charset"]; ok {
		t.Errorf("charset param kept: %v", c.Params)
	}
	if !strings.Contains(c.FormatDSN(), "charset=utf8mb4") {
		t.Errorf("DSN %q does not select utf8mb4", c.FormatDSN())
	}
	p, _ = parseDSN("app@tcp(h:1)/d?interpolateParams=false")
	if p.mysql.InterpolateParams {
		t.Errorf("interpolateParams=false in the DSN was overridden")
	}
}

func TestParseDSNForcesSQLiteSettings(t *testing.T) {
	cases := []struct {
		dsn  string
		want map[string]string
	}{
		{"sqlite:p.db", map[string]string{"_txlock": "immediate", "_foreign_keys": "1", "_busy_timeout": "10000", "_journal_mode": "WAL"}},
		{"file:p.db?_txlock=deferred&_fk=0&_busy_timeout=250&_journal_mode=DELETE",
			map[string]string{"_txlock": "immediate", "_foreign_keys": "1", "_fk": "", "_busy_timeout": "250", "_journal_mode": "DELETE"}},
		{":memory:", map[string]string{"_txlock": "immediate", "_journal_mode": ""}},
	}
	for _, c := range cases {
		p, err := parseDSN(c.dsn)
		if err != nil {
			t.Fatalf("parseDSN(%q): %v", c.dsn, err)
		}
		_, raw, _ := strings.Cut(p.sqlite, "?")
		q, _ := url.ParseQuery(raw)
		for k, v := range c.want {
			if q.Get(k) != v {
				t.Errorf("parseDSN(%q): %s = %q, want %q (DSN %s)", c.dsn, k, q.Get(k), v, p.sqlite)
			}
		}
	}
}

func TestOpenRejectsBadDSNsClearly(t *testing.T) {
	cases := []struct {
		name, dsn, wantText string
		wantErr             error
	}{
		{"empty", "", "empty DSN", ErrUnknownDSN},
		{"unknown scheme", "postgres://u:secret@h/db", "unknown DSN form", ErrUnknownDSN},
		{"bare word", "personagen", "unknown DSN form", ErrUnknownDSN},
		{"sqlite without a path", "sqlite:", "names no file", ErrUnknownDSN},
		{"mysql without a database", "root@tcp(127.0.0.1:3306)", "MySQL DSN", nil},
		{"mysql without a database name", "root@tcp(127.0.0.1:3306)/", "names no database", nil},
		{"mysql with a bad parameter", "root@tcp(127.0.0.1:3306)/d?parseTime=maybe", "MySQL DSN", nil},
		{"mysql with :// in a bad parameter, password hidden", "app:hunter2@tcp(127.0.0.1:3306)/d?a=b://c&%zz", "MySQL DSN", nil},
		{"unreachable server, password hidden", "app:hunter2@tcp(127.0.0.1:1)/d?timeout=1s", "connect to mysql database", nil},
		{"sqlite in a missing directory", "sqlite:/nonexistent/dir/x.db", "connect to sqlite database", nil},
	}
	for _, c := range cases {
		s, err := Open(context.Background(), c.dsn)
		if err == nil {
			s.Close()
			t.Errorf("%s: Open(%q) succeeded", c.name, c.dsn)
			continue
		}
		if !strings.Contains(err.Error(), c.wantText) {
			t.Errorf("%s: error %q does not say %q", c.name, err, c.wantText)
		}
		if c.wantErr != nil && !errors.Is(err, c.wantErr) {
			t.Errorf("%s: error %v is not %v", c.name, err, c.wantErr)
		}
		if strings.Contains(err.Error(), "hunter2") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: error shows the password: %v", c.name, err)
		}
	}
}

func TestOpenInMemorySQLiteSharesOneDatabase(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// Concurrent work must all land in the one in-memory database, not in per-connection ones.
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			_, err := s.AppendMessage(ctx, msg("t", "m"+string(rune('a'+i)), baseTime))
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Thread(ctx, "t"); err != nil || len(got) != 8 {
		t.Errorf("Thread = %d messages, %v; want 8", len(got), err)
	}
}

func TestOpenDBChoosesTheDialectFromTheDriverName(t *testing.T) {
	s, err := Open(context.Background(), ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if o, err := OpenDB(s.DB()); err != nil || o.Dialect() != DialectSQLite {
		t.Errorf("OpenDB(sqlite pool) = %v, %v; want the sqlite dialect", o, err)
	}
	if _, err := OpenDB(sqlx.NewDb(s.DB().DB, "postgres")); err == nil || !strings.Contains(err.Error(), `unsupported driver "postgres"`) {
		t.Errorf("OpenDB(postgres pool) error = %v, want unsupported driver", err)
	}
}

// FuzzParseDSN holds that any DSN either parses to a known dialect with the forced settings or
// returns an error, without panicking, and that errors never show a URL's password.
func FuzzParseDSN(f *testing.F) {
	for _, s := range []string{"", ":memory:", "sqlite:x.db", "file:x?mode=memory", "a.db?_txlock=x",
		"root@tcp(127.0.0.1:3306)/test", "mysql://u:p@tcp(h:1)/d?loc=Local", "u:p@unix(/s)/d?%zz", "tcp(", "sqlite:?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		const secret = "Zq9sEcReT"
		for _, withPassword := range []string{"mysql://u:" + secret + "@" + dsn, "u:" + secret + "@tcp(" + dsn} {
			if _, err := parseDSN(withPassword); err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("parseDSN(%q) error shows the password: %v", withPassword, err)
			}
		}
		p, err := parseDSN(dsn)
		if err != nil {
			return
		}
		switch p.dialect {
		case DialectMySQL:
			if !p.mysql.ParseTime || p.mysql.Loc != time.UTC || p.mysql.Collation != "utf8mb4_bin" {
				t.Errorf("parseDSN(%q): MySQL settings not forced", dsn)
			}
		case DialectSQLite:
			if !strings.Contains(p.sqlite, "_txlock=immediate") {
				t.Errorf("parseDSN(%q) = %q: no immediate transactions", dsn, p.sqlite)
			}
		default:
			t.Errorf("parseDSN(%q): dialect %q", dsn, p.dialect)
		}
	})
}

// TestRedactDSNKeepsEverythingButThePassword pins that an error quotes the DSN as it was typed:
// the mysql:// prefix and the user stay, only the password is hidden, also when the password
// holds '@', ':' or '/' or the query holds '@'.
func TestRedactDSNKeepsEverythingButThePassword(t *testing.T) {
	cases := []struct{ dsn, want string }{
		{"mysql://app:s3cret@tcp(127.0.0.1:1)/x", "mysql://app:***@tcp(127.0.0.1:1)/x"},
		{"mysql://app@tcp(127.0.0.1:1)/x", "mysql://app@tcp(127.0.0.1:1)/x"},
		{"mysql://user:pa%ss@tcp(h)/d", "mysql://user:***@tcp(h)/d"},
		{"app:s3cret@tcp(127.0.0.1:1)/x?timeout=1s", "app:***@tcp(127.0.0.1:1)/x?timeout=1s"},
		{"root:p@ss:w@rd@tcp(h:1)/x", "root:***@tcp(h:1)/x"},
		{"root:pa/ss@tcp(h:1)/x", "root:***@tcp(h:1)/x"},
		{"root:pw@tcp(h:1)/x?a=b@c", "root:***@tcp(h:1)/x?a=b@c"},
		{"root@tcp(h:1)/x", "root@tcp(h:1)/x"},
		{"postgres://u:secret@h/db", "postgres://u:xxxxx@h/db"},
	}
	for _, c := range cases {
		if got := RedactDSN(c.dsn); got != c.want {
			t.Errorf("redactDSN(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
	// Open's errors quote the typed DSN, prefix included.
	_, err := Open(context.Background(), "mysql://app:s3cret@tcp(127.0.0.1:1)/x?timeout=1s")
	if err == nil || !strings.Contains(err.Error(), `"mysql://app:***@tcp(127.0.0.1:1)/x?timeout=1s"`) {
		t.Errorf("Open error = %v, want it to quote mysql://app:***@tcp(127.0.0.1:1)/x?timeout=1s", err)
	}
	_, err = Open(context.Background(), "mysql://app:s3cret@tcp(127.0.0.1:1)/")
	if err == nil || !strings.Contains(err.Error(), `"mysql://app:***@tcp(127.0.0.1:1)/" names no database`) {
		t.Errorf("Open error = %v, want it to quote the typed DSN", err)
	}
}
