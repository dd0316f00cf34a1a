// Package golden compares test output with golden files and rewrites them when the test binary
// runs with -update. It is test support only, imported by _test.go files: spec, runtime,
// runtime/store, runtime/transcript, cmd/personagen and the demo example keep their golden files
// under testdata/ through it, so `go test ./... -update` (or `go test ./pkg -update`) rewrites
// them all the same way. gen's golden tests define their own -update flag with the same meaning.
package golden
