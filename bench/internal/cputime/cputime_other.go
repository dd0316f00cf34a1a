//go:build !unix

package cputime

import "time"

// Process returns 0 and false: CPU time is not measured on this system.
func Process() (time.Duration, bool) { return 0, false }
