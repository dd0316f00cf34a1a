package tokens_test

import (
	"fmt"

	"github.com/personagen/personagen/runtime/tokens"
)

// Counting a prompt's tokens offline, as `personagen render` reports them.
func ExampleCount() {
	fmt.Println(tokens.Count("You answer customer email for Acme Tracker."))
	fmt.Println(len(tokens.Encode("Hello, world!")), tokens.Encoding)
	// Output:
	// 9
	// 4 o200k_base
}
