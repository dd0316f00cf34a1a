package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/personagen/personagen/examples/host"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
)

// seed writes the support thread and returns the newest inbound message,
// the one the support agent answers, as stored.
func seed(ctx context.Context, st *store.Store) (store.Message, error) {
	if err := st.DeleteThread(ctx, threadID); err != nil {
		return store.Message{}, err
	}
	at := func(day, hour, min int) time.Time { return time.Date(2025, 3, day, hour, min, 0, 0, time.UTC) }
	customer := "Lena Fischer <lena.fischer@brightline.io>"
	support := "Acme Tracker Support <support@acme.example>"
	msgs := []history.Message{
		{
			MessageID: "<c1@brightline.io>", Direction: history.Inbound, From: customer, To: []string{support},
			Subject: "Invoice INV-2025-0117 charged twice", Date: at(3, 9, 12),
			Text: "Hello,\n\nour card was charged twice for invoice INV-2025-0117 (EUR 432.00 each). Can you refund the duplicate?\n\nThanks,\nLena",
		},
		{
			MessageID: "<s1@acme.example>", Direction: history.Outbound, From: support, To: []string{customer},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(3, 9, 40),
			Text: "Hi Lena,\n\nyou are right: INV-2025-0117 was captured twice on 1 March. I have refunded the second charge of EUR 432.00; it reaches your card within 5 business days.\n\nMira, Acme Tracker Support",
		},
		{
			MessageID: "<c2@brightline.io>", Direction: history.Inbound, From: customer, To: []string{support}, Cc: []string{"Jonas Brandt <jonas.brandt@brightline.io>"},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(4, 8, 5),
			HTML: "<html><body><p>Thanks Mira, that was quick!</p><p>One more thing: can we switch to <b>annual billing</b> from April? Jonas (cc) handles our invoices from now on.</p><p>Lena</p></body></html>",
		},
		{
			MessageID: "<s2@acme.example>", Direction: history.Outbound, From: support, To: []string{customer}, Cc: []string{"Jonas Brandt <jonas.brandt@brightline.io>"},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(4, 8, 31),
			Text: "Hi Lena, hi Jonas,\n\nannual billing starts with your April renewal; the help-center article \"Switching to annual billing\" explains the pro-rated first invoice. I have added Jonas as billing contact.\n\nMira, Acme Tracker Support",
		},
		{
			MessageID: "<c3@brightline.io>", Direction: history.Inbound, From: "Jonas Brandt <jonas.brandt@brightline.io>", To: []string{support}, Cc: []string{customer},
			Subject: "Re: Invoice INV-2025-0117 charged twice", Date: at(6, 14, 47),
			Text:        "Hi Mira,\n\nthe refund has not shown up on our statement yet (attached). Could you check whether it went out?\n\nBest,\nJonas",
			Attachments: []history.Attachment{{ID: "att-5531", Filename: "statement-2025-03.pdf", ContentType: "application/pdf", Size: 84213}},
		},
	}
	seqs := make([]int64, len(msgs))
	for i, m := range msgs {
		m.ThreadID = threadID
		a, err := st.AppendMessage(ctx, store.Message{Message: m, Mailbox: supportMailbox})
		if err != nil {
			return store.Message{}, err
		}
		seqs[i] = a.Seq
	}

	// The runs that answered the first two messages called tools; their
	// rounds are recorded against the inbound message each run answered.
	rounds := []struct {
		source int
		runID  string
		turn   int
		calls  [][3]string // id, name, input JSON
		result []string
	}{
		{0, "run-0303-a", 0,
			[][3]string{{"call_01", "lookup_order", `{"number":"INV-2025-0117"}`}},
			[]string{`{"number":"INV-2025-0117","amount_eur":432.00,"status":"paid","captures":[{"at":"2025-03-01T06:00:02Z","amount_eur":432.00},{"at":"2025-03-01T06:00:03Z","amount_eur":432.00}]}`}},
		{0, "run-0303-a", 1,
			[][3]string{{"call_02", "escalate_ticket", `{"summary":"Duplicate capture on INV-2025-0117, refund EUR 432.00 within business-plan limit.","reason":"refund"}`}},
			[]string{`{"ticket":"BIL-8812","status":"refund issued"}`}},
		{2, "run-0304-b", 0,
			[][3]string{
				{"call_03", "search_help_center", `{"query":"annual billing switch"}`},
				{"call_04", "lookup_order", `{"number":"SUB-BRIGHTLINE"}`},
			},
			[]string{
				`[{"title":"Switching to annual billing","url":"https://help.acme.example/billing/annual"}]`,
				`{"plan":"business","seats":24,"renews":"2025-04-01","billing":"monthly"}`,
			}},
	}
	for _, r := range rounds {
		round := store.Round{
			Owner:   store.Owner{Type: store.OwnerMessage, ID: seqs[r.source]},
			Persona: "support-agent", RunID: r.runID, TurnIndex: r.turn,
		}
		for i, c := range r.calls {
			call, err := runtime.NewToolCall(c[0], c[1], json.RawMessage(c[2]))
			if err != nil {
				return store.Message{}, err
			}
			round.Calls = append(round.Calls, call)
			round.Results = append(round.Results, store.Result{Content: r.result[i], Succeeded: true})
		}
		if _, err := st.RecordRound(ctx, round); err != nil {
			return store.Message{}, err
		}
	}

	// The first exchange (the refund) is compacted: the summary replaces
	// it, and history replays what came after. A real host asks a model for
	// the summary; the demo's summarizer is canned.
	summarizer := runtime.SummarizerFunc(func(ctx context.Context, in runtime.SummaryInput) (string, error) {
		return "Lena Fischer (Brightline, business plan) reported a duplicate card charge for INV-2025-0117 (EUR 432.00). " +
			"Support confirmed two captures on 1 March, refunded the second one (ticket BIL-8812) and promised the money within 5 business days.", nil
	})
	if _, err := st.Compact(ctx, threadID, seqs[1], summarizer); err != nil {
		return store.Message{}, fmt.Errorf("compact: %w", err)
	}

	last := msgs[len(msgs)-1]
	last.Seq, last.ThreadID = seqs[len(seqs)-1], threadID
	return store.Message{Message: last, Mailbox: supportMailbox}, nil
}

// followUp is the customer's answer to the support agent's reply, stored in
// the same thread.
func followUp(ctx context.Context, st *store.Store, reply *store.Message) (store.Message, error) {
	m := history.Message{
		ThreadID: threadID, MessageID: "<c4@brightline.io>", InReplyTo: reply.MessageID,
		References: append(append([]string(nil), reply.References...), reply.MessageID),
		Direction:  history.Inbound, From: "Jonas Brandt <jonas.brandt@brightline.io>", To: []string{"Acme Tracker Support <support@acme.example>"},
		Subject: "Re: Invoice INV-2025-0117 charged twice", Date: time.Date(2025, 3, 6, 16, 10, 0, 0, time.UTC),
		Text: "Thanks for digging into this. Our new card ends in 4242; if a transfer is easier, our IBAN is DE02 1203 0000 0000 2020 51.\n\nJonas",
	}
	a, err := st.AppendMessage(ctx, store.Message{Message: m, Mailbox: supportMailbox})
	if err != nil {
		return store.Message{}, err
	}
	m.Seq = a.Seq
	return store.Message{Message: m, Mailbox: supportMailbox}, nil
}

// supportMailbox is the store mailbox of the support agent's messages: the persona's name, as
// mail.Ingest files a persona's mail.
const supportMailbox = "support-agent"

// newEnv returns the example host's data: the customers' accounts, their
// orders and invoices, and the research assistant's topics.
func newEnv() *host.Env {
	since := time.Date(2022, 5, 17, 0, 0, 0, 0, time.UTC)
	at := func(day, hour, min, sec int) time.Time { return time.Date(2025, 3, day, hour, min, sec, 0, time.UTC) }
	return &host.Env{
		Accounts: map[string]host.Account{
			"lena.fischer@brightline.io": {Email: "lena.fischer@brightline.io", Name: "Lena Fischer", Company: "Brightline GmbH",
				Plan: "business", Seats: 24, CustomerSince: since, OpenTickets: 1},
			"jonas.brandt@brightline.io": {Email: "jonas.brandt@brightline.io", Name: "Jonas Brandt (billing contact)", Company: "Brightline GmbH",
				Plan: "business", Seats: 24, CustomerSince: since, OpenTickets: 1},
		},
		Orders: map[string]host.Order{
			"INV-2025-0117": {Number: "INV-2025-0117", Customer: "Brightline GmbH", AmountEUR: 432, Status: "paid",
				Captures: []host.Payment{{ID: "CAP-77120", At: at(1, 6, 0, 2), AmountEUR: 432}, {ID: "CAP-77121", At: at(1, 6, 0, 3), AmountEUR: 432}},
				Refunds: []host.Payment{{ID: "RF-2025-0311", At: at(3, 9, 38, 0), AmountEUR: 432,
					Status: "returned by the card issuer on 2025-03-05: the card was replaced"}}},
			"SUB-BRIGHTLINE": {Number: "SUB-BRIGHTLINE", Customer: "Brightline GmbH", AmountEUR: 432, Status: "active",
				Renews: "2025-04-01", Billing: "monthly, annual from the April renewal"},
		},
		Topics: []host.Topic{
			{Name: "AI coding assistants", Keywords: []string{"code review", "agents", "IDE"}, Why: "Acme Tracker's automation roadmap competes with them."},
			{Name: "EU Data Act", Keywords: []string{"data portability", "cloud switching"}, Why: "Customers ask how to export their workspaces."},
		},
	}
}
