package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/personagen/personagen/schema"
)

func init() {
	register(command{name: "schema", summary: "print the persona spec JSON Schema, or write it with -o", run: runSchema})
}

// runSchema prints persona.schema.json, or writes it to -o FILE (mode 0644)
// so a host repository's editors can use it via
// "# yaml-language-server: $schema=FILE".
func runSchema(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("schema", "", stderr)
	out := fs.String("o", "", "write the schema to `FILE` instead of standard output")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	if *out == "" {
		_, _ = stdout.Write(schema.JSON())
		return exitOK
	}
	if err := os.WriteFile(*out, schema.JSON(), 0o644); err != nil {
		fmt.Fprintf(stderr, "personagen schema: %v\n", err)
		return exitFail
	}
	return exitOK
}
