package gen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// FileSource reports whether the file at path is one personagen generated
// (its first line is Header) and returns the spec path its source line
// names ("" when it has none).
func FileSource(path string) (source string, generated bool) {
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return "", false // opening a named pipe would block
	}
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || sc.Text() != Header {
		return "", false
	}
	if sc.Scan() {
		if src, ok := strings.CutPrefix(sc.Text(), SourcePrefix); ok {
			if strings.HasPrefix(src, `"`) {
				if u, err := strconv.Unquote(src); err == nil {
					return u, true
				}
			}
			return src, true
		}
	}
	return "", true
}

// goFiles lists the names of the Go files in dir (directories and other
// names skipped), sorted; none when dir cannot be read.
func goFiles(dir string) []string {
	if dir == "" {
		dir = "."
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
			names = append(names, e.Name())
		}
	}
	return names
}

// existingPackage returns the package name of the first (by name) non-test
// Go file in dir that personagen did not generate, and that file's base
// name; "" when there is none. Generated files are rewritten by generate,
// so their package clause does not bind the package name.
func existingPackage(dir string) (pkg, file string) {
	for _, n := range goFiles(dir) {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		path := filepath.Join(dir, n)
		if _, generated := FileSource(path); generated {
			continue
		}
		if name := packageClause(path); name != "" {
			return name, n
		}
	}
	return "", ""
}

// DefaultPackage is the package name to generate into dir when none is
// given: the package of a non-test Go file already there, else dir's base
// name made into an identifier (lower case, letters and digits, not
// starting with a digit; "" when nothing is left).
func DefaultPackage(dir string) string {
	for _, n := range goFiles(dir) {
		if strings.HasSuffix(n, "_test.go") {
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
	if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() {
		return ""
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly)
	if err != nil || f.Name == nil {
		return ""
	}
	return f.Name.Name
}

// readOutputDir collects, for checkSpecs, the hand-written Go files of the
// output directory and the package-level names declared by those of them
// that belong to the output package pkg and to the build (their build
// constraints hold here).
func readOutputDir(dir, pkg string) outputDir {
	out := outputDir{handWritten: make(map[string]bool), decls: make(map[string]string)}
	if dir == "" {
		dir = "."
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if !strings.HasSuffix(n, ".go") {
			continue
		}
		path := filepath.Join(dir, n)
		if _, generated := FileSource(path); generated {
			continue
		}
		out.handWritten[n] = true
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || strings.HasSuffix(n, "_test.go") {
			continue // reading a named pipe would block
		}
		if ok, err := build.Default.MatchFile(dir, n); err != nil || !ok {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil || f.Name.Name != pkg {
			continue
		}
		record := func(id *ast.Ident) {
			if id.Name == "_" || id.Name == "init" {
				return
			}
			if _, dup := out.decls[id.Name]; !dup {
				p := fset.Position(id.Pos())
				out.decls[id.Name] = fmt.Sprintf("%s:%d:%d", filepath.ToSlash(path), p.Line, p.Column)
			}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					record(d.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						record(s.Name)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							record(n)
						}
					}
				}
			}
		}
	}
	return out
}

// Leftover is a personagen file in an output directory that a run did not
// produce: Name is its base name, Source the spec path its header names
// (relative to the root of the module holding the directory), and
// SpecExists whether that spec is still a file. A file whose spec is gone
// is an orphan: generate deletes it and verify reports it. One whose spec
// exists was generated by another run (another go:generate line, a run
// over some specs only) and is left alone.
type Leftover struct {
	Name       string
	Source     string
	SpecExists bool
}

// Leftovers returns the personagen files in dir that files (what a run
// produced) does not hold, sorted by name.
func Leftovers(dir string, files []File) []Leftover {
	produced := make(map[string]bool, len(files))
	for _, f := range files {
		produced[f.Name] = true
	}
	return leftovers(dir, produced)
}

// leftovers is Leftovers for the set of file names a run produces.
func leftovers(dir string, produced map[string]bool) []Leftover {
	_, modRoot, _ := ImportPath(dir)
	var out []Leftover
	for _, n := range goFiles(dir) {
		if produced[n] {
			continue
		}
		src, ok := FileSource(filepath.Join(dir, n))
		if !ok {
			continue
		}
		out = append(out, Leftover{Name: n, Source: src, SpecExists: specExists(modRoot, src)})
	}
	return out
}

// specExists reports whether the spec a generated header names is still a
// file: src is resolved against modRoot unless it is absolute. An empty src
// (a header without a source line) counts as gone; AllSources (the
// PersonasFile of another run) counts as present.
func specExists(modRoot, src string) bool {
	if src == AllSources {
		return true
	}
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

// ErrHandWritten is returned (wrapped) by Write when a generated file
// would replace a file personagen did not generate.
var ErrHandWritten = errors.New("would replace a hand-written file")

// WriteResult says what Write did: the generated files it wrote (base
// names; unchanged files are not rewritten), and the leftovers it removed
// (orphans) and kept (see Leftover).
type WriteResult struct {
	Written []string
	Removed []Leftover
	Kept    []Leftover
}

// Write puts files into dir (creating it): each file whose content differs
// from what dir holds is written to a temporary file and renamed over the
// old one, so no reader sees half a file; then the orphaned personagen
// files (their spec is gone) are removed. Before writing anything it
// refuses, with an error wrapping ErrHandWritten, to replace a file that
// is not personagen's (checkSpecs reports the same at the spec). On an error
// some files may have been written already, each of them whole.
func Write(dir string, files []File) (WriteResult, error) {
	var res WriteResult
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if _, err := os.Lstat(path); err == nil {
			if _, generated := FileSource(path); !generated {
				return res, fmt.Errorf("%s: generated file %w (it does not start with %q)", filepath.ToSlash(path), ErrHandWritten, Header)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return res, err
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if err := writeAtomic(path, f.Content); err != nil {
			return res, err
		}
		res.Written = append(res.Written, f.Name)
	}
	for _, l := range Leftovers(dir, files) {
		if l.SpecExists {
			res.Kept = append(res.Kept, l)
			continue
		}
		if err := os.Remove(filepath.Join(dir, l.Name)); err != nil {
			return res, err
		}
		res.Removed = append(res.Removed, l)
	}
	slices.Sort(res.Written)
	return res, nil
}

// writeAtomic writes data to a temporary file next to path and renames it
// over path (mode 0644).
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(name, 0o644)); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	return nil
}
