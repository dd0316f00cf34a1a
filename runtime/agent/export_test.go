package agent

// Internals the external tests reach, as net/http's export_test.go does.

// SetHook makes r call f at every named point of a run (see Runner.at); an error f returns
// aborts the attempt there, as a crash would. The "tool:…" points are passed from the tools'
// goroutines, concurrently.
func SetHook(r *Runner, f func(point string) error) { r.hook = f }

// InDoubtText is the result the model reads for a call in doubt.
var InDoubtText = inDoubtText

// ReplayInput is the stored arguments' replay as a call input.
var ReplayInput = replayInput
