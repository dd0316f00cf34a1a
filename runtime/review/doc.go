// Package review renders the exact request a persona sends for a fixture thread, for reviews of
// a spec change: `personagen render` prints it and `personagen diff` compares it between two
// revisions of the specs and prompt files. The CLI generates a small program into the host's
// module (through the go command's -overlay, nothing written to the module's tree) that builds
// the personas with the host's env and calls Main; Main reads a Job, renders each item and
// writes a Result, all JSON.
//
// Start from LoadFixture, a fixture file, and Seed, which stores it for runtime.BuildRequest;
// WireBody and Estimate show and measure the request.
//
// A fixture (Fixture, LoadFixture) is a YAML file next to the specs,
// FixtureDir/<persona>/<name>.yaml: the thread as .eml files or a transcript (or a responsibility
// to fire), the message answered, the tool rounds of earlier runs, a compaction summary, the
// env constructor, and stubs for resolvers that must not run in a review. Seed stores it in an
// in-memory store exactly as the runner's store would hold it; runtime.BuildRequest then
// assembles the request the runner would send first, and Render shows it provider-neutral in
// the transcript format (with a line where each cache breakpoint ends its prefix) or as the body
// an adapter would POST, captured by an http.RoundTripper that sends nothing. Estimate counts
// its tokens offline (runtime/tokens).
package review
