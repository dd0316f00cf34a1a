package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"time"

	"github.com/personagen/personagen/examples"
	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// The example thread's files in examples/mail (embedded as examples.Mail), in the order they were
// sent, and the customer's answer to the first reply the demo sends.
var (
	threadFiles = []string{
		"mail/01-customer-question.eml",
		"mail/02-support-reply.eml",
		"mail/03-customer-html-only.eml",
		"mail/04-support-reply.eml",
		"mail/05-customer-attachment.eml",
	}
	followUpFile = "mail/06-customer-follow-up.eml"
)

// supportThread is the example thread in the support agent's mailbox: mail.Ingest derives it from
// the conversation's root message. The demo deletes it first, so a MySQL database can be reused
// between runs.
var supportThread = mail.NewThreadID("support-agent", "c1@brightline.io")

// ingestedFile is one file as mail.Ingest stored it.
type ingestedFile struct {
	Name string
	*mail.Ingested
}

// seedThread ingests the example thread's files into st with mail.Ingest, in the order they were
// sent, records the tool rounds of the runs that answered the first two customer messages and
// compacts the first exchange. It returns the newest message, the one the support agent answers,
// as stored (its attachment's bytes included, for the run), and what each file became.
func seedThread(ctx context.Context, st *store.Store, personas []*runtime.Persona, clock *settableClock) (store.Message, []ingestedFile, error) {
	if err := st.DeleteThread(ctx, supportThread); err != nil {
		return store.Message{}, nil, err
	}
	var files []ingestedFile
	var seqs []int64
	for _, name := range threadFiles {
		f, err := ingestExample(ctx, st, personas, name, clock.Now())
		if err != nil {
			return store.Message{}, nil, err
		}
		files = append(files, f)
		seqs = append(seqs, f.Deliveries[0].Message.Seq)
	}

	// The runs that answered the first two customer messages called tools; their rounds are
	// recorded against the inbound message each run answered.
	rounds := []struct {
		source int // index in threadFiles
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
			call, err := chat.NewToolCall(c[0], c[1], json.RawMessage(c[2]))
			if err != nil {
				return store.Message{}, nil, err
			}
			round.Calls = append(round.Calls, call)
			round.Results = append(round.Results, store.Result{Content: r.result[i], Succeeded: true})
		}
		if _, err := st.RecordRound(ctx, round); err != nil {
			return store.Message{}, nil, err
		}
	}

	// The first exchange (the refund) is compacted: the summary replaces it, and history replays
	// what came after. A real host asks a model for the summary; the demo's summarizer is canned.
	summarizer := runtime.SummarizerFunc(func(ctx context.Context, in runtime.SummaryInput) (string, error) {
		return "Lena Fischer (Brightline, business plan) reported a duplicate card charge for INV-2025-0117 (EUR 432.00). " +
			"Support confirmed two captures on 1 March, refunded the second one (ticket BIL-8812) and promised the money within 5 business days.", nil
	})
	if _, err := st.Compact(ctx, supportThread, seqs[1], summarizer); err != nil {
		return store.Message{}, nil, fmt.Errorf("compact: %w", err)
	}

	newest := files[len(files)-1].Deliveries[0]
	return store.Message{Message: newest.Message, Mailbox: newest.Persona.Name}, files, nil
}

// ingestFollowUp ingests the customer's answer to the support agent's first reply, which names
// that reply (its Message-ID, derived from the run) in In-Reply-To, and returns it as stored.
func ingestFollowUp(ctx context.Context, st *store.Store, personas []*runtime.Persona, arrived time.Time, reply *store.Message) (store.Message, ingestedFile, error) {
	f, err := ingestExample(ctx, st, personas, followUpFile, arrived)
	if err != nil {
		return store.Message{}, ingestedFile{}, err
	}
	d := f.Deliveries[0]
	if reply != nil && (d.Message.InReplyTo != reply.MessageID || !d.Joined) {
		return store.Message{}, ingestedFile{}, fmt.Errorf("examples/%s answers %s, but the first reply was stored as %s: correct its In-Reply-To and References",
			followUpFile, d.Message.InReplyTo, reply.MessageID)
	}
	return store.Message{Message: d.Message, Mailbox: d.Persona.Name}, f, nil
}

// ingestExample ingests one of the example files, which must reach the support agent's thread
// and no one else.
func ingestExample(ctx context.Context, st *store.Store, personas []*runtime.Persona, name string, arrived time.Time) (ingestedFile, error) {
	raw, err := fs.ReadFile(examples.Mail, name)
	if err != nil {
		return ingestedFile{}, err
	}
	m, err := mail.Parse(bytes.NewReader(raw), arrived)
	if err != nil {
		return ingestedFile{}, fmt.Errorf("examples/%s: %w", name, err)
	}
	// The example files are the host's own archive: a reply of the persona is its sent mail.
	in := mail.Ingestion{Personas: personas, Arrived: arrived, Sent: isSentMail(m, personas)}
	got, err := mail.Ingest(ctx, st, bytes.NewReader(raw), in)
	if err != nil {
		return ingestedFile{}, fmt.Errorf("examples/%s: %w", name, err)
	}
	if len(got.Deliveries) != 1 || got.Deliveries[0].Persona.Name != "support-agent" || got.Deliveries[0].Message.ThreadID != supportThread {
		var to []string
		for _, d := range got.Deliveries {
			to = append(to, d.Persona.Name+" "+d.Message.ThreadID)
		}
		return ingestedFile{}, fmt.Errorf("examples/%s was delivered to %v, want the support agent's thread %s only", name, to, supportThread)
	}
	return ingestedFile{Name: "examples/" + name, Ingested: got}, nil
}
