package host

import (
	"context"
	"time"
)

// ExampleEnv returns the example host's data: the customers' accounts of the example support
// thread, their orders and invoices, and the research assistant's topics. The demo runs on it,
// and the example fixtures name it as their env (a review builds the personas with it); it
// never fails.
func ExampleEnv(ctx context.Context) (*Env, error) {
	since := time.Date(2022, 5, 17, 0, 0, 0, 0, time.UTC)
	at := func(day, hour, min, sec int) time.Time { return time.Date(2025, 3, day, hour, min, sec, 0, time.UTC) }
	return &Env{
		Accounts: map[string]Account{
			"lena.fischer@brightline.io": {Email: "lena.fischer@brightline.io", Name: "Lena Fischer", Company: "Brightline GmbH",
				Plan: "business", Seats: 24, CustomerSince: since, OpenTickets: 1},
			"jonas.brandt@brightline.io": {Email: "jonas.brandt@brightline.io", Name: "Jonas Brandt (billing contact)", Company: "Brightline GmbH",
				Plan: "business", Seats: 24, CustomerSince: since, OpenTickets: 1},
		},
		Orders: map[string]Order{
			"INV-2025-0117": {Number: "INV-2025-0117", Customer: "Brightline GmbH", AmountEUR: 432, Status: "paid",
				Captures: []Payment{{ID: "CAP-77120", At: at(1, 6, 0, 2), AmountEUR: 432}, {ID: "CAP-77121", At: at(1, 6, 0, 3), AmountEUR: 432}},
				Refunds: []Payment{{ID: "RF-2025-0311", At: at(3, 9, 38, 0), AmountEUR: 432,
					Status: "returned by the card issuer on 2025-03-05: the card was replaced"}}},
			"SUB-BRIGHTLINE": {Number: "SUB-BRIGHTLINE", Customer: "Brightline GmbH", AmountEUR: 432, Status: "active",
				Renews: "2025-04-01", Billing: "monthly, annual from the April renewal"},
		},
		Topics: []Topic{
			{Name: "AI coding assistants", Keywords: []string{"code review", "agents", "IDE"}, Why: "Acme Tracker's automation roadmap competes with them."},
			{Name: "EU Data Act", Keywords: []string{"data portability", "cloud switching"}, Why: "Customers ask how to export their workspaces."},
		},
	}, nil
}
