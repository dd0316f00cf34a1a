package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
)

// Migrating a new database applies every migration; migrating it again applies none.
func TestMigrateTwiceIsIdempotent(t *testing.T) {
	fsys, err := MigrationsFS(DialectSQLite)
	if err != nil {
		t.Fatal(err)
	}
	files, err := fsReadDir(fsys)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			s := openScratch(t, d)
			if first, err := Migrate(context.Background(), s.DB().DB, d); err != nil || !slices.Equal(first, files) {
				t.Fatalf("first Migrate applied %v, %v; want %v", first, err, files)
			}
			if again, err := Migrate(context.Background(), s.DB().DB, d); err != nil || len(again) != 0 {
				t.Errorf("second Migrate applied %v, %v; want nothing", again, err)
			}
			for _, table := range []string{"messages", "runs", "tool_uses", "compactions", "mail_outbox", "run_events"} {
				var n int
				if err := s.DB().GetContext(context.Background(), &n, "SELECT COUNT(*) FROM "+table); err != nil {
					t.Errorf("table %s: %v", table, err)
				}
			}
		})
	}
}

func TestMigrationsExistForBothDialects(t *testing.T) {
	var names [2][]string
	for i, d := range []Dialect{DialectMySQL, DialectSQLite} {
		fsys, err := MigrationsFS(d)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := fsReadDir(fsys)
		if err != nil {
			t.Fatal(err)
		}
		names[i] = entries
	}
	if !slices.Equal(names[0], names[1]) {
		t.Errorf("mysql migrations %v, sqlite migrations %v: want the same versions", names[0], names[1])
	}
	if !slices.Contains(names[0], "00001_init.sql") {
		t.Errorf("migrations %v lack 00001_init.sql", names[0])
	}
}

func fsReadDir(fsys fs.FS) ([]string, error) {
	entries, err := fs.ReadDir(fsys, ".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, err
}

func TestMigrateRefusesAnUnknownDialect(t *testing.T) {
	if _, err := MigrationsFS("postgres"); !errors.Is(err, ErrUnknownDialect) {
		t.Errorf("MigrationsFS(postgres) error = %v, want ErrUnknownDialect", err)
	}
	if _, err := Migrate(context.Background(), nil, "postgres"); !errors.Is(err, ErrUnknownDialect) {
		t.Errorf("Migrate(postgres) error = %v, want ErrUnknownDialect", err)
	}
}

// gooseProvider returns a goose provider over s's pool and the embedded migrations of its
// dialect, outside goose's global registry, with goose's further options opts.
func gooseProvider(t *testing.T, s *Store, opts ...goose.ProviderOption) *goose.Provider {
	t.Helper()
	fsys, err := MigrationsFS(s.Dialect())
	if err != nil {
		t.Fatal(err)
	}
	gd := goose.DialectSQLite3
	if s.Dialect() == DialectMySQL {
		gd = goose.DialectMySQL
	}
	p, err := goose.NewProvider(gd, s.DB().DB, fsys, append([]goose.ProviderOption{goose.WithDisableGlobalRegistry(true)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// migrateTo applies the embedded migrations of s's dialect up to version v.
func migrateTo(t *testing.T, s *Store, v int64) {
	t.Helper()
	p := gooseProvider(t, s)
	if _, err := p.UpTo(context.Background(), v); err != nil {
		t.Fatalf("migrate to %d: %v", v, err)
	}
}

func TestRunsMigrationKeepsResponsibilityRunsAndTheirRounds(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			dsn := scratchDSN(t, d)
			s, err := Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			migrateTo(t, s, 2)
			dl := s.Dialect()
			for _, q := range []struct {
				sql  string
				args []any
			}{
				{`INSERT INTO responsibility_runs (id, persona, responsibility, status, started_at, finished_at, detail)
					VALUES (7, 'p', 'digest', 'succeeded', ?, ?, 'done')`, []any{dl.timeArg(baseTime), dl.timeArg(baseTime.Add(time.Minute))}},
				{`INSERT INTO responsibility_runs (id, persona, responsibility, status, started_at, detail)
					VALUES (9, 'p', 'digest', 'running', ?, '')`, []any{dl.timeArg(baseTime.Add(time.Hour))}},
				{`INSERT INTO tool_uses (source_type, source_id, thread_id, persona, run_id, turn_index, position,
					tool_call_id, tool_name, arguments, result, succeeded)
					VALUES ('responsibility_run', 7, NULL, 'p', 'r7', 0, 0, 'c', 'search', '{}', 'ok', 1)`, nil},
			} {
				if _, err := s.DB().ExecContext(ctx, dl.rebind(q.sql), q.args...); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			trail, err := s.Runs(ctx, RunQuery{Persona: "p", Responsibility: "digest"})
			if err != nil || len(trail) != 2 {
				t.Fatalf("migrated trail = %+v, %v; want 2 runs", trail, err)
			}
			done, stuck := trail[0], trail[1]
			if done.ID != 7 || done.Key != "responsibility_run:7" || done.Kind != RunScheduled || done.Status != RunSucceeded ||
				done.Reason != "done" || !done.FireAt.Equal(baseTime) || !done.FinishedAt.Equal(baseTime.Add(time.Minute)) {
				t.Errorf("migrated finished run = %+v", done)
			}
			if stuck.ID != 9 || stuck.Status != RunAbandoned || stuck.FinishedAt.IsZero() {
				t.Errorf("migrated running run = %+v, want abandoned", stuck)
			}
			if n := countRows(t, s, "tool_uses", "owner_type = 'run' AND owner_id = 7"); n != 1 {
				t.Errorf("%d tool uses of run 7 after the migration, want 1", n)
			}
			// The migrated run still owns rounds, and new ids and seqs continue after the old ones.
			r := testRound(Owner{OwnerRun, 7}, "r7", 1, 1)
			if out, err := s.RecordRound(ctx, r); err != nil || out != Stored {
				t.Errorf("RecordRound on a migrated run = %v, %v", out, err)
			}
			if next := startScheduled(t, s, "p", "other"); next.ID <= 9 {
				t.Errorf("new run id %d, want above the migrated 9", next.ID)
			}
		})
	}
}

// TestMigrateHelperProcess is not a test: TestConcurrentMigrateProcessesOnOneSQLiteFile runs the
// test binary as separate migrating processes through it.
func TestMigrateHelperProcess(t *testing.T) {
	dsn := os.Getenv("PERSONAGEN_TEST_MIGRATE_DSN")
	if dsn == "" {
		t.Skip("only run as a helper process")
	}
	s, err := Open(context.Background(), dsn)
	if err == nil {
		err = s.Migrate(context.Background())
		s.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	os.Exit(0)
}

// Four `personagen migrate` processes on one new SQLite file at once (three times over): every
// one succeeds and each migration is applied once.
func TestConcurrentMigrateProcessesOnOneSQLiteFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 12 processes")
	}
	fsys, _ := MigrationsFS(DialectSQLite)
	files, _ := fsReadDir(fsys)
	for round := range 3 {
		dsn := "sqlite:" + filepath.Join(t.TempDir(), fmt.Sprintf("m%d.db", round))
		var wg sync.WaitGroup
		outs := make([][]byte, 4)
		errs := make([]error, 4)
		for i := range 4 {
			wg.Go(func() {
				cmd := exec.Command(os.Args[0], "-test.run=^TestMigrateHelperProcess$")
				cmd.Env = append(os.Environ(), "PERSONAGEN_TEST_MIGRATE_DSN="+dsn)
				outs[i], errs[i] = cmd.CombinedOutput()
			})
		}
		wg.Wait()
		for i := range 4 {
			if errs[i] != nil {
				t.Errorf("round %d: migrator %d: %v\n%s", round, i, errs[i], outs[i])
			}
		}
		s, err := Open(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		var versions []int64
		if err := s.DB().Select(&versions, "SELECT version_id FROM goose_db_version WHERE version_id > 0 ORDER BY id"); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if len(versions) != len(files) {
			t.Errorf("round %d: versions recorded %v, want each of the %d migrations once", round, versions, len(files))
		}
	}
}

// The store's migrations 00003 and later go down to 00002 and up again on both dialects.
func TestMigrationsGoDownAndUpAgain(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			s := openScratch(t, d)
			ctx := context.Background()
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			p := gooseProvider(t, s)
			if _, err := p.DownTo(ctx, 2); err != nil {
				t.Fatalf("down to 00002: %v", err)
			}
			if ok, _ := tableExists(s, "responsibility_runs"); !ok {
				t.Error("down to 00002 left no responsibility_runs table")
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			startScheduled(t, s, "p", "r")
		})
	}
}

func tableExists(s *Store, name string) (bool, error) {
	_, err := s.DB().Exec("SELECT COUNT(*) FROM " + name)
	return err == nil, err
}

// TestSQLiteMigrationLockLeftByADeadMigratorSaysWhenItIsTakenOver: a migrator killed while it
// held the SQLite lock leaves the lock row; the next migrator's error says since when it is
// held and when it is taken over, instead of "another migration held it for 60 s".
func TestSQLiteMigrationLockLeftByADeadMigratorSaysWhenItIsTakenOver(t *testing.T) {
	defer func(d time.Duration) { sqliteLockWait = d }(sqliteLockWait)
	sqliteLockWait = 100 * time.Millisecond
	s := openScratch(t, DialectSQLite)
	ctx := context.Background()
	if err := (sqliteMigrationLock{token: "dead"}).SessionLock(ctx, mustConn(t, s)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().ExecContext(ctx, "DELETE FROM personagen_migration_lock"); err != nil {
		t.Fatal(err)
	}
	taken := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	if _, err := s.DB().ExecContext(ctx, "INSERT INTO personagen_migration_lock (id, locked_by, locked_at) VALUES (1, 'dead', ?)",
		taken.Format(timeLayout)); err != nil {
		t.Fatal(err)
	}
	err := s.Migrate(ctx)
	want := "store: migrate sqlite: failed to initialize: store: take migration lock: another migration has held it since " +
		taken.Format(timeLayout) + " UTC and still held it after 100ms; if no migration is running (one that died leaves its lock), the lock is taken over from " +
		taken.Add(sqliteStaleLock).Format("2006-01-02 15:04:05") + " UTC on, 10m0s after it was taken"
	if err == nil || err.Error() != want {
		t.Errorf("Migrate with a dead migrator's lock = %v\nwant %s", err, want)
	}
}

func mustConn(t *testing.T, s *Store) *sql.Conn {
	t.Helper()
	conn, err := s.DB().Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestMigrateAppliesLowerNumbersThatLandedLater: migration numbers are ranges per feature, so a
// database migrated by an earlier build can hold 00030 but not 00020 and 00021, which landed on
// main after it; goose refused to go on ("detected 2 missing (out-of-order) migrations lower
// than database version (30): versions 20,21"). Migrate applies them, then the newer ones.
func TestMigrateAppliesLowerNumbersThatLandedLater(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			s := openScratch(t, d)
			ctx := context.Background()
			// The build of that time knew migrations up to 00030 only.
			p := gooseProvider(t, s, goose.WithExcludeVersions([]int64{20, 21, 31, 32, 40, 41, 43, 50, 60, 70}))
			if _, err := p.Up(ctx); err != nil {
				t.Fatal(err)
			}
			applied, err := Migrate(ctx, s.DB().DB, d)
			want := []string{"00020_run_turns.sql", "00021_run_view.sql", "00031_one_row_per_message.sql", "00032_replies_index.sql",
				"00040_run_events.sql", "00041_run_failures.sql", "00043_subject_key.sql", "00050_work.sql", "00060_approvals.sql",
				"00070_console.sql"}
			if err != nil || !slices.Equal(applied, want) {
				t.Fatalf("Migrate = %v, %v; want %v", applied, err, want)
			}
			startScheduled(t, s, "p", "r")
		})
	}
}
