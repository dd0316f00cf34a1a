// Package docs reads the Markdown of README.md and docs/ for the tests that keep them true to
// the module. Start from Blocks (the fenced code blocks, with their info strings: the marks that
// say which blocks README's tour runs), Links and Anchors (the link check, with GitHub's
// heading anchors, Slug).
//
// Its tests hold README.md to at most 300 lines, every relative link and #anchor of README.md
// and docs/*.md to a file and heading that exist, README's quick start to the commands CI runs,
// README's path table to every package of the module, and every public package to a package
// documentation that says where to start and to a runnable Example. README's tour runs in
// cmd/personagen (TestREADMETour), where the CLI runs in-process.
package docs
