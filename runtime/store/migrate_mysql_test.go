package store

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"
)

// mysqlTables returns SHOW CREATE TABLE of every table of s but goose's and the progress table,
// AUTO_INCREMENT counters left out, sorted.
func mysqlTables(t *testing.T, s *Store) []string {
	t.Helper()
	var tables []string
	if err := s.DB().Select(&tables, "SHOW TABLES"); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, table := range tables {
		if table == "goose_db_version" || table == progressTable {
			continue
		}
		var row struct {
			Table  string `db:"Table"`
			Create string `db:"Create Table"`
		}
		if err := s.DB().Get(&row, "SHOW CREATE TABLE `"+table+"`"); err != nil {
			t.Fatal(err)
		}
		create := row.Create
		if i := strings.Index(create, " AUTO_INCREMENT="); i >= 0 {
			j := strings.IndexByte(create[i+1:], ' ')
			create = create[:i] + create[i+1+j:]
		}
		out = append(out, create)
	}
	slices.Sort(out)
	return out
}

func mysqlFiles(t *testing.T) []mysqlMigration {
	t.Helper()
	fsys, err := MigrationsFS(DialectMySQL)
	if err != nil {
		t.Fatal(err)
	}
	files, err := readMySQLMigrations(fsys)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestMySQLMigrationRunnerBuildsGoosesSchema: the store's statement-by-statement runner and
// goose's own SQL runner build the same tables from the same files.
func TestMySQLMigrationRunnerBuildsGoosesSchema(t *testing.T) {
	ours, theirs := openScratch(t, DialectMySQL), openScratch(t, DialectMySQL)
	if err := ours.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	migrateTo(t, theirs, 1<<62)
	a, b := mysqlTables(t, ours), mysqlTables(t, theirs)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("schemas differ:\nstore's runner:\n%s\ngoose's:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if n := countRows(t, ours, progressTable, "1=1"); n != 0 {
		t.Errorf("%d progress rows left after a complete migration, want 0", n)
	}
}

// TestEveryMySQLMigrationStatementCanRunTwice holds the rule a resumed migration relies on: each
// statement, run again right after it ran (an interruption between it and its record), either
// succeeds or fails with an error alreadyApplied accepts, and the schema ends as a single run
// builds it.
func TestEveryMySQLMigrationStatementCanRunTwice(t *testing.T) {
	ctx := context.Background()
	s, want := openScratch(t, DialectMySQL), openScratch(t, DialectMySQL)
	if err := want.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := s.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, f := range mysqlFiles(t) {
		for i, stmt := range f.up {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s statement %d: %v", f.name, i+1, err)
			}
			if _, err := conn.ExecContext(ctx, stmt); err != nil && !alreadyApplied(err) {
				t.Errorf("%s statement %d run twice: %v (want success or an already-applied error)\n%s", f.name, i+1, err, stmt)
			}
		}
	}
	if a, b := mysqlTables(t, s), mysqlTables(t, want); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("schema after every statement ran twice:\n%s\nwant:\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
}

// TestInterruptedMySQLMigrationResumes: a migration interrupted after any of its statements
// (here 00031, which moves rows between tables) is finished by the next Migrate, with the
// rows it moves intact, and a migrate that finds a conflicting table it did not create fails.
// Before the store ran MySQL files itself, every later Migrate failed at the file's first
// statement ("Duplicate column name 'thread_start'").
func TestInterruptedMySQLMigrationResumes(t *testing.T) {
	ctx := context.Background()
	files := mysqlFiles(t)
	var f mysqlMigration
	for _, m := range files {
		if m.version == 31 {
			f = m
		}
	}
	if len(f.up) < 4 {
		t.Fatalf("00031 has %d statements", len(f.up))
	}
	want := openScratch(t, DialectMySQL)
	if err := want.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{0, 1, 3, len(f.up) / 2, len(f.up) - 1} {
		s := openScratch(t, DialectMySQL)
		p, err := mysqlProvider(ctx, s.DB().DB, files)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.UpTo(ctx, 30); err != nil {
			t.Fatal(err)
		}
		// A thread with an attachment, stored before 00031.
		for _, q := range []string{
			"INSERT INTO threads (id) VALUES ('t1')",
			"INSERT INTO messages (seq, thread_id, message_id, direction, sender, recipients, cc, sent_at, subject, text_body, html_body) " +
				"VALUES (1, 't1', 'm1', 'inbound', 'a@x', '[]', '[]', '2026-01-01', 's', 'hi', '')",
			"INSERT INTO attachments (message_seq, position, attachment_id, filename, content_type, size_bytes) VALUES (1, 0, 'att_1', 'a.pdf', 'application/pdf', 7)",
		} {
			if _, err := s.DB().ExecContext(ctx, q); err != nil {
				t.Fatalf("seed: %v", err)
			}
		}
		// The interrupted attempt: statements 1..k+1 ran, k of them recorded.
		conn, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range f.up[:k+1] {
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		conn.Close()
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO "+progressTable+" (version, statements_done) VALUES (31, ?)", k); err != nil {
			t.Fatal(err)
		}
		applied, err := Migrate(ctx, s.DB().DB, DialectMySQL)
		if err != nil || len(applied) == 0 || applied[0] != "00031_one_row_per_message.sql" {
			t.Fatalf("interrupted after statement %d: Migrate = %v, %v; want 00031 applied first", k+1, applied, err)
		}
		if a, b := mysqlTables(t, s), mysqlTables(t, want); strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("interrupted after statement %d: schema\n%s\nwant\n%s", k+1, strings.Join(a, "\n"), strings.Join(b, "\n"))
		}
		m, err := s.Message(ctx, "", "m1")
		if err != nil || m.ThreadID != "t1" || len(m.Attachments) != 1 || m.Attachments[0].ID != "att_1" || m.Attachments[0].Size != 7 {
			t.Errorf("interrupted after statement %d: message = %+v, %v; want m1 of t1 with its attachment", k+1, m, err)
		}
	}

	// A table that no interrupted attempt made is not taken for one: a fresh start fails.
	s := openScratch(t, DialectMySQL)
	migrateTo(t, s, 2)
	if _, err := s.DB().ExecContext(ctx, "CREATE TABLE runs (id BIGINT PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	_, err := Migrate(ctx, s.DB().DB, DialectMySQL)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1050 || !strings.Contains(err.Error(), "00003_runs.sql, statement 1 of") {
		t.Errorf("Migrate over a foreign runs table = %v; want 00003's CREATE TABLE to fail with 1050", err)
	}
}

// TestMigrateAfterAnInterruptedVersionTableSetUp: goose creates goose_db_version, then inserts
// its version 0 row; MySQL commits the CREATE alone, so a process killed between the two left
// an empty table, and every later Migrate failed with "missing zero version migration".
func TestMigrateAfterAnInterruptedVersionTableSetUp(t *testing.T) {
	ctx := context.Background()
	s := openScratch(t, DialectMySQL)
	versions, err := database.NewStore(database.DialectMySQL, goose.DefaultTablename)
	if err != nil {
		t.Fatal(err)
	}
	if err := versions.CreateVersionTable(ctx, s.DB().DB); err != nil {
		t.Fatal(err)
	}
	if err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate over an empty version table: %v", err)
	}
	if n := countRows(t, s, goose.DefaultTablename, "version_id = 0"); n != 1 {
		t.Errorf("%d version 0 rows, want 1", n)
	}
	startScheduled(t, s, "p", "r")
}
