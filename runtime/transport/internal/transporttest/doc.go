// Package transporttest holds what the transports' tests share: a Deliverer over a real store
// (mail.Ingest, then mail.RecordBounce), scratch stores, a self-signed certificate, and private
// instances of the real mail servers the tests talk to — Postfix, Dovecot, swaks, and dkimpy as
// the independent DKIM verifier — each started on 127.0.0.1 with its own configuration
// directory and ports, and stopped when the test ends.
//
// A test that needs a server binary that is not installed is skipped, so that `go test ./...`
// passes on a machine without them; under CI=true it fails instead (.ci/run installs them).
package transporttest
