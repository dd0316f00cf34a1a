package host_test

import (
	"context"
	"fmt"

	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
)

// The host code a spec names, called as the generated code calls it: a loader for the sender's
// account and a method tool.
func ExampleEnv() {
	env := &host.Env{
		Accounts: map[string]host.Account{"ada@example.com": {Email: "ada@example.com", Name: "Ada Lovelace", Plan: "team", Seats: 3}},
		Orders:   map[string]host.Order{"INV-2025-0117": {Number: "INV-2025-0117", Customer: "ada@example.com", AmountEUR: 49, Status: "paid"}},
	}
	ctx := context.Background()
	inv := &runtime.Invocation{Inbound: &history.Message{From: "Ada Lovelace <Ada@Example.com>"}}
	accounts, _ := env.AccountForSender(ctx, inv)
	fmt.Println(len(accounts), accounts[0].Name, accounts[0].Plan)

	order, err := env.LookupOrder(ctx, inv, host.OrderQuery{Number: " inv-2025-0117"})
	fmt.Println(order.Status, order.AmountEUR, err)
	_, err = env.LookupOrder(ctx, inv, host.OrderQuery{Number: "INV-0"})
	fmt.Println(err)
	// Output:
	// 1 Ada Lovelace team
	// paid 49 <nil>
	// no order or invoice "INV-0"
}
