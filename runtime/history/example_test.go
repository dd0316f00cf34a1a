package history_test

import (
	"errors"
	"fmt"

	"github.com/personagen/personagen/runtime/history"
)

// A Query selects the part of a thread a replay reads; Check refuses one a Source must not
// answer, with an error matching ErrInvalidQuery.
func ExampleQuery_Check() {
	q := history.Query{ThreadID: "support-agent/t-1", ExcludeMessageID: "m-9@example.com", Limit: 20, ToolUses: true}
	fmt.Println(q.Check())

	err := history.Query{ThreadID: "support-agent/t-1", Limit: -2}.Check()
	fmt.Println(errors.Is(err, history.ErrInvalidQuery), err)
	// Output:
	// <nil>
	// true invalid history query: Limit -2 (use a positive number, 0 for 50, or NoLimit (-1) for all)
}
