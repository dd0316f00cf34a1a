//go:build never

// Package tagged has no file in any ordinary build.
package tagged

// Tool is never built.
var Tool = 1
