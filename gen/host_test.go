package gen

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/personagen/personagen/spec"
)

// emitMessages emits p against host into package "out" and returns the
// diagnostics' messages.
func emitMessages(t *testing.T, p *spec.Persona, host *Host, opts Options) []string {
	t.Helper()
	_, err := Emit([]*spec.Persona{p}, host, opts)
	var ge *Error
	if !errors.As(err, &ge) {
		t.Fatalf("Emit error = %v, want *Error", err)
	}
	var msgs []string
	for _, d := range ge.Diagnostics {
		msgs = append(msgs, d.Message)
	}
	return msgs
}

// TestLoadFailurePassesOnTheGoCommandsError pins that when the go command
// refuses to list anything (here: the scratch module's go.mod lacks the
// requirements its imports need and -mod=readonly forbids adding them),
// the diagnostic carries the go command's own text, not only "was not
// loaded".
func TestLoadFailurePassesOnTheGoCommandsError(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the go command")
	}
	mod := scratchModule(t)
	t.Setenv("GOFLAGS", "-mod=readonly")
	host, err := LoadPackages(context.Background(), mod, []string{fixtureModule + "/host"})
	if err != nil {
		t.Fatalf("LoadPackages: %v", err)
	}
	p := &spec.Persona{Name: spec.String{Value: "a"}, File: "a.persona.yaml", Pos: spec.Pos{File: "a.persona.yaml", Line: 1, Col: 1}}
	msgs := emitMessages(t, p, host, Options{Package: "out", OutDir: mod})
	if len(msgs) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %q", len(msgs), msgs)
	}
	for _, want := range []string{"package " + RuntimePath + " was not loaded", "go: updates to go.mod needed", "go mod tidy"} {
		if !strings.Contains(msgs[0], want) {
			t.Errorf("message %q lacks %q", msgs[0], want)
		}
	}
	if strings.Contains(msgs[0], "\n") {
		t.Errorf("message %q spans lines", msgs[0])
	}
}
