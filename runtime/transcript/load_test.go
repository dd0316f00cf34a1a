package transcript

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

func TestLoadAppendsTheFilesMessages(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "few.chat"), []byte("user: ping\n\nassistant: pong\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := runtime.DirFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	dst := []chat.Message{chat.SystemMessage("first")}
	got, err := (&Load{Path: "few.chat", Files: files}).Resolve(context.Background(), nil, dst)
	if err != nil {
		t.Fatal(err)
	}
	want := []chat.Message{chat.SystemMessage("first"), chat.UserMessage("ping"), chat.AssistantMessage("pong")}
	if !slices.EqualFunc(got, want, chat.Message.Equal) {
		t.Fatalf("got %s\nwant %s", dump(got), dump(want))
	}
}

func TestLoadReadsFromAnFSAndAbsolutePaths(t *testing.T) {
	fsys := fstest.MapFS{"prompts/x.chat": {Data: []byte("system: from fs")}}
	got, err := (&Load{Path: "prompts/x.chat", Files: runtime.FSFiles(fsys)}).Resolve(context.Background(), nil, nil)
	if err != nil || !slices.EqualFunc(got, []chat.Message{chat.SystemMessage("from fs")}, chat.Message.Equal) {
		t.Fatalf("fs: got %s, %v", dump(got), err)
	}
	abs := filepath.Join(t.TempDir(), "abs.chat")
	if err := os.WriteFile(abs, []byte("user: abs"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = (&Load{Path: abs}).Resolve(context.Background(), nil, nil)
	if err != nil || !slices.EqualFunc(got, []chat.Message{chat.UserMessage("abs")}, chat.Message.Equal) {
		t.Fatalf("absolute: got %s, %v", dump(got), err)
	}
}

func TestLoadBlankFileContributesNothing(t *testing.T) {
	fsys := fstest.MapFS{"blank.chat": {Data: []byte("\n  \n")}}
	dst := []chat.Message{chat.UserMessage("kept")}
	got, err := (&Load{Path: "blank.chat", Files: runtime.FSFiles(fsys)}).Resolve(context.Background(), nil, dst)
	if err != nil || !slices.EqualFunc(got, dst, chat.Message.Equal) {
		t.Fatalf("got %s, %v", dump(got), err)
	}
}

func TestLoadErrors(t *testing.T) {
	fsys := fstest.MapFS{"bad.chat": {Data: []byte("user: ok\n\nassistant:\nfunction_call: {oops}\n")}}
	files := runtime.FSFiles(fsys)
	dst := []chat.Message{chat.UserMessage("kept")}

	t.Run("parse error names the path and line", func(t *testing.T) {
		got, err := (&Load{Path: "bad.chat", Files: files}).Resolve(context.Background(), nil, dst)
		want := `transcript "bad.chat" (resolved to fs:bad.chat): line 4: function_call: invalid JSON: invalid character 'o' looking for beginning of object key string`
		if err == nil || err.Error() != want {
			t.Fatalf("error = %v\nwant    %s", err, want)
		}
		var pe *ParseError
		if !errors.As(err, &pe) || pe.Line != 4 {
			t.Fatalf("errors.As ParseError: %v", pe)
		}
		if !slices.EqualFunc(got, dst, chat.Message.Equal) {
			t.Fatalf("dst changed: %s", dump(got))
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := (&Load{Path: "none.chat", Files: files}).Resolve(context.Background(), nil, dst)
		var nf *runtime.FileNotFoundError
		if !errors.As(err, &nf) || !errors.Is(err, fs.ErrNotExist) || nf.Path != "none.chat" {
			t.Fatalf("error = %v", err)
		}
		if want := `load_transcript: file not found: "none.chat" (resolved to fs:none.chat)`; err.Error() != want {
			t.Fatalf("error = %q, want %q", err, want)
		}
	})
	t.Run("path leaving the root", func(t *testing.T) {
		_, err := (&Load{Path: "../x.chat", Files: files}).Resolve(context.Background(), nil, dst)
		if !errors.Is(err, runtime.ErrPathEscapes) {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("empty path", func(t *testing.T) {
		_, err := (&Load{Files: files}).Resolve(context.Background(), nil, dst)
		if err == nil || err.Error() != "load_transcript: empty path" {
			t.Fatalf("error = %v", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := (&Load{Path: "bad.chat", Files: files}).Resolve(ctx, nil, dst)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v", err)
		}
	})
}

func TestLoadInAChainLabelsTheStep(t *testing.T) {
	fsys := fstest.MapFS{"bad.chat": {Data: []byte("hello")}}
	chain := runtime.NewChain(runtime.Step{Kind: "load_transcript", Pos: "a.persona.yaml:9:5",
		Resolver: &Load{Path: "bad.chat", Files: runtime.FSFiles(fsys)}})
	_, err := chain.Resolve(context.Background(), nil, nil)
	if err == nil || !strings.Contains(err.Error(), `resolver #1 (load_transcript at a.persona.yaml:9:5): transcript "bad.chat"`) ||
		!strings.HasSuffix(err.Error(), "line 1: text before the first role header (system:, user: or assistant:)") {
		t.Fatalf("error = %v", err)
	}
}
