// Package generated holds the example personas of examples/ as `personagen generate` writes
// them, committed so that the demo builds from a fresh clone and verified in CI (`personagen
// verify`, and `go generate ./...` must leave no diff). Start from NewSupportAgent,
// NewResearchAssistant and NewSalesCoach: each builds its persona from the host's Env
// (package examples/host) and runtime.Options. This file is the one hand-written file here.
package generated
