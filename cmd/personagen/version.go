package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

func init() {
	register(command{name: "version", summary: "print personagen's version", run: runVersion})
}

// version returns the module version personagen was built from (v1.2.3,
// or a pseudo-version when installed from a commit), or "devel" for a
// build from a working tree, with the VCS revision when known.
func version(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "devel"
	}
	v := info.Main.Version
	if v != "" && v != "(devel)" {
		return v
	}
	rev, dirty := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "devel"
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if dirty {
		rev += "+dirty"
	}
	return "devel " + rev
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("version", "", stderr)
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return exitUsage
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "personagen %s\n", version(info, ok))
	return exitOK
}
