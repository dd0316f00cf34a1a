package examples_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/personagen/personagen/examples"
	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/generated"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
)

// The support agent of support-agent.persona.yaml, as package generated builds it, assembles
// its request for one email: the prompt files (embedded in examples.Prompts), the sender's
// account from the host's Env, the support policy, and the message itself.
func Example_supportAgent() {
	env := &host.Env{Accounts: map[string]host.Account{
		"ada@example.com": {Email: "ada@example.com", Name: "Ada Lovelace", Company: "Analytical Ltd", Plan: "business", Seats: 12,
			CustomerSince: time.Date(2021, 5, 1, 0, 0, 0, 0, time.UTC)},
	}}
	persona, err := generated.NewSupportAgent(env, runtime.Options{Files: runtime.FSFiles(examples.Prompts), History: memory.New()})
	if err != nil {
		fmt.Println(err)
		return
	}
	req, err := runtime.BuildRequest(context.Background(), &runtime.Invocation{
		Persona: persona,
		Inbound: &history.Message{ThreadID: "t-1", MessageID: "q1@example.com", Direction: history.Inbound,
			From: "Ada Lovelace <ada@example.com>", To: []string{"support@acme.example"},
			Date: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC), Subject: "Seats", Text: "Can we add three seats?"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Model.Name, req.Model.Provider, req.Model.MaxTokens)
	for _, t := range req.Tools {
		fmt.Println("tool:", t.Name)
	}
	for _, m := range req.Messages {
		first, _, _ := strings.Cut(m.Text, "\n")
		fmt.Printf("%s: %s\n", m.Role, first)
	}
	// Output:
	// claude-sonnet-4-5 anthropic 4096
	// tool: search_help_center
	// tool: lookup_order
	// tool: escalate_ticket
	// system: You are an assistant that works through email on behalf of Acme Software GmbH.
	// system: Security policy for email work
	// system: You are Mira, a support specialist on Acme Tracker, Acme's project-tracking
	// system: Support policy
	// system: Customer account
	// system: This message came from Ada Lovelace <ada@example.com> to support@acme.example on Mon, 02 Mar 2026 09:00:00 +0000, subject "Seats". Reply to the sender only.
	// user: Can we add three seats?
}
