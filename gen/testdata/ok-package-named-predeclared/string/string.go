// Package string is named like the predeclared type.
package string

import (
	"context"

	"github.com/personagen/personagen/runtime"
)

// Env is an env.
type Env struct{}

// Record is a record.
type Record struct{ Text string }

// Line serializes a record.
func (r Record) Line() string { return r.Text }

// Load is a loader.
func (e *Env) Load(ctx context.Context, inv *runtime.Invocation) ([]Record, error) { return nil, nil }
