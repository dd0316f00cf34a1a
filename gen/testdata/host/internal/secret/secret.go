// Package secret is internal to example.com/fixture/host: packages outside
// that tree (the generated packages of the test cases) cannot import it.
package secret

import (
	"context"

	"example.com/fixture/host"
	"github.com/personagen/personagen/runtime"
)

// Tool is a tool of an internal package.
var Tool = host.WebFetch

// Load is a loader of an internal package.
func Load(ctx context.Context, inv *runtime.Invocation) ([]string, error) { return nil, nil }
