// Package new is named like the predeclared function.
package new

import (
	"context"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// Resolver is a use resolver with a pointer field.
type Resolver struct {
	Max *int `yaml:"max"`
}

// Resolve adds nothing.
func (r *Resolver) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	return dst, nil
}
