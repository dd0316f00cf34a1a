// Package api is the public package of module example.com/other; some of
// its declarations use types of its internal package.
package api

import (
	"context"

	"example.com/other/internal/secret"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// Load is a loader whose record type lives in an internal package.
func Load(ctx context.Context, inv *runtime.Invocation) ([]secret.Record, error) {
	return []secret.Record{{Text: "r"}}, nil
}

// Resolver is a use resolver with a field of an internal package's type.
type Resolver struct {
	Config secret.Config   `yaml:"config"`
	Levels []secret.Config `yaml:"levels"`
	Name   string          `yaml:"name"`
}

// Resolve adds nothing.
func (r *Resolver) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}

// query is Search's input: an unexported type of this package, which the
// generated code never spells (Go infers it from Search).
type query struct {
	// Text is what to search for.
	Text string `json:"text"`
	// Level filters by an internal package's type.
	Level secret.Level `json:"level,omitempty"`
}

// Search searches the other module's records; its input type is
// unexported and one of its fields has a type of an internal package.
func Search(ctx context.Context, inv *runtime.Invocation, in query) ([]secret.Record, error) {
	return []secret.Record{{Text: in.Text}}, nil
}
