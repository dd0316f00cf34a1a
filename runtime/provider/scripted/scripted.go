package scripted

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
)

// Turn is one scripted answer.
//
// Text, ToolCalls and State make the assistant message; StopReason defaults to
// chat.StopToolUse when there are calls and chat.StopEndTurn otherwise; Usage and
// Refusal are returned as given. Err, when set, is returned instead of a response. Delay makes
// the call wait that long first (a done ctx ends the wait with an error wrapping ctx.Err()).
// Reply, when set, computes the response from the request instead of the fields above (Delay
// still applies).
type Turn struct {
	Text       string
	ToolCalls  []chat.ToolCall
	State      []chat.ProviderState
	StopReason chat.StopReason
	Usage      chat.Usage
	Refusal    string
	Err        error
	Delay      time.Duration
	Reply      func(*chat.Request) (*chat.Response, error)
}

// Text returns a turn that answers with text and ends the turn.
func Text(text string) Turn { return Turn{Text: text} }

// Calls returns a turn that asks for the given tool calls (StopReason tool_use).
func Calls(calls ...chat.ToolCall) Turn { return Turn{ToolCalls: calls} }

// Fail returns a turn whose call fails with err.
func Fail(err error) Turn { return Turn{Err: err} }

// ErrScriptExhausted is returned (wrapped) by Generate when every turn of the script was used.
var ErrScriptExhausted = errors.New("scripted model: the script has no turn left")

// Model is the scripted model. Build it with New; it is safe for concurrent use, answering
// calls in the order they take the lock. The zero value has an empty script.
type Model struct {
	// Provider, when set, makes Generate refuse the settings that provider cannot take, with
	// the error its real adapter returns.
	Provider string

	mu       sync.Mutex
	turns    []Turn
	next     int
	requests []chat.Request
}

// New returns a model that answers with turns, in order.
func New(turns ...Turn) *Model { return &Model{turns: turns} }

// Append adds turns to the end of the script.
func (m *Model) Append(turns ...Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns = append(m.turns, turns...)
}

// Generate records req, then answers with the next turn. It returns an error (and uses no
// turn) when req breaks chat.Validate, when Provider is set and refuses req.Model, and when
// ctx is done before the turn's Delay has passed; it returns the turn's Err, or an error
// wrapping ErrScriptExhausted when no turn is left. Each response gets the ids
// "scripted-req-<n>" and "scripted-resp-<n>" (n counts calls from 1) and the model name from
// req.Model.Name.
func (m *Model) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if req == nil {
		return nil, errors.New("scripted model: nil request")
	}
	m.mu.Lock()
	m.requests = append(m.requests, copyRequest(req))
	n := len(m.requests)
	m.mu.Unlock()

	if m.Provider != "" {
		if err := provider.CheckFor(m.Provider, req.Model); err != nil {
			return nil, err
		}
	}
	if err := chat.Validate(req.Messages); err != nil {
		return nil, fmt.Errorf("scripted model: request %d: %w", n, err)
	}
	m.mu.Lock()
	if m.next >= len(m.turns) {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w (request %d, %d turns scripted)", ErrScriptExhausted, n, len(m.turns))
	}
	k := m.next
	t := m.turns[k]
	m.next++
	m.mu.Unlock()

	if t.Delay > 0 {
		timer := time.NewTimer(t.Delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			m.giveBack(k)
			return nil, fmt.Errorf("scripted model: request %d: %w", n, ctx.Err())
		case <-timer.C:
		}
	}
	if err := ctx.Err(); err != nil {
		m.giveBack(k)
		return nil, fmt.Errorf("scripted model: request %d: %w", n, err)
	}
	if t.Err != nil {
		return nil, t.Err
	}
	var resp *chat.Response
	if t.Reply != nil {
		r, err := t.Reply(req)
		if err != nil {
			return nil, err
		}
		if r == nil {
			return nil, fmt.Errorf("scripted model: request %d: Reply returned no response", n)
		}
		resp = r
	} else {
		resp = &chat.Response{
			Message: chat.Message{Role: chat.RoleAssistant, Text: t.Text,
				ToolCalls: slices.Clone(t.ToolCalls), State: slices.Clone(t.State)},
			StopReason: t.StopReason,
			Usage:      t.Usage,
			Refusal:    t.Refusal,
		}
		if resp.StopReason == "" {
			resp.StopReason = chat.StopEndTurn
			if len(t.ToolCalls) > 0 {
				resp.StopReason = chat.StopToolUse
			}
		}
	}
	if resp.Model == "" {
		resp.Model = req.Model.Name
	}
	if resp.RequestID == "" {
		resp.RequestID = fmt.Sprintf("scripted-req-%d", n)
	}
	if resp.ResponseID == "" {
		resp.ResponseID = fmt.Sprintf("scripted-resp-%d", n)
	}
	return resp, nil
}

// giveBack returns turn k to the script after a call was cancelled, so the next call gets it;
// a later call may already have taken a later turn, which then keeps it.
func (m *Model) giveBack(k int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == k+1 {
		m.next = k
	}
}

// Requests returns a copy of every request Generate received, in order, refused ones included.
// Each copy has its own Messages and Tools slices (the messages' inner slices are shared and
// read-only, as always).
func (m *Model) Requests() []chat.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]chat.Request, len(m.requests))
	for i := range m.requests {
		out[i] = copyRequest(&m.requests[i])
	}
	return out
}

// Remaining returns how many turns of the script are still unused.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.turns) - m.next
}

// copyRequest copies req so that a caller reusing its message buffer
// cannot change what was recorded.
func copyRequest(req *chat.Request) chat.Request {
	c := *req
	c.Messages = slices.Clone(req.Messages)
	c.Tools = slices.Clone(req.Tools)
	c.Model.Stop = slices.Clone(req.Model.Stop)
	return c
}
