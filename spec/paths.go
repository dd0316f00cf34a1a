package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// IsSpecFile reports whether a file found while walking a directory is a
// spec: its name ends in ".persona.yaml" or ".persona.yml" and does not
// start with "." or "_" (Go's rule for ignored files, which also skips
// editor and OS leftovers such as .#x.persona.yaml, ._x.persona.yaml and
// .x.persona.yaml.swp).
func IsSpecFile(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return false
	}
	return strings.HasSuffix(name, ".persona.yaml") || strings.HasSuffix(name, ".persona.yml")
}

// skipDir reports whether a directory walk skips dir: testdata, vendor,
// and names starting with "." or "_" (Go's own rules for ignored
// directories).
func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

// specFile is one file to load and whether it was found by walking a
// directory (then only a regular file is read).
type specFile struct {
	path   string
	walked bool
}

// SpecFiles expands paths into spec files: a file argument is taken as is
// (any name, any kind of file; "-" is refused, not read as standard
// input), a directory is walked recursively for
// IsSpecFile names, skipping testdata, vendor, and "."/"_" directories
// below it (the directory given is walked whatever its name, and followed
// when it is a symlink; symlinks to directories met inside it are not
// followed, symlinks to files are). A spec-named entry of a walked
// directory that is not a regular file (a named pipe, a socket, a device)
// is a diagnostic, not read. Files come in argument order, each
// directory's files in lexical order, duplicates dropped (one file reached
// by relative, absolute or symlinked paths, or through hard links, counts
// once, under the first path that named it). A missing path or a
// directory without specs is a diagnostic at Pos{File: path}, and so is a
// directory inside a tree that cannot be read (the walk goes on past it).
func SpecFiles(paths []string) ([]string, []Diagnostic) {
	files, diags := specFiles(paths)
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = f.path
	}
	return out, diags
}

func specFiles(paths []string) ([]specFile, []Diagnostic) {
	var files []specFile
	var diags []Diagnostic
	seen := make(map[string]bool)
	first := func(f string) bool {
		c := fileKey(f)
		if seen[c] {
			return false
		}
		seen[c] = true
		return true
	}
	add := func(f string, walked bool) {
		if first(f) {
			files = append(files, specFile{path: f, walked: walked})
		}
	}
	for _, root := range paths {
		if root == "-" {
			diags = append(diags, Diagnostic{Pos: Pos{File: root}, Message: "a spec is not read from standard input: name the spec file (a file named - is written ./-)"})
			continue
		}
		info, err := os.Stat(root)
		if err != nil {
			diags = append(diags, Diagnostic{Pos: Pos{File: root}, Message: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))})
			continue
		}
		if !info.IsDir() {
			add(root, false)
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
			if !IsSpecFile(d.Name()) {
				return nil
			}
			mode := d.Type()
			if mode&fs.ModeSymlink != 0 {
				if target, err := os.Stat(p); err == nil {
					if target.IsDir() {
						return nil // a linked directory is not followed
					}
					mode = target.Mode().Type()
				} else {
					mode = 0 // dangling: reading it reports the error
				}
			}
			found++
			if mode&^fs.ModeSymlink != 0 {
				if first(p) {
					diags = append(diags, Diagnostic{Pos: Pos{File: p}, Message: "cannot read spec: " + notRegular(mode)})
				}
				return nil
			}
			add(p, true)
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

// fileKey identifies a file for de-duplication: its device and inode
// where the system has them (so hard links are one file), else its
// absolute path with symlinks resolved, so "a.persona.yaml",
// "./a.persona.yaml", its absolute path and a symlink to it are one spec.
// When the path cannot be resolved, the cleaned absolute (or given) path
// stands in.
func fileKey(f string) string {
	if id, ok := fileID(f); ok {
		return id
	}
	if abs, err := filepath.Abs(f); err == nil {
		f = abs
	}
	if real, err := filepath.EvalSymlinks(f); err == nil {
		return real
	}
	return filepath.Clean(f)
}

// LoadPaths expands paths with SpecFiles, loads every file (ReadFile;
// files found by walking a directory are read only when they are regular
// files), and checks across files (CheckCollisions). It returns the
// personas that loaded without errors, in file order, and all diagnostics
// sorted. The caller treats any diagnostic as failure.
func LoadPaths(paths []string) ([]*Persona, []Diagnostic) {
	files, diags := specFiles(paths)
	var personas []*Persona
	for _, f := range files {
		p, ds := readAndLoad(f.path, f.walked)
		diags = append(diags, ds...)
		if p != nil {
			personas = append(personas, p)
		}
	}
	diags = append(diags, CheckCollisions(personas)...)
	return personas, SortDiagnostics(diags)
}

// CheckCollisions reports personas that share a name, or whose names map
// to the same Go identifier (GoName) or the same generated file
// (GoFileName), and so cannot be generated together. Each colliding
// persona gets a diagnostic at its name naming the other file and line.
func CheckCollisions(ps []*Persona) []Diagnostic {
	var diags []Diagnostic
	byName := make(map[string]*Persona)
	byGo := make(map[string]*Persona)
	byFile := make(map[string]*Persona)
	report := func(p, other *Persona, msg string) {
		diags = append(diags,
			Diagnostic{Pos: p.Name.Pos, Message: fmt.Sprintf("%s %s", msg, other.Name.Pos)},
			Diagnostic{Pos: other.Name.Pos, Message: fmt.Sprintf("%s %s", strings.Replace(msg, strconv.Quote(p.Name.Value), strconv.Quote(other.Name.Value), 1), p.Name.Pos)})
	}
	for _, p := range ps {
		if first, dup := byName[p.Name.Value]; dup {
			report(p, first, fmt.Sprintf("persona name %q is also used at", p.Name.Value))
			continue
		}
		byName[p.Name.Value] = p
		if g := p.GoName(); byGo[g] != nil {
			report(p, byGo[g], fmt.Sprintf("persona %q has the Go name %s, the same as the persona at", p.Name.Value, g))
			continue
		} else {
			byGo[g] = p
		}
		if f := p.GoFileName(); byFile[f] != nil {
			report(p, byFile[f], fmt.Sprintf("persona %q is generated into %s, the same file as the persona at", p.Name.Value, f))
		} else {
			byFile[f] = p
		}
	}
	return diags
}

// pathProblem says why a load_file or load_transcript path fails every
// run, or returns "". The runtime (runtime.Files) reads a static absolute
// path as is and every other path inside the host's root, refusing one
// that leaves it lexically; so these can never be read: a path holding
// U+0000, a static relative path that leaves the root ("../x.md",
// "a/../../x.md"), a computed path that is absolute, and a computed path
// whose literal start, before the first {{ }}, already leaves the root
// ("../{{ .Persona.Name }}.md"): no field value can bring a ".." back
// inside. (After a field anything may be inside: the value may hold
// slashes.) Paths are slash-separated, on every system.
func pathProblem(t Template) string {
	raw := t.Raw.Value
	if strings.ContainsRune(raw, 0) {
		return fmt.Sprintf("path %q holds U+0000, which no file name can; remove it", raw)
	}
	if t.IsStatic() {
		if strings.HasPrefix(raw, "/") {
			return ""
		}
		if leavesRoot(raw) {
			return fmt.Sprintf("path %q leaves the prompt root; the runtime refuses it (keep the file under the root, or give an absolute path)", raw)
		}
		return ""
	}
	if strings.HasPrefix(raw, "/") {
		return "a computed path must be relative (it resolves inside the prompt root)"
	}
	prefix := t.Parts[0].Literal
	if t.Parts[0].Field != nil {
		prefix = ""
	}
	// Only whole elements count: "..{{ .X }}" may render "..x", a name.
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 && leavesRoot(prefix[:i+1]) {
		return fmt.Sprintf("computed path %q always leaves the prompt root: its literal start %q goes above it, so the runtime refuses every path it renders (keep the files under the root)", raw, prefix[:i+1])
	}
	return ""
}

// leavesRoot reports whether the slash-separated relative path p goes
// above its starting directory at some point, lexically, as
// filepath.IsLocal judges on Unix.
func leavesRoot(p string) bool {
	depth := 0
	for _, el := range strings.Split(p, "/") {
		switch el {
		case "", ".":
		case "..":
			depth--
			if depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}
