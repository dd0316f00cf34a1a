package runtime

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/personagen/personagen/runtime/chat"
)

// promptTree makes a root directory with prompt files and, beside it, a secret file that the
// root must not reach. It returns the root and the secret's path.
func promptTree(t *testing.T) (root, secret string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "app")
	secret = filepath.Join(base, "secret.md")
	files := map[string]string{
		"prompts/support.md":   "You are support.\n\nBe brief.\n",
		"prompts/blank.md":     " \n\t\r\n\u00a0\n",
		"prompts/empty.md":     "",
		"personas/ada.md":      "  Ada's prompt, indented.  ",
		"prompts/bom.md":       "\ufeffSaved by an editor that writes a BOM.\n",
		"prompts/bom-blank.md": "\ufeff \n",
		"prompts/crlf.md":      "Line one.\r\nLine two.\r\n",
		"prompts/two-ends.md":  "Keeps one blank line.\n\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(secret, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "prompts", "escape.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../personas", filepath.Join(root, "prompts", "personas")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(root, "up")); err != nil {
		t.Fatal(err)
	}
	return root, secret
}

func dirFiles(t *testing.T, root string) *Files {
	t.Helper()
	f, err := DirFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func static(p string) func(*Invocation) (string, error) {
	return func(*Invocation) (string, error) { return p, nil }
}

func TestLoadFile(t *testing.T) {
	root, secret := promptTree(t)
	files := dirFiles(t, root)
	personaPath := func(inv *Invocation) (string, error) {
		if inv.Persona == nil {
			return "", errors.New(".Persona is nil")
		}
		return "personas/" + inv.Persona.Name + ".md", nil
	}
	inv := &Invocation{Persona: &Persona{Name: "ada"}}
	tests := []struct {
		name    string
		r       LoadFile
		inv     *Invocation
		want    []chat.Message
		wantErr string
		is      error
	}{
		{"static relative path, content as is", LoadFile{Path: "prompts/support.md", Files: files}, inv,
			[]chat.Message{chat.SystemMessage("You are support.\n\nBe brief.")}, "", nil},
		{"role user", LoadFile{Path: "prompts/support.md", Role: chat.RoleUser, Files: files}, inv,
			[]chat.Message{chat.UserMessage("You are support.\n\nBe brief.")}, "", nil},
		{"computed path, not trimmed", LoadFile{PathFunc: personaPath, Files: files}, inv,
			[]chat.Message{chat.SystemMessage("  Ada's prompt, indented.  ")}, "", nil},
		{"computed path with inner dot-dot stays inside", LoadFile{PathFunc: static("prompts/../personas/ada.md"), Files: files}, inv,
			[]chat.Message{chat.SystemMessage("  Ada's prompt, indented.  ")}, "", nil},
		{"symlink that stays inside the root", LoadFile{Path: "prompts/personas/ada.md", Files: files}, inv,
			[]chat.Message{chat.SystemMessage("  Ada's prompt, indented.  ")}, "", nil},
		{"blank file contributes nothing", LoadFile{Path: "prompts/blank.md", Files: files}, inv, nil, "", nil},
		{"leading byte order mark dropped", LoadFile{Path: "prompts/bom.md", Files: files}, inv,
			[]chat.Message{chat.SystemMessage("Saved by an editor that writes a BOM.")}, "", nil},
		{"byte order mark and blanks contribute nothing", LoadFile{Path: "prompts/bom-blank.md", Files: files}, inv, nil, "", nil},
		{"one final CRLF dropped, inner ones kept", LoadFile{Path: "prompts/crlf.md", Files: files}, inv,
			[]chat.Message{chat.SystemMessage("Line one.\r\nLine two.")}, "", nil},
		{"only one final newline dropped", LoadFile{Path: "prompts/two-ends.md", Files: files}, inv,
			[]chat.Message{chat.SystemMessage("Keeps one blank line.\n")}, "", nil},
		{"dot-dot through a missing directory reads the cleaned path, as an fs.FS does",
			LoadFile{PathFunc: static("nowhere/../prompts/support.md"), Files: files}, inv,
			[]chat.Message{chat.SystemMessage("You are support.\n\nBe brief.")}, "", nil},
		{"trailing slash reads the cleaned path, as an fs.FS does", LoadFile{Path: "prompts/support.md/", Files: files}, inv,
			[]chat.Message{chat.SystemMessage("You are support.\n\nBe brief.")}, "", nil},
		{"role tool refused: a tool message needs a call id", LoadFile{Path: "prompts/support.md", Role: chat.RoleTool, Files: files}, inv, nil,
			`role "tool" cannot be produced by load_file, load_text or load_record: a tool message answers a tool call by its id; use system, user or assistant`, nil},
		{"empty file contributes nothing", LoadFile{Path: "prompts/empty.md", Files: files}, inv, nil, "", nil},
		{"static absolute path read as is", LoadFile{Path: secret, Files: files}, inv,
			[]chat.Message{chat.SystemMessage("secret")}, "", nil},
		{"missing file", LoadFile{Path: "prompts/none.md", Files: files}, inv, nil,
			`file not found: "prompts/none.md" (resolved to ` + filepath.Join(root, "prompts/none.md") + `)`, fs.ErrNotExist},
		{"missing computed file", LoadFile{PathFunc: personaPath, Files: files}, &Invocation{Persona: &Persona{Name: "bob"}}, nil,
			`file not found: "personas/bob.md" (resolved to ` + filepath.Join(root, "personas/bob.md") + `)`, fs.ErrNotExist},
		{"missing static absolute file", LoadFile{Path: secret + ".gone", Files: files}, inv, nil,
			`file not found: "` + secret + `.gone" (resolved to ` + secret + `.gone)`, fs.ErrNotExist},
		{"computed absolute path refused", LoadFile{PathFunc: static(secret), Files: files}, inv, nil,
			`path escapes the prompt root: computed path "` + secret + `" is absolute (computed paths must be relative)`, ErrPathEscapes},
		{"computed dot-dot refused", LoadFile{PathFunc: static("../secret.md"), Files: files}, inv, nil,
			`path escapes the prompt root: "../secret.md"`, ErrPathEscapes},
		{"computed inner dot-dot leaving the root refused", LoadFile{PathFunc: static("prompts/../../secret.md"), Files: files}, inv, nil,
			`path escapes the prompt root: "prompts/../../secret.md"`, ErrPathEscapes},
		{"static dot-dot refused", LoadFile{Path: "../secret.md", Files: files}, inv, nil,
			`path escapes the prompt root: "../secret.md"`, ErrPathEscapes},
		{"symlinked file leaving the root refused", LoadFile{PathFunc: static("prompts/escape.md"), Files: files}, inv, nil,
			`path escapes the prompt root: "prompts/escape.md" (resolved to ` + filepath.Join(root, "prompts/escape.md") + `) leads outside through a symlink or ".."`, ErrPathEscapes},
		{"symlinked directory leaving the root refused", LoadFile{Path: "up/secret.md", Files: files}, inv, nil,
			`path escapes the prompt root: "up/secret.md" (resolved to ` + filepath.Join(root, "up/secret.md") + `) leads outside through a symlink or ".."`, ErrPathEscapes},
		{"directory is a read error", LoadFile{Path: "prompts", Files: files}, inv, nil,
			`read "prompts" (resolved to ` + filepath.Join(root, "prompts") + `): is a directory`, nil},
		{"computed empty path", LoadFile{PathFunc: static(""), Files: files}, inv, nil, `empty path`, nil},
		{"path func error wrapped", LoadFile{PathFunc: personaPath, Files: files}, &Invocation{}, nil, `compute path: .Persona is nil`, nil},
		{"both path and func", LoadFile{Path: "a.md", PathFunc: personaPath}, inv, nil, `load_file: set exactly one of Path and PathFunc`, nil},
		{"neither path nor func", LoadFile{}, inv, nil, `load_file: set exactly one of Path and PathFunc`, nil},
		{"unknown role", LoadFile{Path: "prompts/support.md", Role: "narrator", Files: files}, inv, nil,
			`unknown role "narrator": use system, user or assistant`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior := []chat.Message{chat.UserMessage("prior")}
			got, err := tt.r.Resolve(context.Background(), tt.inv, prior)
			checkResolve(t, got, err, prior, tt.want, tt.wantErr, tt.is)
		})
	}
}

// checkResolve asserts a resolver's append-style result: on success prior followed by want, on
// failure prior unchanged and the exact error text (and errors.Is target when given).
func checkResolve(t *testing.T, got []chat.Message, err error, prior, want []chat.Message, wantErr string, is error) {
	t.Helper()
	if wantErr != "" {
		if err == nil || err.Error() != wantErr {
			t.Fatalf("err = %v\nwant  %s", err, wantErr)
		}
		if is != nil && !errors.Is(err, is) {
			t.Errorf("errors.Is(err, %v) = false", is)
		}
		if !equalMessages(got, prior) {
			t.Errorf("on error dst changed: %v", got)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !equalMessages(got, append(append([]chat.Message(nil), prior...), want...)) {
		t.Errorf("got %+v, want %+v after the prior messages", got, want)
	}
}

func TestLoadFileNotFoundErrorFields(t *testing.T) {
	root, _ := promptTree(t)
	_, err := (&LoadFile{Path: "prompts/none.md", Files: dirFiles(t, root)}).Resolve(context.Background(), &Invocation{}, nil)
	var nf *FileNotFoundError
	if !errors.As(err, &nf) {
		t.Fatalf("err = %v, want *FileNotFoundError", err)
	}
	if nf.Path != "prompts/none.md" || nf.Resolved != filepath.Join(root, "prompts", "none.md") {
		t.Errorf("Path %q Resolved %q", nf.Path, nf.Resolved)
	}
}

func TestLoadFileFromFS(t *testing.T) {
	fsys := fstest.MapFS{
		"prompts/support.md": {Data: []byte("From the FS.\n")},
		"prompts/blank.md":   {Data: []byte("\n\n")},
	}
	files := FSFiles(fsys)
	tests := []struct {
		name    string
		r       LoadFile
		want    []chat.Message
		wantErr string
		is      error
	}{
		{"read", LoadFile{Path: "prompts/support.md", Files: files}, []chat.Message{chat.SystemMessage("From the FS.")}, "", nil},
		{"cleaned path", LoadFile{PathFunc: static("prompts/./x/../support.md"), Files: files}, []chat.Message{chat.SystemMessage("From the FS.")}, "", nil},
		{"blank", LoadFile{Path: "prompts/blank.md", Files: files}, nil, "", nil},
		{"missing", LoadFile{Path: "prompts/none.md", Files: files}, nil, `file not found: "prompts/none.md" (resolved to fs:prompts/none.md)`, fs.ErrNotExist},
		{"dot-dot refused", LoadFile{PathFunc: static("../x.md"), Files: files}, nil, `path escapes the prompt root: "../x.md"`, ErrPathEscapes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.r.Resolve(context.Background(), &Invocation{}, nil)
			checkResolve(t, got, err, nil, tt.want, tt.wantErr, tt.is)
		})
	}
	if files.Dir() != "fs:" || files.Close() != nil {
		t.Errorf("Dir %q", files.Dir())
	}
}

func TestLoadFileWithoutFilesReadsTheWorkingDirectory(t *testing.T) {
	root, _ := promptTree(t)
	t.Chdir(root)
	got, err := (&LoadFile{Path: "prompts/support.md"}).Resolve(context.Background(), &Invocation{}, nil)
	checkResolve(t, got, err, nil, []chat.Message{chat.SystemMessage("You are support.\n\nBe brief.")}, "", nil)

	wd, _ := os.Getwd()
	_, err = (&LoadFile{Path: "prompts/none.md"}).Resolve(context.Background(), &Invocation{}, nil)
	checkResolve(t, nil, err, nil, nil, `file not found: "prompts/none.md" (resolved to `+filepath.Join(wd, "prompts/none.md")+`)`, fs.ErrNotExist)

	_, err = (&LoadFile{Path: "prompts/escape.md"}).Resolve(context.Background(), &Invocation{}, nil)
	if !errors.Is(err, ErrPathEscapes) {
		t.Errorf("symlink out of the working directory: err = %v, want ErrPathEscapes", err)
	}
}

func TestDirFilesRefusesAMissingDirectory(t *testing.T) {
	_, err := DirFiles(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.HasPrefix(err.Error(), "open prompt root: ") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("err = %v", err)
	}
}

func TestLoadText(t *testing.T) {
	describe := func(inv *Invocation) (string, error) {
		if inv.Persona == nil {
			return "", errors.New(".Persona is nil")
		}
		return "You are " + inv.Persona.Description + "\n", nil
	}
	inv := &Invocation{Persona: &Persona{Description: "a helpful agent."}}
	tests := []struct {
		name    string
		r       LoadText
		inv     *Invocation
		want    []chat.Message
		wantErr string
	}{
		{"static text", LoadText{Text: "Be brief."}, inv, []chat.Message{chat.SystemMessage("Be brief.")}, ""},
		{"trimmed", LoadText{Text: "\n\t  Be brief.\n\nReally.  \n"}, inv, []chat.Message{chat.SystemMessage("Be brief.\n\nReally.")}, ""},
		{"unicode space trimmed", LoadText{Text: "\u00a0\u2003x\u3000"}, inv, []chat.Message{chat.SystemMessage("x")}, ""},
		{"blank contributes nothing", LoadText{Text: " \n\t "}, inv, nil, ""},
		{"neither set contributes nothing", LoadText{}, inv, nil, ""},
		{"computed text", LoadText{TextFunc: describe, Role: chat.RoleUser}, inv, []chat.Message{chat.UserMessage("You are a helpful agent.")}, ""},
		{"computed blank", LoadText{TextFunc: func(*Invocation) (string, error) { return "  ", nil }}, inv, nil, ""},
		{"func error wrapped", LoadText{TextFunc: describe}, &Invocation{}, nil, "compute text: .Persona is nil"},
		{"both set", LoadText{Text: "x", TextFunc: describe}, inv, nil, "load_text: set at most one of Text and TextFunc"},
		{"unknown role", LoadText{Text: "x", Role: "System"}, inv, nil, `unknown role "System": use system, user or assistant`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior := []chat.Message{chat.SystemMessage("prior")}
			got, err := tt.r.Resolve(context.Background(), tt.inv, prior)
			checkResolve(t, got, err, prior, tt.want, tt.wantErr, nil)
		})
	}
}

type account struct {
	Email string   `json:"email"`
	Plan  string   `json:"plan"`
	Tags  []string `json:"tags,omitempty"`
}

func (a account) LLMText() string { return a.Email + " (" + a.Plan + ")" }

func TestLoadRecord(t *testing.T) {
	errDB := errors.New("db down")
	two := func(context.Context, *Invocation) ([]account, error) {
		return []account{{Email: "ada@example.com", Plan: "gold", Tags: []string{"<vip>", "a&b"}}, {Email: "bob@example.com", Plan: "free"}}, nil
	}
	none := func(context.Context, *Invocation) ([]account, error) { return nil, nil }
	empty := func(context.Context, *Invocation) ([]account, error) { return []account{}, nil }
	failing := func(context.Context, *Invocation) ([]account, error) { return nil, errDB }
	tests := []struct {
		name    string
		r       *LoadRecord[account]
		want    []chat.Message
		wantErr string
		is      error
	}{
		{"default indented JSON joined by a blank line", NewLoadRecord("", two, nil), []chat.Message{chat.SystemMessage(
			"{\n  \"email\": \"ada@example.com\",\n  \"plan\": \"gold\",\n  \"tags\": [\n    \"<vip>\",\n    \"a&b\"\n  ]\n}" +
				"\n\n" +
				"{\n  \"email\": \"bob@example.com\",\n  \"plan\": \"free\"\n}")}, "", nil},
		{"method serializer", NewLoadRecord(chat.RoleUser, two, Method(account.LLMText)),
			[]chat.Message{chat.UserMessage("ada@example.com (gold)\n\nbob@example.com (free)")}, "", nil},
		{"func serializer", NewLoadRecord("", two, func(a account) (string, error) { return "- " + a.Plan, nil }),
			[]chat.Message{chat.SystemMessage("- gold\n\n- free")}, "", nil},
		{"serializer output not trimmed", NewLoadRecord("", two, func(a account) (string, error) { return " " + a.Plan + "\n", nil }),
			[]chat.Message{chat.SystemMessage(" gold\n\n\n free\n")}, "", nil},
		{"nil records contribute nothing", NewLoadRecord("", none, nil), nil, "", nil},
		{"empty records contribute nothing", NewLoadRecord("", empty, nil), nil, "", nil},
		{"loader error wrapped", NewLoadRecord("", failing, nil), nil, "load records: db down", errDB},
		{"serializer error names the record", NewLoadRecord("", two, func(a account) (string, error) {
			if a.Plan == "free" {
				return "", errDB
			}
			return a.Plan, nil
		}), nil, "serialize record [1] of 2: db down", errDB},
		{"no loader", &LoadRecord[account]{}, nil, "load_record: no Loader", nil},
		{"unknown role", NewLoadRecord("bot", two, nil), nil, `unknown role "bot": use system, user or assistant`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior := []chat.Message{chat.SystemMessage("prior")}
			got, err := tt.r.Resolve(context.Background(), &Invocation{}, prior)
			checkResolve(t, got, err, prior, tt.want, tt.wantErr, tt.is)
		})
	}
}

func TestLoadRecordDefaultJSONErrorNamesTheRecord(t *testing.T) {
	r := NewLoadRecord("", func(context.Context, *Invocation) ([]any, error) {
		return []any{1, make(chan int)}, nil
	}, nil)
	_, err := r.Resolve(context.Background(), &Invocation{}, nil)
	if err == nil || err.Error() != "serialize record [1] of 2: json: unsupported type: chan int" {
		t.Errorf("err = %v", err)
	}
}

func TestLoadRecordPassesContextAndInvocation(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	inv := &Invocation{CorrelationID: "run-7"}
	r := NewLoadRecord("", func(ctx context.Context, got *Invocation) ([]string, error) {
		return []string{ctx.Value(key{}).(string) + " " + got.CorrelationID}, nil
	}, Method(func(s string) string { return s }))
	got, err := r.Resolve(ctx, inv, nil)
	checkResolve(t, got, err, nil, []chat.Message{chat.SystemMessage("v run-7")}, "", nil)
}
