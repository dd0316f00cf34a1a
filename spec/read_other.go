//go:build !unix

package spec

// nonBlocking is 0 where the system has no named pipes to block on.
const nonBlocking = 0

// fileID is unavailable here; fileKey falls back to the resolved path.
func fileID(string) (string, bool) { return "", false }
