package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/personagen/personagen/runtime/chat"
)

// deskModel is the example service's model: deterministic, offline, and good enough to watch
// the service work. For a reply run it reads the customer's message (the request's last user
// message): a message that asks for a refund escalates to billing (escalate_ticket, which is not
// idempotent), one that names an invoice (INV-2025-0117) looks it up (lookup_order); with the
// tool results in view it writes the reply; any other message gets a short acknowledgement.
// A scheduled run (no tools called, no customer) gets a digest. latency delays every call;
// outage makes the first calls fail as an overloaded provider does (status 529, transient).
type deskModel struct {
	latency time.Duration
	outage  int64
	calls   atomic.Int64
}

var invoice = regexp.MustCompile(`INV-\d{4}-\d{4}`)

func (m *deskModel) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	n := m.calls.Add(1)
	if m.latency > 0 {
		t := time.NewTimer(m.latency)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, &chat.CallError{Provider: req.Model.Provider, Transient: true, Err: ctx.Err()}
		}
	}
	if n <= m.outage {
		return nil, &chat.CallError{Provider: req.Model.Provider, StatusCode: 529, Transient: true, Err: errors.New("overloaded")}
	}
	usage := chat.Usage{InputTokens: int64(len(req.Messages)) * 400, OutputTokens: 60}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == chat.RoleTool {
		return &chat.Response{Message: chat.AssistantMessage(replyFrom(req)), StopReason: chat.StopEndTurn, Usage: usage}, nil
	}
	text := messageText(last)
	offers := func(name string) bool {
		for _, t := range req.Tools {
			if t.Name == name {
				return true
			}
		}
		return false
	}
	call := func(name string, input any) (*chat.Response, error) {
		c, err := chat.NewToolCall(fmt.Sprintf("call_%d", n), name, input)
		if err != nil {
			return nil, err
		}
		return &chat.Response{Message: chat.AssistantMessage("", c), StopReason: chat.StopToolUse, Usage: usage}, nil
	}
	switch {
	case last.Role != chat.RoleUser || !offers("escalate_ticket"):
		return &chat.Response{Message: chat.AssistantMessage("Today's digest: nothing new on the topics you follow."), StopReason: chat.StopEndTurn, Usage: usage}, nil
	case strings.Contains(strings.ToLower(text), "refund"):
		return call("escalate_ticket", map[string]string{"summary": firstLine(text), "reason": "refund"})
	case invoice.MatchString(text) && offers("lookup_order"):
		return call("lookup_order", map[string]string{"number": invoice.FindString(text)})
	}
	return &chat.Response{Message: chat.AssistantMessage("Thank you for your message. We have read it and will get back to you if anything is missing.\n\nAcme Tracker Support"),
		StopReason: chat.StopEndTurn, Usage: usage}, nil
}

// replyFrom writes the reply from the newest tool result.
func replyFrom(req *chat.Request) string {
	last := req.Messages[len(req.Messages)-1]
	var result map[string]any
	json.Unmarshal([]byte(last.Text), &result)
	switch {
	case result["ticket"] != nil:
		return fmt.Sprintf("Thank you. I have passed your request to our billing team (ticket %v); they will write to you within one business day.\n\nAcme Tracker Support", result["ticket"])
	case result["number"] != nil:
		return fmt.Sprintf("Invoice %v is %v.\n\nAcme Tracker Support", result["number"], result["status"])
	}
	return "I could not look that up just now; a colleague will follow up.\n\nAcme Tracker Support"
}

// messageText is a message's text, from its parts when it has them.
func messageText(m chat.Message) string {
	if len(m.Parts) == 0 {
		return m.Text
	}
	var b strings.Builder
	for _, p := range m.Parts {
		if p.Type == chat.PartText {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
