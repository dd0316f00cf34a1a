package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestMigrateCommand(t *testing.T) {
	dir := t.TempDir()
	fileDSN := "sqlite:" + filepath.Join(dir, "p.db")
	cases := []struct {
		name       string
		env        string
		args       []string
		code       int
		stdout     string // substring expected on stdout
		stderr     string // substring expected on stderr
		stdoutNone string // substring that must not appear on stdout
	}{
		{name: "first run applies the init migration", args: []string{"-dsn", fileDSN}, code: exitOK, stdout: "applied 00001_init.sql"},
		{name: "second run applies nothing", args: []string{"-dsn", fileDSN}, code: exitOK, stdout: "sqlite schema is up to date", stdoutNone: "applied"},
		{name: "DSN from the environment", env: "sqlite:" + filepath.Join(dir, "env.db"), code: exitOK, stdout: "applied 00001_init.sql"},
		{name: "flag wins over the environment", env: "bogus", args: []string{"-dsn", fileDSN}, code: exitOK, stdout: "up to date"},
		{name: "no DSN", code: exitUsage, stderr: "pass -dsn or set PERSONAGEN_DSN"},
		{name: "unknown DSN form", args: []string{"-dsn", "postgres://u:pw@h/db"}, code: exitFail, stderr: "unknown DSN form"},
		{name: "unreachable MySQL", args: []string{"-dsn", "root@tcp(127.0.0.1:1)/x?timeout=1s"}, code: exitFail, stderr: "connect to mysql database"},
		{name: "extra arguments", args: []string{"-dsn", fileDSN, "extra"}, code: exitUsage, stderr: "unexpected arguments"},
		{name: "help", args: []string{"-h"}, code: exitOK, stderr: "usage: personagen migrate"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("PERSONAGEN_DSN", c.env)
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"migrate"}, c.args...), &stdout, &stderr)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, c.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), c.stdout) {
				t.Errorf("stdout %q lacks %q", stdout.String(), c.stdout)
			}
			if !strings.Contains(stderr.String(), c.stderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), c.stderr)
			}
			if c.stdoutNone != "" && strings.Contains(stdout.String(), c.stdoutNone) {
				t.Errorf("stdout %q contains %q", stdout.String(), c.stdoutNone)
			}
		})
	}
}
