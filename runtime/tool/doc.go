// Package tool builds executable tools — values implementing runtime.Tool — from Go functions
// whose input is a typed struct. Start from New, with a Def, and Must for package-level tools.
//
// A tool is described by a Def (name, description, the JSON Schema of its input, whether it is
// idempotent) and run by a function of the run's context, its read-only Invocation and the
// decoded input:
//
//	type OrderQuery struct {
//		Number string `json:"number"` // order or invoice number, e.g. INV-2024-0117
//	}
//
//	var LookupOrder = tool.Must(tool.New(tool.Def{
//		Name:        "lookup_order",
//		Description: "Look up an order or invoice by its number.",
//		InputSchema: json.RawMessage(`{"type":"object","properties":{"number":{"type":"string"}},"required":["number"],"additionalProperties":false}`),
//		Idempotent:  true,
//	}, func(ctx context.Context, inv *runtime.Invocation, in OrderQuery) (Order, error) { ... }))
//
// The generator emits the same call for a tool that a spec names as a method of its env type,
// with the schema derived from the method's input struct at generate time; the compiler then
// checks the method's signature against New's type parameters.
//
// At run time every call's arguments are validated against the schema (compiled once, by New,
// with santhosh-tekuri/jsonschema) and decoded strictly; a mismatch is an error the model reads
// as a failed result, never a panic, and the function is not called.
package tool
