package gen

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"regexp"
	"strconv"
	"strings"

	"github.com/dave/jennifer/jen"
)

// resetMarker stands, until the file is formatted, for the directive that
// resets positions to the generated file's own: only after gofmt are the
// line and column it must name known. It is not itself a line directive
// (it has no colon).
const resetMarker = "/*line RESET*/"

// ErrFormat is the cause when generated code does not parse (a generator
// bug); the message shows the code with line numbers. the generator reports it as
// the text of a Diagnostic in its *Error, so errors.Is does not find it
// there.
var ErrFormat = errors.New("generated code does not parse")

// render formats f and replaces every reset marker by a directive naming
// genPath at the position of the character that follows it, so that
// positions after a spec directive are the file's own again. With
// directives false the markers are never emitted (see emitter.at).
func render(f *jen.File, genPath string, directives bool) ([]byte, error) {
	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, badCode(err)
	}
	src := buf.Bytes()
	if !directives || !bytes.Contains(src, []byte(resetMarker)) {
		return src, nil
	}
	out := resolveResets(shiftBeforeComma(splitSelectors(src)), genPath)
	again, err := format.Source(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %v\n%s", ErrFormat, err, numbered(out))
	}
	if !bytes.Equal(again, out) {
		// gofmt moved something after the directives were written; place
		// them again on its output so every reset names its true position.
		out = resolveResets(unresolve(again, genPath), genPath)
	}
	return out, nil
}

// resolveResets rewrites each resetMarker in src into
// /*line genPath:L:C*/ where L:C is the position (1-based line, byte
// column) of the byte right after the rewritten comment.
func resolveResets(src []byte, genPath string) []byte {
	var out bytes.Buffer
	out.Grow(len(src) + len(src)/8)
	line, lineStart := 1, 0
	for i := 0; i < len(src); {
		if bytes.HasPrefix(src[i:], []byte(resetMarker)) {
			startCol := out.Len() - lineStart + 1
			prefix := "/*line " + genPath + ":" + strconv.Itoa(line) + ":"
			col := startCol + len(prefix) + 2 + 1
			for {
				next := startCol + len(prefix) + len(strconv.Itoa(col)) + 2
				if next == col {
					break
				}
				col = next
			}
			out.WriteString(prefix + strconv.Itoa(col) + "*/")
			i += len(resetMarker)
			continue
		}
		out.WriteByte(src[i])
		if src[i] == '\n' {
			line++
			lineStart = out.Len()
		}
		i++
	}
	return out.Bytes()
}

// unresolve turns the reset directives naming genPath back into markers.
func unresolve(src []byte, genPath string) []byte {
	re := regexp.MustCompile(`/\*line ` + regexp.QuoteMeta(genPath) + `:[0-9]+:[0-9]+\*/`)
	return re.ReplaceAll(src, []byte(resetMarker))
}

// badCode turns jennifer's formatting error, which carries the unformatted
// source, into an ErrFormat error showing it with line numbers.
func badCode(err error) error {
	msg := err.Error()
	head, code, ok := strings.Cut(msg, "\n")
	if !ok {
		return fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return fmt.Errorf("%w: %s\n%s", ErrFormat, head, numbered([]byte(code)))
}

// numbered prefixes each line of src with its number, as protogen shows
// code that does not parse.
func numbered(src []byte) string {
	var b strings.Builder
	for i, l := range strings.Split(string(src), "\n") {
		fmt.Fprintf(&b, "%5d  %s\n", i+1, l)
	}
	return b.String()
}

// beforeComma matches a spec directive that gofmt placed before the comma
// separating it from the expression it labels (in a one-line argument
// list): the expression then starts two columns after the comment, not one.
var beforeComma = regexp.MustCompile(`/\*line ([^*\n]+):([0-9]+):([0-9]+)\*/, `)

// shiftBeforeComma moves such directives' columns one to the left, so the
// expression after ", " still gets the spec's column.
func shiftBeforeComma(src []byte) []byte {
	return beforeComma.ReplaceAllFunc(src, func(m []byte) []byte {
		sm := beforeComma.FindSubmatch(m)
		col, _ := strconv.Atoi(string(sm[3]))
		if col <= 1 {
			return m
		}
		return []byte(fmt.Sprintf("/*line %s:%s:%d*/, ", sm[1], sm[2], col-1))
	})
}

// selectorAfterDirective matches a spec directive followed by a qualified
// name (host.WebFetch, &host.CustomerContext, *host.Env, env.Loader).
// gofmt may have moved the directive before the comma ahead of the name
// (see beforeComma).
var selectorAfterDirective = regexp.MustCompile(`(/\*line [^*\n]+:[0-9]+:[0-9]+\*/)(,? )([&*]?[\p{L}_][\p{L}\p{N}_]*)\.([\p{L}_][\p{L}\p{N}_]*)`)

// splitSelectors repeats such a directive before the selected name, in
// the layout gofmt gives it (host. /*line f:L:C*/ WebFetch): the compiler
// reports an undefined name at the name, not at the start of the
// expression, and without this it would point into the middle of the
// spec's reference (the column of "WebFetch" plus the package name's
// length) instead of at its start.
func splitSelectors(src []byte) []byte {
	return selectorAfterDirective.ReplaceAll(src, []byte("$1$2$3. $1 $4"))
}
