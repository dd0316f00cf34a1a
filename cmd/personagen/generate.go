package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/personagen/personagen/gen"
	"github.com/personagen/personagen/spec"
)

func init() {
	register(command{name: "generate", summary: "compile persona specs into a Go package", run: runGenerate})
}

// genArgs are the arguments generate and verify share.
type genArgs struct {
	out     string
	pkg     string
	root    string
	verbose bool
	paths   []string
}

func genFlags(name string, args []string, stderr io.Writer) (*genArgs, int, bool) {
	fs := newFlagSet(name, "PATH...", stderr)
	a := &genArgs{}
	addGenFlags(fs, a)
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "personagen %s: no spec paths given\n", name)
		fs.Usage()
		return nil, exitUsage, false
	}
	if code, ok := checkPaths(fs, args, stderr); !ok {
		return nil, code, false
	}
	a.paths = fs.Args()
	if code, ok := a.resolve(name, stderr); !ok {
		return nil, code, false
	}
	return a, 0, true
}

// addGenFlags defines generate's flags on fs: -out, -pkg, -root and -v.
func addGenFlags(fs *flag.FlagSet, a *genArgs) {
	addOutputFlags(fs, a)
	fs.BoolVar(&a.verbose, "v", false, "report how long package loading, checking and emission took")
}

// addOutputFlags defines -out, -pkg and -root on fs (generate, verify and
// validate -check).
func addOutputFlags(fs *flag.FlagSet, a *genArgs) {
	fs.StringVar(&a.out, "out", ".", "output `directory` of the generated package")
	fs.StringVar(&a.pkg, "pkg", "", "package `name` of the output (default: the package already in -out, else the directory's name)")
	fs.StringVar(&a.root, "root", ".", "`directory` that static load_file/load_transcript paths are checked against (the runtime.Files root the host will use)")
}

// resolve defaults -pkg and checks the options with gen (package name,
// the package already in -out, the module governing -out): a problem is a
// usage error, printed naming the flag.
func (a *genArgs) resolve(name string, stderr io.Writer) (int, bool) {
	if a.pkg == "" {
		a.pkg = gen.DefaultPackage(a.out)
	}
	if err := a.options().Validate(); err != nil {
		printOptionsError(stderr, name, err)
		return exitUsage, false
	}
	return 0, true
}

// printOptionsError prints an *gen.OptionsError naming the flag it is
// about (-pkg or -out), or any other error as it is.
func printOptionsError(stderr io.Writer, name string, err error) {
	var oe *gen.OptionsError
	if !errors.As(err, &oe) {
		fmt.Fprintf(stderr, "personagen %s: %v\n", name, err)
		return
	}
	flagName := "-out"
	if oe.Field == "Package" {
		flagName = "-pkg"
	}
	fmt.Fprintf(stderr, "personagen %s: %s: %v\n", name, flagName, err)
}

// options are the generator options a stands for; file names in
// directives and headers are relative to the root of the module holding
// -out.
func (a *genArgs) options() gen.Options {
	_, modRoot, _ := gen.ImportPath(a.out)
	return gen.Options{Package: a.pkg, OutDir: a.out, Root: a.root, LineBase: modRoot}
}

// generateFiles loads the specs and generates their files, printing
// diagnostics as file:line:col: message lines to stderr. When anything
// failed it returns the exit code: exitUsage for options gen refuses
// only once it sees the specs and the output directory together (a kept
// file of another package), else exitFail; 0 on success.
func generateFiles(ctx context.Context, name string, a *genArgs, stderr io.Writer) ([]gen.File, int) {
	specs, diags := spec.LoadPaths(a.paths)
	if len(diags) > 0 {
		for _, d := range diags {
			fmt.Fprintln(stderr, d.String())
		}
		return nil, exitFail
	}
	files, st, err := gen.Generate(ctx, specs, a.options())
	if a.verbose {
		fmt.Fprintf(stderr, "personagen %s: %d spec(s); loaded %d packages in %v; checked in %v; emitted in %v\n", name, len(specs), st.Packages, st.Load.Round(1e6), st.Check.Round(1e3), st.Emit.Round(1e3))
	}
	var ge *gen.Error
	var oe *gen.OptionsError
	switch {
	case errors.As(err, &ge):
		for _, d := range ge.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		return nil, exitFail
	case errors.As(err, &oe):
		printOptionsError(stderr, name, err)
		return nil, exitUsage
	case err != nil:
		fmt.Fprintf(stderr, "personagen %s: %v\n", name, err)
		return nil, exitFail
	}
	return files, exitOK
}

// reportKept names the generated files a run left alone because their spec
// still exists but was not given.
func reportKept(stderr io.Writer, cmd, dir string, kept []gen.Leftover) {
	for _, l := range kept {
		fmt.Fprintf(stderr, "personagen %s: %s: kept: generated from %s, which this run was not given; include it, or delete the file if it should go\n",
			cmd, filepath.ToSlash(filepath.Join(dir, l.Name)), l.Source)
	}
}

// runGenerate implements `personagen generate [-out DIR] [-pkg NAME]
// [-root DIR] PATH...`: it writes one file per spec into -out (creating
// it), leaves files whose content is unchanged untouched, and removes the
// files it generated earlier for specs that are gone (gen.Write). Exit 0
// on success, 1 with file:line:col: message lines on stderr when specs
// have problems, 2 on a usage error.
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, code, ok := genFlags("generate", args, stderr)
	if !ok {
		return code
	}
	files, code := generateFiles(ctx, "generate", a, stderr)
	if code != exitOK {
		return code
	}
	res, err := gen.Write(a.out, files)
	for _, l := range res.Removed {
		fmt.Fprintf(stderr, "personagen generate: removed %s: its spec %s is gone\n", filepath.ToSlash(filepath.Join(a.out, l.Name)), l.Source)
	}
	if err != nil {
		fmt.Fprintf(stderr, "personagen generate: %v\n", err)
		return exitFail
	}
	reportKept(stderr, "generate", a.out, res.Kept)
	return exitOK
}
