package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Files is where resolvers read prompt and transcript files from: a directory opened as an
// os.Root (reads cannot escape it, symlinks included) or an fs.FS such as an embed.FS. The host
// configures it once, usually at its application root, and passes it to generated constructors. A
// nil *Files reads relative paths from the process's working directory at read time.
type Files struct {
	dir  string
	root *os.Root
	fsys fs.FS
}

// DirFiles opens dir as the root for relative paths. It returns an error when dir cannot be
// opened as a directory. The Files keeps the directory open until Close (hosts usually keep one
// for the life of the process); it is safe for concurrent reads.
func DirFiles(dir string) (*Files, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open prompt root: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return &Files{dir: abs, root: r}, nil
}

// FSFiles returns a Files reading relative paths from fsys (e.g. an embed.FS). Paths are
// cleaned and must stay inside fsys, as fs.ValidPath requires.
func FSFiles(fsys fs.FS) *Files { return &Files{dir: "fs:", fsys: fsys} }

// FileNotFoundError is the error a read returns when a file does not exist. Path is the path as
// given (by the spec or a computed template) and Resolved the location that was tried (an
// absolute path, or "fs:" + path inside an fs.FS). It matches fs.ErrNotExist with errors.Is.
type FileNotFoundError struct {
	Path     string
	Resolved string
	Err      error
}

// Error renders `file not found: "prompts/x.md" (resolved to /srv/app/prompts/x.md)`.
func (e *FileNotFoundError) Error() string {
	return fmt.Sprintf("file not found: %q (resolved to %s)", e.Path, e.Resolved)
}

// Unwrap returns the underlying error, which matches fs.ErrNotExist.
func (e *FileNotFoundError) Unwrap() error { return e.Err }

// ErrPathEscapes is returned (wrapped) when a computed path is absolute or leaves the root.
var ErrPathEscapes = errors.New("path escapes the prompt root")

// ReadFile reads the file at p, a static path (one the spec's author wrote). An absolute p is
// author-trusted and read as is from the file system; a relative p is read inside the root.
// A relative path that leaves the root lexically ("../x", "a/../../x") or through a symlink
// fails with an error wrapping ErrPathEscapes ("path escapes the prompt root: \"../x\""). A
// relative path is read lexically cleaned ("a/../b.md" reads "b.md" even when "a" does not
// exist), in a directory and in an fs.FS alike. An empty path is an error. A missing file
// yields a *FileNotFoundError; other read errors (a directory, permissions) are wrapped with
// the path and resolved location. It returns the bytes and the resolved location (an absolute
// path, or "fs:" + the cleaned path inside an fs.FS).
//
// Reading from an fs.FS relies on that FS to stay inside itself: fs.ValidPath refuses "..", but
// os.DirFS follows symlinks out of its directory, so use DirFiles for a directory on disk.
func (f *Files) ReadFile(p string) ([]byte, string, error) { return f.readResolved(p, staticPath) }

// ReadComputed reads the file at p, a computed path (one a template built at run time, from
// values a sender may control): as ReadFile, except that an absolute p is refused too, with an
// error wrapping ErrPathEscapes, so a computed path always stays inside the root.
func (f *Files) ReadComputed(p string) ([]byte, string, error) {
	return f.readResolved(p, computedPath)
}

func (f *Files) readResolved(p string, kind pathKind) ([]byte, string, error) {
	b, err := f.read(p, kind)
	if err != nil {
		return nil, f.resolve(p), err
	}
	return b, f.resolve(p), nil
}

// pathKind says who wrote a path: the spec's author (static) or a template at run time
// (computed), which decides whether an absolute path is trusted.
type pathKind int

const (
	staticPath pathKind = iota
	computedPath
)

// read is ReadFile or ReadComputed without the resolved location, which it builds only for an
// error (request assembly reads prompt files on every run).
func (f *Files) read(p string, kind pathKind) ([]byte, error) {
	if p == "" {
		return nil, errors.New("empty path")
	}
	if filepath.IsAbs(p) || path.IsAbs(p) {
		if kind == computedPath {
			return nil, fmt.Errorf("%w: computed path %q is absolute (computed paths must be relative)", ErrPathEscapes, p)
		}
		b, err := os.ReadFile(p)
		return b, f.wrapRead(p, err)
	}
	if !filepath.IsLocal(p) {
		return nil, fmt.Errorf("%w: %q", ErrPathEscapes, p)
	}
	// Read the lexically cleaned path, as an fs.FS read and the reported resolved location do:
	// os.Root would otherwise need every directory before a ".." to exist ("x/../a.md") and
	// refuse a trailing slash. Cleaning a local path keeps it local; symlinks are still checked.
	clean := filepath.Clean(p)
	switch {
	case f == nil:
		r, err := os.OpenRoot(".")
		if err != nil {
			return nil, fmt.Errorf("read %q: open working directory: %w", p, err)
		}
		defer r.Close()
		b, err := r.ReadFile(clean)
		return b, f.wrapRead(p, err)
	case f.root != nil:
		b, err := f.root.ReadFile(clean)
		return b, f.wrapRead(p, err)
	default:
		b, err := fs.ReadFile(f.fsys, path.Clean(filepath.ToSlash(p)))
		return b, f.wrapRead(p, err)
	}
}

// resolve returns where p is read from: p itself when absolute, the working directory or root
// joined with p, or "fs:" + the cleaned p inside an fs.FS.
func (f *Files) resolve(p string) string {
	switch {
	case p == "" || filepath.IsAbs(p) || path.IsAbs(p):
		return p
	case f == nil:
		wd, err := os.Getwd()
		if err != nil {
			return p
		}
		return filepath.Join(wd, p)
	case f.root != nil:
		return filepath.Join(f.dir, p)
	default:
		return "fs:" + path.Clean(filepath.ToSlash(p))
	}
}

// Close closes the directory a DirFiles root holds open. It does nothing for an fs.FS or a nil
// Files. Reads after Close fail.
func (f *Files) Close() error {
	if f == nil || f.root == nil {
		return nil
	}
	return f.root.Close()
}

// Dir returns the root directory's absolute path, "fs:" for an fs.FS, or "" for a nil Files.
func (f *Files) Dir() string {
	if f == nil {
		return ""
	}
	return f.dir
}

func (f *Files) wrapRead(p string, err error) error {
	if err == nil {
		return nil
	}
	resolved := f.resolve(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &FileNotFoundError{Path: p, Resolved: resolved, Err: err}
	case isEscape(err):
		return fmt.Errorf("%w: %q (resolved to %s) leads outside through a symlink or \"..\"", ErrPathEscapes, p, resolved)
	default:
		var pe *fs.PathError
		if errors.As(err, &pe) { // the path is already in our message; keep the cause
			err = pe.Err
		}
		return fmt.Errorf("read %q (resolved to %s): %w", p, resolved, err)
	}
}

// isEscape reports whether err is os.Root's refusal of a path leaving the root (through ".."
// or a symlink).
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Err != nil && pe.Err.Error() == "path escapes from parent"
}
