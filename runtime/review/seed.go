package review

import (
	"bytes"
	"context"
	"fmt"
	"net/mail"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	pmail "github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/transcript"
)

// epoch is when a fixture's first message arrives (one minute apart after it), and the default
// time of a fire.
var epoch = time.Date(2025, 1, 6, 8, 0, 0, 0, time.UTC)

// Seed stores the fixture's thread in st (a migrated, empty store) as the persona p received
// it — each .eml through runtime/mail's Ingest (the persona's own mail as its sent mail), the
// rounds through RecordRound, the summary through Compact — and returns the Invocation of the
// run that answers the fixture's message (or fires its responsibility), as the runner builds
// it for a new run: the stored message, its attachments' bytes included, and no fixed view
// (the history is what was stored before it). answered describes the message or fire.
func Seed(ctx context.Context, st *store.Store, p *runtime.Persona, f *Fixture) (inv *runtime.Invocation, answered string, err error) {
	if f.Fire != nil {
		r, ok := p.Responsibility(f.Fire.Value)
		if !ok {
			return nil, "", fmt.Errorf("%s: persona %s has no responsibility %q", f.File, p.Name, f.Fire.Value)
		}
		return &runtime.Invocation{Persona: p, Responsibility: &r}, "fire of " + r.Name, nil
	}
	if f.Transcript != nil {
		return seedTranscript(ctx, st, p, f)
	}
	if p.Mailbox.Address == "" {
		return nil, "", fmt.Errorf("%s: persona %s has no mailbox address, so mail cannot reach it; give its spec a mailbox or the fixture a transcript", f.File, p.Name)
	}
	stored := map[string]history.Message{}
	var last string
	for i, m := range f.Mail {
		raw, err := os.ReadFile(f.Path(m.Value))
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", f.File, err)
		}
		arrived := epoch.Add(time.Duration(i) * time.Minute)
		parsed, err := pmail.Parse(bytes.NewReader(raw), arrived)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %s: %w", f.File, m.Value, err)
		}
		got, err := pmail.Ingest(ctx, st, bytes.NewReader(raw), pmail.Ingestion{Personas: []*runtime.Persona{p}, Arrived: arrived, Sent: ownMail(parsed, p)})
		if err != nil {
			return nil, "", fmt.Errorf("%s: %s: %w", f.File, m.Value, err)
		}
		if len(got.Deliveries) == 0 {
			return nil, "", fmt.Errorf("%s: %s is not addressed to %s (%s)", f.File, m.Value, p.Name, p.Mailbox.Address)
		}
		d := got.Deliveries[0]
		stored[m.Value] = d.Message
		if d.Answer() {
			last = m.Value
		}
	}
	for i, r := range f.Rounds {
		owner := stored[r.Answers.Value]
		run := r.Run
		if run == "" {
			run = fmt.Sprintf("fixture-run-%d", indexOf(f.Mail, r.Answers.Value))
		}
		turn := 0
		for _, prev := range f.Rounds[:i] {
			if prev.Run == r.Run && prev.Answers.Value == r.Answers.Value {
				turn++
			}
		}
		round := store.Round{Owner: store.Owner{Type: store.OwnerMessage, ID: owner.Seq}, Persona: p.Name, RunID: run, TurnIndex: turn}
		for _, c := range r.Calls {
			call, err := chat.NewToolCall(c.ID, c.Name, c.Input)
			if err != nil {
				return nil, "", fmt.Errorf("%s: round %d: %w", f.File, i+1, err)
			}
			round.Calls = append(round.Calls, call)
			round.Results = append(round.Results, store.Result{Content: c.Result, Succeeded: !c.Failed})
		}
		if _, err := st.RecordRound(ctx, round); err != nil {
			return nil, "", fmt.Errorf("%s: round %d: %w", f.File, i+1, err)
		}
	}
	answer := last
	if f.Answer != nil {
		answer = f.Answer.Value
	}
	if answer == "" {
		return nil, "", fmt.Errorf("%s: no message of the thread is to be answered; name one with answer", f.File)
	}
	msg := stored[answer]
	if msg.Direction != history.Inbound {
		return nil, "", fmt.Errorf("%s: %s is the persona's own mail, not a message to answer; name an inbound message with answer", f.File, answer)
	}
	if f.Summary != nil {
		through := stored[f.Summary.Through.Value]
		text := f.Summary.Text
		sum := runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) { return text, nil })
		if _, err := st.Compact(ctx, msg.ThreadID, through.Seq, sum); err != nil {
			return nil, "", fmt.Errorf("%s: summary: %w", f.File, err)
		}
	}
	return &runtime.Invocation{Persona: p, Inbound: &msg}, "reply to " + filepath.Base(answer), nil
}

func indexOf(vs []Value, s string) int {
	for i, v := range vs {
		if v.Value == s {
			return i
		}
	}
	return -1
}

// ownMail reports whether m is from one of p's addresses.
func ownMail(m *pmail.Message, p *runtime.Persona) bool {
	from, err := mail.ParseAddress(m.From)
	if err != nil {
		return false
	}
	for _, a := range append([]string{p.Mailbox.Address}, p.Mailbox.Aliases...) {
		if strings.EqualFold(from.Address, a) {
			return true
		}
	}
	return false
}

// seedTranscript stores a transcript fixture: user turns as inbound messages, assistant texts
// as the persona's replies, calls and results as rounds of the run that answered the user
// turn before them. The last user turn is answered.
func seedTranscript(ctx context.Context, st *store.Store, p *runtime.Persona, f *Fixture) (*runtime.Invocation, string, error) {
	raw, err := os.ReadFile(f.Path(f.Transcript.Value))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", f.File, err)
	}
	msgs, err := transcript.Parse(string(raw))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %s: %w", f.File, f.Transcript.Value, err)
	}
	from, subject := f.From, f.Subject
	if from == "" {
		from = "Customer <customer@example.com>"
	}
	if subject == "" {
		subject = "Fixture"
	}
	self := p.Mailbox.Address
	if self == "" {
		self = p.Name + "@fixture.invalid"
	}
	thread := "fixture/" + p.Name + "/" + f.Name
	var owner history.Message
	var answer *history.Message
	round, turn := (*store.Round)(nil), 0
	flush := func() error {
		if round == nil {
			return nil
		}
		if _, err := st.RecordRound(ctx, *round); err != nil {
			return err
		}
		round = nil
		return nil
	}
	n := 0
	appendMsg := func(dir history.Direction, text string) (history.Message, error) {
		n++
		m := history.Message{ThreadID: thread, MessageID: fmt.Sprintf("m%d@%s.fixture", n, f.Name), Direction: dir,
			Date: epoch.Add(time.Duration(n) * time.Minute), Subject: subject, Text: text}
		if dir == history.Inbound {
			m.From, m.To = from, []string{self}
		} else {
			m.From, m.To = self, []string{from}
		}
		a, err := st.AppendMessage(ctx, store.Message{Message: m, Mailbox: p.Name})
		if err != nil {
			return m, err
		}
		m.Seq = a.Seq
		return m, nil
	}
	for _, m := range msgs {
		switch {
		case m.Role == chat.RoleUser:
			if err := flush(); err != nil {
				return nil, "", err
			}
			stored, err := appendMsg(history.Inbound, m.Text)
			if err != nil {
				return nil, "", fmt.Errorf("%s: %w", f.File, err)
			}
			owner, answer, turn = stored, &stored, 0
		case m.Role == chat.RoleAssistant && len(m.ToolCalls) > 0:
			if err := flush(); err != nil {
				return nil, "", err
			}
			round = &store.Round{Owner: store.Owner{Type: store.OwnerMessage, ID: owner.Seq}, Persona: p.Name,
				RunID: fmt.Sprintf("fixture-run-%d", owner.Seq), TurnIndex: turn, Calls: m.ToolCalls, Text: m.Text}
			turn++
		case m.Role == chat.RoleTool && round != nil:
			round.Results = append(round.Results, store.Result{Content: m.Text, Succeeded: !m.IsError})
		case m.Role == chat.RoleAssistant:
			if err := flush(); err != nil {
				return nil, "", err
			}
			if _, err := appendMsg(history.Outbound, m.Text); err != nil {
				return nil, "", fmt.Errorf("%s: %w", f.File, err)
			}
			answer = nil
		}
	}
	if err := flush(); err != nil {
		return nil, "", err
	}
	if answer == nil {
		return nil, "", fmt.Errorf("%s: %s ends with a reply: end it with the user turn to answer", f.File, f.Transcript.Value)
	}
	return &runtime.Invocation{Persona: p, Inbound: answer}, "reply to the last user turn", nil
}
