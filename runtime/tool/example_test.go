package tool_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/tool"
)

// OrderQuery is the input of lookup_order.
type OrderQuery struct {
	Number string `json:"number"`
}

// Order is what lookup_order returns; the model reads it as JSON.
type Order struct {
	Number string `json:"number"`
	Status string `json:"status"`
}

// A tool from a typed function: the arguments are validated against the schema and decoded
// into OrderQuery before the function runs; arguments that do not fit never reach it, and the
// model reads the error as the call's failed result.
func ExampleNew() {
	lookup := tool.Must(tool.New(tool.Def{
		Name:        "lookup_order",
		Description: "Look up an order by its number.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"string"}},"required":["number"],"additionalProperties":false}`),
		Idempotent:  true,
	}, func(ctx context.Context, inv *runtime.Invocation, in OrderQuery) (Order, error) {
		return Order{Number: in.Number, Status: "shipped"}, nil
	}))

	ctx := context.Background()
	inv := &runtime.Invocation{}
	out, err := lookup.Call(ctx, inv, json.RawMessage(`{"number":"A-17"}`))
	fmt.Println(out, err)
	_, err = lookup.Call(ctx, inv, json.RawMessage(`{"number":17}`))
	fmt.Println(err)
	// Output:
	// {"number":"A-17","status":"shipped"} <nil>
	// invalid tool input for lookup_order: the arguments do not match the input schema: at /number: expected string, but got number
}
