package store

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"testing"
)

func TestMigrateTwiceIsIdempotent(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		// newTestStore already migrated once.
		applied, err := Migrate(context.Background(), s.DB().DB, s.Dialect())
		if err != nil {
			t.Fatalf("second Migrate: %v", err)
		}
		if len(applied) != 0 {
			t.Errorf("second Migrate applied %v, want nothing", applied)
		}
		for _, table := range []string{"threads", "messages", "attachments", "responsibility_runs", "tool_uses"} {
			var n int
			if err := s.DB().GetContext(context.Background(), &n, "SELECT COUNT(*) FROM "+table); err != nil {
				t.Errorf("table %s: %v", table, err)
			}
		}
	})
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
