package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/personagen/personagen/runtime/store"
)

func init() {
	register(command{name: "migrate", summary: "apply the store's database migrations (MySQL or SQLite)", run: runMigrate})
}

// dsnEnv is the environment variable migrate reads when -dsn is not given.
const dsnEnv = "PERSONAGEN_DSN"

// runMigrate applies every pending migration of runtime/store to the database the DSN names
// (the DSN's form chooses MySQL or SQLite; see store.Open). It prints each applied migration,
// or that the schema was current. Exit codes: 0 on success, 1 when the database cannot be
// opened or a migration fails, 2 for a bad command line or no DSN.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("migrate", "", stderr)
	dsn := fs.String("dsn", os.Getenv(dsnEnv), "database to migrate: mysql://user:pass@tcp(host:3306)/db, user:pass@tcp(host:3306)/db, sqlite:path, file:path, path.db or :memory: (default $"+dsnEnv+")")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "personagen migrate: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return exitUsage
	}
	if *dsn == "" {
		fmt.Fprintf(stderr, "personagen migrate: no database: pass -dsn or set %s\n", dsnEnv)
		return exitUsage
	}
	s, err := store.Open(ctx, *dsn)
	if err != nil {
		fmt.Fprintf(stderr, "personagen migrate: %v\n", err)
		return exitFail
	}
	defer s.Close()
	applied, err := store.Migrate(ctx, s.DB().DB, s.Dialect())
	for _, name := range applied {
		fmt.Fprintf(stdout, "applied %s\n", name)
	}
	if err != nil {
		fmt.Fprintf(stderr, "personagen migrate: %v\n", err)
		return exitFail
	}
	if len(applied) == 0 {
		fmt.Fprintf(stdout, "%s schema is up to date\n", s.Dialect())
	}
	return exitOK
}
