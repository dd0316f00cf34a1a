// Command cmdtool is a main package: a spec cannot name what it declares.
package main

import (
	"context"

	"example.com/fixture/host"
	"github.com/personagen/personagen/runtime"
)

// Tool is a tool declared in a program.
var Tool = host.WebFetch

// Env is an env type declared in a program.
type Env struct{}

// Load is a loader declared in a program.
func Load(ctx context.Context, inv *runtime.Invocation) ([]string, error) { return nil, nil }

func main() {}
