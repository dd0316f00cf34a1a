package scripted

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
// the call wait that long first (a done ctx ends the wait with a transient *chat.CallError
// wrapping ctx.Err()). Transient and Permanent script the failures of a provider's API.
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

// Transient returns a turn whose call fails as a provider's transient failure does: with a
// *chat.CallError of StatusCode status (429, 503, 529, …; 0 for a call that got no answer),
// Transient true and RetryAfter retryAfter (0 when the provider asked for no wait). Its
// Provider is the Model's Provider, or "scripted" when that is empty.
func Transient(status int, retryAfter time.Duration) Turn {
	return Turn{Err: &chat.CallError{StatusCode: status, Transient: true, RetryAfter: retryAfter,
		Err: fmt.Errorf("scripted transient failure (%s)", statusText(status))}}
}

// Permanent returns a turn whose call fails as a provider's refusal does: with a
// *chat.CallError of StatusCode status (400, 401, 403, 404, …), Transient false and reason as
// its cause. Status 200 stands for a success answer that is not an answer of the API: the cause
// then wraps provider.ErrMalformedResponse, as the real adapters' does. Its Provider is the
// Model's Provider, or "scripted" when that is empty.
func Permanent(status int, reason string) Turn {
	err := errors.New(reason)
	if status == http.StatusOK {
		err = fmt.Errorf("%w: %s", provider.ErrMalformedResponse, reason)
	}
	return Turn{Err: &chat.CallError{StatusCode: status, Err: err}}
}

func statusText(status int) string {
	if status == 0 {
		return "no answer"
	}
	return fmt.Sprintf("%d %s", status, http.StatusText(status))
}

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
// turn) when req breaks chat.Validate, when Provider is set and refuses req.Model (both plain
// errors, as the real adapters' refusals before sending), and when ctx is done before the
// turn's Delay has passed or at the call (a transient *chat.CallError matching ctx.Err(), as
// the real adapters return); it returns the turn's Err (a *chat.CallError without a Provider
// gets the Model's, see Transient), or an error wrapping ErrScriptExhausted when no turn is
// left. Each response gets the ids
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
		case <-timer.C:
		}
	}
	if err := ctx.Err(); err != nil {
		m.giveBack(k)
		return nil, &chat.CallError{Provider: m.name(), Transient: true, Err: fmt.Errorf("scripted model: request %d: %w", n, err)}
	}
	if t.Err != nil {
		var ce *chat.CallError
		if errors.As(t.Err, &ce) && ce == t.Err && ce.Provider == "" {
			c := *ce
			c.Provider = m.name()
			return nil, &c
		}
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

// name is the Provider of the model's CallErrors.
func (m *Model) name() string {
	if m.Provider != "" {
		return m.Provider
	}
	return "scripted"
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
