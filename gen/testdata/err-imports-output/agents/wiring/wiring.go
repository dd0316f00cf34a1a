// Package wiring imports the output package.
package wiring

import "example.com/fixture/err-imports-output/out"

// Version is the output package's.
const Version = out.Version
