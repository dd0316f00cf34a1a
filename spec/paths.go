package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IsSpecFile reports whether a file found while walking a directory is a
// spec: its name ends in ".persona.yaml" or ".persona.yml".
func IsSpecFile(name string) bool {
	return strings.HasSuffix(name, ".persona.yaml") || strings.HasSuffix(name, ".persona.yml")
}

// skipDir reports whether a directory walk skips dir: testdata, vendor,
// and names starting with "." or "_" (Go's own rules for ignored
// directories).
func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// SpecFiles expands paths into spec files: a file argument is taken as is
// (any name), a directory is walked recursively for IsSpecFile names,
// skipping testdata, vendor, and "."/"_" directories below it (the
// directory given is walked whatever its name, and followed when it is a
// symlink; links met inside it are not followed). Files come in argument
// order, each directory's files in lexical order, duplicates dropped (one
// file reached by relative, absolute or symlinked paths counts once, under
// the first path that named it). A missing path or a directory without specs is a
// diagnostic at Pos{File: path}, and so is a directory inside a tree that
// cannot be read (the walk goes on past it).
func SpecFiles(paths []string) ([]string, []Diagnostic) {
	var files []string
	var diags []Diagnostic
	seen := make(map[string]bool)
	add := func(f string) {
		if c := fileKey(f); !seen[c] {
			seen[c] = true
			files = append(files, f)
		}
	}
	for _, root := range paths {
		info, err := os.Stat(root)
		if err != nil {
			diags = append(diags, Diagnostic{Pos: Pos{File: root}, Message: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))})
			continue
		}
		if !info.IsDir() {
			add(root)
			continue
		}
		// WalkDir does not follow a symlinked root; a trailing separator
		// makes it read the directory the link points to.
		walkRoot := root
		if l, err := os.Lstat(root); err == nil && l.Mode()&fs.ModeSymlink != 0 {
			walkRoot = root + string(filepath.Separator)
		}
		found := 0
		err = filepath.WalkDir(walkRoot, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				if p == walkRoot {
					return err
				}
				// One unreadable directory is reported; the rest of the tree is still walked.
				var pe *fs.PathError
				if errors.As(err, &pe) {
					err = pe.Err
				}
				diags = append(diags, Diagnostic{Pos: Pos{File: p}, Message: fmt.Sprintf("cannot read: %v", err)})
				if d != nil && d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if p != walkRoot && skipDir(d.Name()) {
					return filepath.SkipDir
				}
				return nil
			}
			if IsSpecFile(d.Name()) {
				found++
				add(p)
			}
			return nil
		})
		if err != nil {
			diags = append(diags, Diagnostic{Pos: Pos{File: root}, Message: fmt.Sprintf("cannot walk: %v", err)})
		} else if found == 0 {
			diags = append(diags, Diagnostic{Pos: Pos{File: root}, Message: "no *.persona.yaml or *.persona.yml files in this directory"})
		}
	}
	return files, diags
}

// fileKey identifies a file for de-duplication: its absolute path with
// symlinks resolved, so "a.persona.yaml", "./a.persona.yaml", its absolute
// path and a symlink to it are one spec. When the path cannot be resolved,
// the cleaned absolute (or given) path stands in.
func fileKey(f string) string {
	if abs, err := filepath.Abs(f); err == nil {
		f = abs
	}
	if real, err := filepath.EvalSymlinks(f); err == nil {
		return real
	}
	return filepath.Clean(f)
}

// LoadPaths expands paths with SpecFiles, loads every file with ReadFile,
// and checks across files (CheckCollisions). It returns the personas that
// loaded without errors, in file order, and all diagnostics sorted. The
// caller treats any diagnostic as failure.
func LoadPaths(paths []string) ([]*Persona, []Diagnostic) {
	files, diags := SpecFiles(paths)
	var personas []*Persona
	for _, f := range files {
		p, ds := ReadFile(f)
		diags = append(diags, ds...)
		if p != nil {
			personas = append(personas, p)
		}
	}
	diags = append(diags, CheckCollisions(personas)...)
	return personas, SortDiagnostics(diags)
}

// CheckCollisions reports personas that share a name, or whose names map to
// the same Go identifier (GoName), and so cannot be generated together.
// Each colliding persona gets a diagnostic at its name naming the other
// file and line.
func CheckCollisions(ps []*Persona) []Diagnostic {
	var diags []Diagnostic
	byName := make(map[string]*Persona)
	byGo := make(map[string]*Persona)
	report := func(p, other *Persona, msg string) {
		diags = append(diags,
			Diagnostic{Pos: p.Name.Pos, Message: fmt.Sprintf("%s %s", msg, other.Name.Pos)},
			Diagnostic{Pos: other.Name.Pos, Message: fmt.Sprintf("%s %s", strings.Replace(msg, p.Name.Value, other.Name.Value, 1), p.Name.Pos)})
	}
	for _, p := range ps {
		if first, dup := byName[p.Name.Value]; dup {
			report(p, first, fmt.Sprintf("persona name %q is also used at", p.Name.Value))
			continue
		}
		byName[p.Name.Value] = p
		g := p.GoName()
		if first, dup := byGo[g]; dup {
			report(p, first, fmt.Sprintf("persona %q has the Go name %s, the same as the persona at", p.Name.Value, g))
			continue
		}
		byGo[g] = p
	}
	return diags
}
