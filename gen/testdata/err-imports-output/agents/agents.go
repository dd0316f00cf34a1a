// Package agents is host code that (through package wiring) imports the
// output package it would be generated into.
package agents

import (
	"context"

	"example.com/fixture/err-imports-output/agents/wiring"
	"example.com/fixture/host"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// Tool is a tool.
var Tool = host.WebFetch

// Resolver is a use resolver.
type Resolver struct{}

// Resolve adds nothing.
func (r *Resolver) Resolve(ctx context.Context, inv *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
	_ = wiring.Version
	return dst, nil
}
