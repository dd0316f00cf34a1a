package review_test

import (
	"fmt"

	"github.com/personagen/personagen/runtime/review"
)

// A fixture of the example support persona, loaded and checked as `personagen validate` and
// `render` load it.
func ExampleLoadFixture() {
	f, problems := review.LoadFixture("../../examples/fixtures/support-agent/example-thread.yaml")
	if len(problems) > 0 {
		fmt.Println(problems)
		return
	}
	fmt.Println(f.Persona, f.Name)
	// Output:
	// support-agent example-thread
}
