package main

import (
	"bufio"
	"fmt"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
)

// directive is one //go:generate line that runs personagen generate: where it
// is ("file:line") and generate's arguments, with every path (-out, -root and
// the spec paths) made relative to the current directory instead of the
// line's file, as go generate would run it there.
type directive struct {
	pos  string
	args []string
}

// generateDirectives walks the Go files below root, test files included,
// as `go generate ./...` would (skipping testdata, vendor, directories
// starting with "." or "_", nested modules, and files whose build
// constraints exclude them, with the "generate" tag set as go generate
// sets it), and returns each
// //go:generate line whose command is personagen's generate:
// `personagen generate`, `go tool personagen generate`, or
// `go run <…/cmd/personagen[@version]> generate`, also through a
// `//go:generate -command` alias. Arguments are split on spaces and tabs,
// with double-quoted arguments unquoted and $NAME expanded ($GOFILE,
// $GOLINE, $GOPACKAGE, $GOOS, $GOARCH, $GOROOT, $DOLLAR, else the
// environment), as go generate does.
func generateDirectives(root string) ([]directive, error) {
	var out []directive
	ctxt := build.Default
	ctxt.BuildTags = append(slices.Clone(ctxt.BuildTags), "generate")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			if p != root {
				if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
					return filepath.SkipDir
				}
			}
			return nil
		}
		name := d.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || !d.Type().IsRegular() {
			return nil
		}
		if ok, err := ctxt.MatchFile(filepath.Dir(p), name); err != nil || !ok {
			return nil
		}
		found, err := fileDirectives(p)
		out = append(out, found...)
		return err
	})
	return out, err
}

// fileDirectives returns the personagen generate directives of one file.
func fileDirectives(file string) ([]directive, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pkg := ""
	if pf, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.PackageClauseOnly); err == nil && pf.Name != nil {
		pkg = pf.Name.Name
	}
	var out []directive
	aliases := make(map[string][]string) // -command NAME → its words
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		rest, ok := strings.CutPrefix(sc.Text(), "//go:generate")
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '\t' {
			continue
		}
		words, err := splitGenerate(rest)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, line, err)
		}
		vars := map[string]string{"GOFILE": filepath.Base(file), "GOLINE": strconv.Itoa(line), "GOPACKAGE": pkg,
			"GOOS": goruntime.GOOS, "GOARCH": goruntime.GOARCH, "GOROOT": goruntime.GOROOT(), "DOLLAR": "$"}
		for i, w := range words {
			words[i] = os.Expand(w, func(name string) string {
				if v, ok := vars[name]; ok {
					return v
				}
				return os.Getenv(name)
			})
		}
		if len(words) >= 2 && words[0] == "-command" {
			aliases[words[1]] = words[2:]
			continue
		}
		if len(words) > 0 {
			if alias, ok := aliases[words[0]]; ok {
				words = append(slices.Clone(alias), words[1:]...)
			}
		}
		args, ok := personagenGenerateArgs(words)
		if !ok {
			continue
		}
		out = append(out, directive{pos: fmt.Sprintf("%s:%d", filepath.ToSlash(file), line), args: rebaseArgs(filepath.Dir(file), args)})
	}
	return out, sc.Err()
}

// splitGenerate splits a go:generate line into words: on spaces and tabs,
// with a double-quoted word unquoted as a Go string.
func splitGenerate(line string) ([]string, error) {
	var words []string
	for line = strings.TrimLeft(line, " \t"); line != ""; line = strings.TrimLeft(line, " \t") {
		if line[0] == '"' {
			q, err := strconv.QuotedPrefix(line)
			if err != nil {
				return nil, fmt.Errorf("unterminated quoted argument in //go:generate line")
			}
			w, _ := strconv.Unquote(q)
			words = append(words, w)
			line = line[len(q):]
			continue
		}
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			i = len(line)
		}
		words = append(words, line[:i])
		line = line[i:]
	}
	return words, nil
}

// personagenGenerateArgs returns the arguments after "generate" when words
// run personagen's generate command.
func personagenGenerateArgs(words []string) ([]string, bool) {
	for i, w := range words {
		w, _, _ = strings.Cut(w, "@") // go run …/cmd/personagen@v1.2.3
		isCLI := w == "personagen" || path.Base(w) == "personagen" && strings.HasSuffix(w, "cmd/personagen")
		if isCLI && i+1 < len(words) && words[i+1] == "generate" {
			return words[i+2:], true
		}
	}
	return nil, false
}

// rebaseArgs makes the relative paths among generate's arguments (the values
// of -out and -root, and the spec paths) relative to the current directory
// instead of dir. An absent -out or -root (both default to ".", the line's
// own directory under go generate) becomes an explicit dir.
func rebaseArgs(dir string, args []string) []string {
	out := make([]string, 0, len(args)+4)
	for _, name := range []string{"out", "root"} {
		if !hasFlag(args, name) {
			out = append(out, "-"+name, dir)
		}
	}
	rebase := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	pathFlag := func(name string) bool { return name == "out" || name == "root" }
	flags := true // until the first path or "--", as the flag package reads them
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case flags && a == "--":
			flags = false
		case flags && strings.HasPrefix(a, "-") && a != "-":
			name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
			switch {
			case pathFlag(name) && hasValue:
				a = "-" + name + "=" + rebase(value)
			case pathFlag(name) && i+1 < len(args):
				out = append(out, a)
				i++
				a = rebase(args[i])
			case name == "pkg" && !hasValue && i+1 < len(args):
				out = append(out, a) // -pkg NAME: the name is not a path
				i++
				a = args[i]
			}
		default:
			flags = false
			a = rebase(a)
		}
		out = append(out, a)
	}
	return out
}

// hasFlag reports whether args set the flag name (-name v, --name v,
// -name=v); it stops at the first path, as the flag package does.
func hasFlag(args []string, name string) bool {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			return false
		}
		n, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if n == name {
			return true
		}
		if !hasValue && (n == "out" || n == "pkg" || n == "root") {
			i++ // the flag's value
		}
	}
	return false
}
