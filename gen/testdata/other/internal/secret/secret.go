// Package secret is internal to module example.com/other.
package secret

import (
	"context"

	"github.com/personagen/personagen/runtime"
)

// Record is a record type of an internal package.
type Record struct{ Text string }

// Line serializes a record.
func (r Record) Line() string { return r.Text }

// Config is a struct type of an internal package.
type Config struct{ Level int }

// Load is a loader of an internal package.
func Load(ctx context.Context, inv *runtime.Invocation) ([]Record, error) { return nil, nil }

// Tool is a tool of an internal package.
var Tool runtime.Tool

// Level is a clearance level: an enum of an internal package.
type Level string

// The levels.
const (
	Public       Level = "public"
	Confidential Level = "confidential"
)
