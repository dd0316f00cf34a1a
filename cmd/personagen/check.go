package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/personagen/personagen/gen"
	"github.com/personagen/personagen/spec"
)

// checkOutputFlags refuses -out, -pkg and -root on validate without
// -check: they only say where generate would write.
func checkOutputFlags(fs *flag.FlagSet, check bool, stderr io.Writer) (int, bool) {
	if check {
		return 0, true
	}
	var set []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "out" || f.Name == "pkg" || f.Name == "root" {
			set = append(set, "-"+f.Name)
		}
	})
	if len(set) == 0 {
		return 0, true
	}
	fmt.Fprintf(stderr, "personagen validate: %s is used with -check only (it says where generate would write and read)\n", set[0])
	fs.Usage()
	return exitUsage, false
}

// checkDiagnostics implements `validate -check`: the diagnostics of the
// spec files of a, then those of generate's checks of the specs that
// loaded (gen.Generate with CheckOnly: host references, `with` values, prompt and
// transcript files, hand-written files in -out), with nothing written;
// sorted, duplicates dropped. With no paths in a it checks the arguments
// of every //go:generate line below the current directory that runs
// personagen generate, as bare verify does. A problem without a spec
// position (bad options, the go command failing) is printed on stderr and
// sets code (exitUsage or exitFail).
func checkDiagnostics(ctx context.Context, a *genArgs, stderr io.Writer) ([]spec.Diagnostic, int) {
	var runs []*genArgs
	code := exitOK
	if len(a.paths) > 0 {
		if c, ok := a.resolve("validate", stderr); !ok {
			return nil, c
		}
		runs = append(runs, a)
	} else {
		dirs, err := generateDirectives(".")
		if err != nil {
			fmt.Fprintf(stderr, "personagen validate: %v\n", err)
			return nil, exitFail
		}
		if len(dirs) == 0 {
			fmt.Fprintln(stderr, "personagen validate: -check without paths checks the //go:generate lines that run personagen generate, and there is none below this directory; give spec paths")
			return nil, exitUsage
		}
		for _, d := range dirs {
			da, c, ok := genFlags("validate", d.args, stderr)
			if !ok {
				fmt.Fprintf(stderr, "personagen validate: in the //go:generate line at %s\n", d.pos)
				code = max(code, c)
				continue
			}
			runs = append(runs, da)
		}
	}
	var diags []spec.Diagnostic
	for _, r := range runs {
		specs, ds := spec.LoadPaths(r.paths)
		diags = append(diags, ds...)
		if len(specs) == 0 {
			continue
		}
		opts := r.options()
		opts.CheckOnly = true
		_, _, err := gen.Generate(ctx, specs, opts)
		var ge *gen.Error
		var oe *gen.OptionsError
		switch {
		case errors.As(err, &ge):
			diags = append(diags, ge.Diagnostics...)
		case errors.As(err, &oe):
			printOptionsError(stderr, "validate", err)
			code = max(code, exitUsage)
		case err != nil:
			fmt.Fprintf(stderr, "personagen validate: %v\n", err)
			code = max(code, exitFail)
		}
	}
	return slices.Compact(spec.SortDiagnostics(diags)), code
}
