// Package host is the host code the bench persona spec names: the Env whose method loads the
// sender's account record, and the Account record with its LLMText serializer. The personagen
// pipeline calls it through generated code; the peer pipelines call the same functions, so the
// record costs every side the same.
package host

import (
	"context"
	"strconv"
	"strings"

	"github.com/personagen/personagen/runtime"
)

// Env holds the accounts the bench loads records from, keyed by lower-case sender address.
type Env struct {
	Accounts map[string]Account
}

// Account is the record the bench persona loads for the sender of the inbound message.
type Account struct {
	Email       string
	Name        string
	Company     string
	Plan        string
	Seats       int
	OpenTickets int
}

// LLMText renders the account as the model reads it, one fact per line.
func (a Account) LLMText() string {
	return "Customer account\nName: " + a.Name + "\nEmail: " + a.Email + "\nCompany: " + a.Company +
		"\nPlan: " + a.Plan + " (" + strconv.Itoa(a.Seats) + " seats)\nOpen tickets: " + strconv.Itoa(a.OpenTickets)
}

// Lookup returns the account of the address from (compared case-insensitively) and whether it
// exists. The peers call it directly; AccountForSender wraps it for the generated pipeline.
func (e *Env) Lookup(from string) (Account, bool) {
	a, ok := e.Accounts[strings.ToLower(from)]
	return a, ok
}

// AccountForSender is the spec's load_record loader: the account of the inbound sender, or no
// record in a scheduled run or for an unknown sender. It never fails.
func (e *Env) AccountForSender(_ context.Context, inv *runtime.Invocation) ([]Account, error) {
	if inv.Inbound == nil {
		return nil, nil
	}
	if a, ok := e.Lookup(inv.Inbound.From); ok {
		return []Account{a}, nil
	}
	return nil, nil
}
