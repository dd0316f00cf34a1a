// Package agents is host code that (through package wiring) imports the
// output package it would be generated into.
package agents

import (
	"context"

	"example.com/fixture/err-imports-output/agents/wiring"
	"example.com/fixture/host"
	"github.com/personagen/personagen/runtime"
)

// Tool is a tool.
var Tool = host.WebFetch

// Resolver is a use resolver.
type Resolver struct{}

// Resolve adds nothing.
func (r *Resolver) Resolve(ctx context.Context, inv *runtime.Invocation, dst []runtime.Message) ([]runtime.Message, error) {
	_ = wiring.Version
	return dst, nil
}
