package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
	fs.StringVar(&a.out, "out", ".", "output `directory` of the generated package")
	fs.StringVar(&a.pkg, "pkg", "", "package `name` of the output (default: the package already in -out, else the directory's name)")
	fs.StringVar(&a.root, "root", ".", "`directory` that static load_file/load_transcript paths are checked against (the runtime.Files root the host will use)")
	fs.BoolVar(&a.verbose, "v", false, "report how long package loading and emission took")
	if code, ok := parseFlags(fs, args); !ok {
		return nil, code, false
	}
	if fs.NArg() == 0 {
		fmt.Fprintf(stderr, "personagen %s: no spec paths given\n", name)
		fs.Usage()
		return nil, exitUsage, false
	}
	if code, ok := checkPaths(fs, stderr); !ok {
		return nil, code, false
	}
	a.paths = fs.Args()
	if a.pkg == "" {
		a.pkg = defaultPackage(a.out)
	}
	switch {
	case token.IsKeyword(a.pkg):
		fmt.Fprintf(stderr, "personagen %s: package name %q is a Go keyword; set -pkg to an identifier\n", name, a.pkg)
		return nil, exitUsage, false
	case a.pkg == "_":
		fmt.Fprintf(stderr, "personagen %s: package name %q is the blank identifier; set -pkg to an identifier\n", name, a.pkg)
		return nil, exitUsage, false
	case !token.IsIdentifier(a.pkg):
		fmt.Fprintf(stderr, "personagen %s: package name %q is not a Go identifier; set -pkg\n", name, a.pkg)
		return nil, exitUsage, false
	}
	if _, modRoot, _ := gen.ImportPath(a.out); modRoot == "" {
		fmt.Fprintf(stderr, "personagen %s: -out %s is not inside a Go module (no go.mod in it or any parent directory); generate into a package directory of the module that imports the runtime and your host packages, or create one with go mod init\n",
			name, filepath.ToSlash(a.out))
		return nil, exitUsage, false
	}
	if other, file := existingPackage(a.out); other != "" && other != a.pkg {
		fmt.Fprintf(stderr, "personagen %s: -out %s already holds package %s (%s); generated files must use the same package: set -pkg %s or choose another -out directory\n",
			name, filepath.ToSlash(a.out), other, file, other)
		return nil, exitUsage, false
	}
	return a, 0, true
}

// existingPackage returns the package name of the first (by name) non-test
// Go file in dir that personagen did not generate, and that file's base
// name; "" when there is none. Generated files are rewritten by generate,
// so their package clause does not bind -pkg.
func existingPackage(dir string) (pkg, file string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		path := filepath.Join(dir, n)
		if _, generated := generatedSource(path); generated {
			continue
		}
		if name := packageClause(path); name != "" {
			return name, n
		}
	}
	return "", ""
}

// defaultPackage is the package name of a non-test Go file already in dir,
// else dir's base name made into an identifier (lower case, letters and
// digits only).
func defaultPackage(dir string) string {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		if name := packageClause(filepath.Join(dir, n)); name != "" {
			return name
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	var b strings.Builder
	for _, r := range strings.ToLower(filepath.Base(abs)) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' && b.Len() > 0 {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// packageClause returns the package name a Go file declares ("" when it
// cannot be read or has no package clause).
func packageClause(path string) string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly)
	if err != nil || f.Name == nil {
		return ""
	}
	return f.Name.Name
}

// generateFiles loads the specs and generates their files, printing
// diagnostics as file:line:col: message lines to stderr. ok is false when
// anything failed (the caller exits with exitFail).
func generateFiles(ctx context.Context, name string, a *genArgs, stderr io.Writer) ([]gen.File, bool) {
	specs, diags := spec.LoadPaths(a.paths)
	if len(diags) > 0 {
		for _, d := range diags {
			fmt.Fprintln(stderr, d.String())
		}
		return nil, false
	}
	_, modRoot, _ := gen.ImportPath(a.out)
	opts := gen.Options{Package: a.pkg, OutDir: a.out, Root: a.root, LineBase: modRoot}
	files, st, err := gen.Generate(ctx, specs, opts)
	if a.verbose {
		fmt.Fprintf(stderr, "personagen %s: %d spec(s); loaded %d packages in %v; emitted in %v\n", name, len(specs), st.Packages, st.Load.Round(1e6), st.Emit.Round(1e3))
	}
	var ge *gen.Error
	switch {
	case errors.As(err, &ge):
		for _, d := range ge.Diagnostics {
			fmt.Fprintln(stderr, d.String())
		}
		return nil, false
	case err != nil:
		fmt.Fprintf(stderr, "personagen %s: %v\n", name, err)
		return nil, false
	}
	return files, true
}

// generatedElsewhere sorts the personagen files in dir that this run did not
// produce (files holds what it did). orphans were generated from a spec that no
// longer exists: generate deletes them and verify reports them. kept were
// generated from a spec that still exists but was not among this run's paths
// (another go:generate line, or a run over some specs only): they are left alone
// and named on stderr. sources maps each file to the spec path its header names,
// which is relative to the root of the module that holds dir.
func generatedElsewhere(dir string, files []gen.File) (orphans, kept []string, sources map[string]string) {
	produced := make(map[string]bool, len(files))
	for _, f := range files {
		produced[f.Name] = true
	}
	_, modRoot, _ := gen.ImportPath(dir)
	entries, _ := os.ReadDir(dir)
	sources = make(map[string]string)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || produced[e.Name()] {
			continue
		}
		src, ok := generatedSource(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		sources[e.Name()] = src
		if specExists(modRoot, src) {
			kept = append(kept, e.Name())
		} else {
			orphans = append(orphans, e.Name())
		}
	}
	sort.Strings(orphans)
	sort.Strings(kept)
	return orphans, kept, sources
}

// specExists reports whether the spec a generated header names is still a
// file: src is resolved against modRoot unless it is absolute. An empty src
// (a header without a source line) counts as gone.
func specExists(modRoot, src string) bool {
	if src == "" {
		return false
	}
	p := filepath.FromSlash(src)
	if !filepath.IsAbs(p) {
		p = filepath.Join(modRoot, p)
	}
	info, err := os.Stat(p)
	return err == nil && !info.IsDir()
}

// reportKept names the generated files a run left alone because their spec
// still exists but was not given.
func reportKept(stderr io.Writer, cmd, dir string, kept []string, sources map[string]string) {
	for _, n := range kept {
		fmt.Fprintf(stderr, "personagen %s: %s: kept: generated from %s, which this run was not given; include it, or delete the file if it should go\n",
			cmd, filepath.ToSlash(filepath.Join(dir, n)), sources[n])
	}
}

// generatedSource reports whether the file at path starts with gen.Header,
// and the spec path its source line names.
func generatedSource(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text() != gen.Header {
		return "", false
	}
	if sc.Scan() {
		if src, ok := strings.CutPrefix(sc.Text(), gen.SourcePrefix); ok {
			return src, true
		}
	}
	return "", true
}

// runGenerate implements `personagen generate [-out DIR] [-pkg NAME]
// [-root DIR] PATH...`: it writes one file per spec into -out (creating
// it), leaves files whose content is unchanged untouched, and removes the
// files it generated earlier for specs that are gone. Exit 0 on success,
// 1 with file:line:col: message lines on stderr when specs have problems,
// 2 on a usage error.
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a, code, ok := genFlags("generate", args, stderr)
	if !ok {
		return code
	}
	files, ok := generateFiles(ctx, "generate", a, stderr)
	if !ok {
		return exitFail
	}
	if err := os.MkdirAll(a.out, 0o755); err != nil {
		fmt.Fprintf(stderr, "personagen generate: %v\n", err)
		return exitFail
	}
	for _, f := range files {
		path := filepath.Join(a.out, f.Name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			fmt.Fprintf(stderr, "personagen generate: %v\n", err)
			return exitFail
		}
	}
	gone, kept, sources := generatedElsewhere(a.out, files)
	for _, n := range gone {
		path := filepath.Join(a.out, n)
		if err := os.Remove(path); err != nil {
			fmt.Fprintf(stderr, "personagen generate: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(stderr, "personagen generate: removed %s: its spec %s is gone\n", filepath.ToSlash(path), sources[n])
	}
	reportKept(stderr, "generate", a.out, kept, sources)
	return exitOK
}
