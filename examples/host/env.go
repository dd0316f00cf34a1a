package host

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime"
)

// Env is the host dependency the example specs name with `env:`; the
// generated constructors take a *Env, and bare loader names in the specs
// are its methods. Accounts is keyed by lower-case email address, Orders by
// upper-case order or invoice number. An Env is safe for concurrent use by
// the tools of a run once built; it must not be copied.
type Env struct {
	Accounts map[string]Account
	Topics   []Topic
	Orders   map[string]Order
	// TicketFile, when set, is a file every ticket EscalateTicket opens is appended to, one JSON
	// line each, synced before the tool returns: a record of the side effect that outlives the
	// process (the example service's -tickets flag).
	TicketFile string

	mu      sync.Mutex
	tickets []Ticket // opened by EscalateTicket
}

// Account is a customer account of Acme Tracker, the record the
// support-agent persona loads for the sender of a message.
type Account struct {
	Email         string
	Name          string
	Company       string
	Plan          string
	Seats         int
	CustomerSince time.Time
	OpenTickets   int
}

// LLMText renders the account as the model reads it: one fact per line.
func (a Account) LLMText() string {
	return fmt.Sprintf("Customer account\nName: %s\nEmail: %s\nCompany: %s\nPlan: %s (%d seats)\nCustomer since: %s\nOpen tickets: %d",
		a.Name, a.Email, a.Company, a.Plan, a.Seats, a.CustomerSince.Format("2006-01-02"), a.OpenTickets)
}

// AccountForSender is a load_record loader: the account of the inbound
// message's sender, or none when the run is scheduled, the From header does
// not parse, or the address has no account (an unknown sender is normal).
func (e *Env) AccountForSender(ctx context.Context, inv *runtime.Invocation) ([]Account, error) {
	if inv.Inbound == nil {
		return nil, nil
	}
	addr, err := mail.ParseAddress(inv.Inbound.From)
	if err != nil {
		return nil, nil
	}
	if a, ok := e.Accounts[strings.ToLower(addr.Address)]; ok {
		return []Account{a}, nil
	}
	return nil, nil
}

// Topic is a subject the research assistant follows for its owner.
type Topic struct {
	Name     string
	Keywords []string
	Why      string
}

// LLMText renders a watched topic for the model.
func (t Topic) LLMText() string {
	return fmt.Sprintf("Watched topic: %s\nKeywords: %s\nWhy it matters: %s", t.Name, strings.Join(t.Keywords, ", "), t.Why)
}

// WatchedTopics is a load_record loader returning the owner's topics, in
// the order the owner ranked them.
func (e *Env) WatchedTopics(ctx context.Context, inv *runtime.Invocation) ([]Topic, error) {
	return e.Topics, nil
}
