package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/personagen/personagen/runtime/chat"
)

// LoadFile is the load_file resolver: it reads one file and contributes its content as one
// message.
//
// Exactly one of Path (a static path from the spec) and PathFunc (a computed path: what a
// templated path compiles to) must be set; otherwise Resolve fails without reading anything.
// Paths are read through Files ([Files.ReadFile] for Path, [Files.ReadComputed] for PathFunc's
// result): a static absolute Path is author-trusted and read as is; every other path is
// relative to the root and cannot leave it; a computed path must be relative. Role is the
// message's role, RoleSystem when empty; RoleTool is refused.
//
// The content is contributed as the file holds it (not trimmed: a prompt's own layout reaches
// the model unchanged), except for its ends: a leading UTF-8 byte order mark (which some
// editors write) is dropped, and so is one final line terminator ("\n" or "\r\n"), which ends
// the file's last line rather than adding an empty one. A file that is empty or holds only
// whitespace contributes nothing. A missing file is a misconfiguration and fails with a
// *FileNotFoundError naming the given and the resolved path.
type LoadFile struct {
	Path     string
	PathFunc func(*Invocation) (string, error)
	Role     chat.Role
	Files    *Files
}

// Resolve appends the file's message to dst (see Resolver). Errors: "load_file: set exactly one
// of Path and PathFunc" (both or neither set), an invalid Role, the PathFunc's error wrapped as
// "compute path: …", an empty computed path, a path leaving the root (wrapping ErrPathEscapes),
// a *FileNotFoundError, or another read error wrapped with the path.
func (r *LoadFile) Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error) {
	if (r.Path == "") == (r.PathFunc == nil) {
		return dst, errors.New("load_file: set exactly one of Path and PathFunc")
	}
	role, err := roleOrSystem(r.Role)
	if err != nil {
		return dst, err
	}
	var b []byte
	if r.PathFunc != nil {
		p, err := r.PathFunc(inv)
		if err != nil {
			return dst, fmt.Errorf("compute path: %w", err)
		}
		b, err = r.Files.read(p, computedPath)
		if err != nil {
			return dst, err
		}
	} else if b, err = r.Files.read(r.Path, staticPath); err != nil {
		return dst, err
	}
	b = trimFinalNewline(bytes.TrimPrefix(b, utf8BOM))
	if len(bytes.TrimSpace(b)) == 0 {
		return dst, nil
	}
	// b is a fresh buffer that nothing else holds (fs.ReadFile and os.Root.ReadFile give the
	// caller ownership), so it becomes the message text without a copy: string(b) would cost
	// an allocation and a copy of the prompt on every request (BenchmarkBuildRequest60: 7
	// allocations instead of 6).
	return append(dst, chat.Message{Role: role, Text: unsafe.String(&b[0], len(b))}), nil
}

// LoadText is the load_text resolver: it contributes one
// message holding a text, trimmed of leading and trailing white space (Unicode, as
// strings.TrimSpace). A text that is empty after trimming contributes nothing, so an unset value
// adds no message.
//
// The text is Text (static) or what TextFunc returns (a computed text: what a templated text
// compiles to). Setting both is an error; with neither, the empty Text contributes nothing.
// Role is the message's role, RoleSystem when empty; RoleTool is refused.
type LoadText struct {
	Text     string
	TextFunc func(*Invocation) (string, error)
	Role     chat.Role
}

// Resolve appends the text's message to dst (see Resolver). Errors: "load_text: set at most one
// of Text and TextFunc", an invalid Role, and the TextFunc's error wrapped as "compute text: …".
func (r *LoadText) Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error) {
	if r.Text != "" && r.TextFunc != nil {
		return dst, errors.New("load_text: set at most one of Text and TextFunc")
	}
	role, err := roleOrSystem(r.Role)
	if err != nil {
		return dst, err
	}
	text := r.Text
	if r.TextFunc != nil {
		if text, err = r.TextFunc(inv); err != nil {
			return dst, fmt.Errorf("compute text: %w", err)
		}
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return dst, nil
	}
	return append(dst, chat.Message{Role: role, Text: text}), nil
}

// LoadRecord is the load_record resolver: Loader returns
// the records of type T for this run (e.g. the account of the inbound sender); each is rendered
// to text by Serialize, and the texts, in the loader's order, joined by a blank line ("\n\n"),
// form one message. No records (a nil or empty slice) contribute nothing: no matching row is a
// normal state. The rendered texts are used as the serializer returns them (not trimmed), and
// records that render to blank text still produce the message (a record exists; the host's
// serializer decides what it says).
//
// Serialize nil renders each record as JSON indented with two spaces, as encoding/json encodes T
// (field tags apply), without escaping <, > and & (the model reads the text, not a browser).
// Role is the message's role, RoleSystem when empty; RoleTool is refused.
type LoadRecord[T any] struct {
	Loader    func(context.Context, *Invocation) ([]T, error)
	Serialize func(T) (string, error)
	Role      chat.Role
}

// NewLoadRecord returns a LoadRecord with the given role ("" for RoleSystem), loader and
// serializer (nil for indented JSON). Generated code calls it so that Go infers T from the
// loader, whatever the serializer is.
func NewLoadRecord[T any](role chat.Role, loader func(context.Context, *Invocation) ([]T, error), serialize func(T) (string, error)) *LoadRecord[T] {
	return &LoadRecord[T]{Loader: loader, Serialize: serialize, Role: role}
}

// Method adapts a function returning text, such as a method expression (Account.LLMText), to a
// LoadRecord serializer that never fails.
func Method[T any](f func(T) string) func(T) (string, error) {
	return func(v T) (string, error) { return f(v), nil }
}

// Resolve appends the records' message to dst (see Resolver). Errors: "load_record: no Loader",
// an invalid Role, the loader's error wrapped as "load records: …", and a serializer's error
// wrapped as "serialize record [i] of n: …" with i counted from 0 in the loader's slice.
func (r *LoadRecord[T]) Resolve(ctx context.Context, inv *Invocation, dst []chat.Message) ([]chat.Message, error) {
	if r.Loader == nil {
		return dst, errors.New("load_record: no Loader")
	}
	role, err := roleOrSystem(r.Role)
	if err != nil {
		return dst, err
	}
	records, err := r.Loader(ctx, inv)
	if err != nil {
		return dst, fmt.Errorf("load records: %w", err)
	}
	if len(records) == 0 {
		return dst, nil
	}
	if len(records) == 1 && r.Serialize != nil { // the common case: no builder, no copy
		s, err := r.Serialize(records[0])
		if err != nil {
			return dst, fmt.Errorf("serialize record [0] of 1: %w", err)
		}
		return append(dst, chat.Message{Role: role, Text: s}), nil
	}
	var b strings.Builder
	for i, rec := range records {
		if i > 0 {
			b.WriteString("\n\n")
		}
		if err := r.render(&b, rec); err != nil {
			return dst, fmt.Errorf("serialize record [%d] of %d: %w", i, len(records), err)
		}
	}
	return append(dst, chat.Message{Role: role, Text: b.String()}), nil
}

func (r *LoadRecord[T]) render(b *strings.Builder, rec T) error {
	if r.Serialize != nil {
		s, err := r.Serialize(rec)
		b.WriteString(s)
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rec); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return nil
}

// trimFinalNewline returns b without one final line terminator ("\n" or "\r\n"), the end of
// a text file's last line.
func trimFinalNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
		if n > 1 && b[n-2] == '\r' {
			b = b[:n-2]
		}
	}
	return b
}

// utf8BOM is the UTF-8 byte order mark that LoadFile drops from the start of a file.
var utf8BOM = []byte("\ufeff")

// roleOrSystem returns r, RoleSystem for "", or an error naming an unknown role. RoleTool is
// refused: a tool message must carry the id of a preceding tool call (see Validate), which no
// static resolver has, so it could never form a valid request (the spec language refuses it too).
func roleOrSystem(r chat.Role) (chat.Role, error) {
	switch {
	case r == "":
		return chat.RoleSystem, nil
	case r == chat.RoleTool:
		return "", fmt.Errorf("role %q cannot be produced by load_file, load_text or load_record: a tool message answers a tool call by its id; use system, user or assistant", r)
	case !r.Valid():
		return "", fmt.Errorf("unknown role %q: use system, user or assistant", r)
	}
	return r, nil
}
