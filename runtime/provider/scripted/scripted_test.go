package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
)

func call(id string) chat.ToolCall {
	return chat.ToolCall{ID: id, Name: "lookup", Input: json.RawMessage(`{"q":"` + id + `"}`)}
}

func TestScriptAnswersInOrderAndRecordsRequests(t *testing.T) {
	m := New(
		Calls(call("c1"), call("c2")),
		Turn{Text: "Done.", Usage: chat.Usage{InputTokens: 12, OutputTokens: 3}},
	)
	var _ chat.Model = m
	ctx := context.Background()
	msgs := []chat.Message{chat.UserMessage("Where is A-17?")}
	req := &chat.Request{Model: chat.ModelSettings{Name: "claude-x"}, Messages: msgs}
	r1, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := chat.AssistantMessage("", call("c1"), call("c2"))
	if !r1.Message.Equal(want) || r1.StopReason != chat.StopToolUse || r1.Model != "claude-x" ||
		r1.RequestID != "scripted-req-1" || r1.ResponseID != "scripted-resp-1" {
		t.Fatalf("first response = %+v", r1)
	}
	// The caller reuses its buffer: what was recorded must not change.
	msgs = append(msgs, r1.Message, chat.ToolMessage("c1", "shipped"), chat.ToolErrorMessage("c2", "timeout"))
	r2, err := m.Generate(ctx, &chat.Request{Model: req.Model, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Message.Text != "Done." || r2.StopReason != chat.StopEndTurn || r2.Usage.InputTokens != 12 || r2.ResponseID != "scripted-resp-2" {
		t.Fatalf("second response = %+v", r2)
	}
	msgs[0] = chat.UserMessage("changed")
	reqs := m.Requests()
	if len(reqs) != 2 || len(reqs[0].Messages) != 1 || len(reqs[1].Messages) != 4 {
		t.Fatalf("recorded %d requests: %+v", len(reqs), reqs)
	}
	if reqs[0].Messages[0].Text != "Where is A-17?" || reqs[1].Messages[0].Text != "Where is A-17?" {
		t.Errorf("recorded requests changed with the caller's buffer: %+v", reqs)
	}
	if !reqs[1].Messages[3].IsError {
		t.Error("the error flag of a result was not recorded")
	}
	if _, err := m.Generate(ctx, req); !errors.Is(err, ErrScriptExhausted) {
		t.Errorf("third call: err = %v, want ErrScriptExhausted", err)
	}
	if m.Remaining() != 0 {
		t.Errorf("Remaining = %d", m.Remaining())
	}
}

func TestScriptedErrorsStopReasonsAndReply(t *testing.T) {
	boom := errors.New("overloaded")
	m := New(
		Fail(boom),
		Turn{Text: "partial", StopReason: chat.StopMaxTokens},
		Turn{StopReason: chat.StopRefusal, Refusal: "I can't help with that."},
		Turn{Reply: func(req *chat.Request) (*chat.Response, error) {
			return &chat.Response{Message: chat.AssistantMessage("echo: " + req.Messages[0].Text), StopReason: chat.StopEndTurn}, nil
		}},
		Turn{Err: chat.ErrContextWindow},
	)
	req := &chat.Request{Messages: []chat.Message{chat.UserMessage("hi")}}
	ctx := context.Background()
	if _, err := m.Generate(ctx, req); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if r, _ := m.Generate(ctx, req); r.StopReason != chat.StopMaxTokens || r.Message.Text != "partial" {
		t.Errorf("got %+v", r)
	}
	if r, _ := m.Generate(ctx, req); r.StopReason != chat.StopRefusal || r.Refusal != "I can't help with that." {
		t.Errorf("got %+v", r)
	}
	if r, _ := m.Generate(ctx, req); r.Message.Text != "echo: hi" || r.RequestID != "scripted-req-4" {
		t.Errorf("got %+v", r)
	}
	if _, err := m.Generate(ctx, req); !errors.Is(err, chat.ErrContextWindow) {
		t.Errorf("err = %v", err)
	}
}

func TestDelayHonoursCancellationAndKeepsTheTurn(t *testing.T) {
	m := New(Turn{Text: "slow", Delay: time.Hour}, Text("next"))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	req := &chat.Request{Messages: []chat.Message{chat.UserMessage("hi")}}
	if _, err := m.Generate(ctx, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if m.Remaining() != 2 {
		t.Fatalf("a cancelled call used its turn: Remaining = %d", m.Remaining())
	}
	m2 := New(Turn{Text: "soon", Delay: time.Millisecond})
	if r, err := m2.Generate(context.Background(), req); err != nil || r.Message.Text != "soon" {
		t.Errorf("got %+v, %v", r, err)
	}
}

func TestRefusesWhatTheRealAdaptersRefuse(t *testing.T) {
	m := New(Text("never"))
	bad := &chat.Request{Messages: []chat.Message{chat.UserMessage("x"), chat.ToolMessage("c9", "orphan")}}
	var pe *chat.PairingError
	if _, err := m.Generate(context.Background(), bad); !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *chat.PairingError", err)
	}
	temp := 0.5
	m.Provider = provider.Anthropic
	_, err := m.Generate(context.Background(), &chat.Request{Model: chat.ModelSettings{Temperature: &temp}, Messages: []chat.Message{chat.UserMessage("x")}})
	if se := provider.SettingErrors(err); len(se) != 1 || !strings.Contains(err.Error(), "model.temperature") {
		t.Fatalf("err = %v", err)
	}
	if m.Remaining() != 1 || len(m.Requests()) != 2 {
		t.Errorf("refused calls used a turn (Remaining %d) or were not recorded (%d)", m.Remaining(), len(m.Requests()))
	}
}

func TestScriptedFailuresAreCallErrors(t *testing.T) {
	m := New(Transient(429, time.Hour), Transient(0, 0), Permanent(403, "no access"), Permanent(200, "not JSON"))
	m.Provider = provider.Anthropic
	req := &chat.Request{Messages: []chat.Message{chat.UserMessage("hi")}}
	for i, want := range []struct {
		ce        chat.CallError
		text      string
		malformed bool
	}{
		{chat.CallError{Provider: "anthropic", StatusCode: 429, Transient: true, RetryAfter: time.Hour},
			"anthropic: status 429 (transient, retry after 1h0m0s): scripted transient failure (429 Too Many Requests)", false},
		{chat.CallError{Provider: "anthropic", Transient: true}, "anthropic: no answer (transient): scripted transient failure (no answer)", false},
		{chat.CallError{Provider: "anthropic", StatusCode: 403}, "anthropic: status 403 (permanent): no access", false},
		{chat.CallError{Provider: "anthropic", StatusCode: 200}, "anthropic: status 200 (permanent): malformed model answer: not JSON", true},
	} {
		_, err := m.Generate(context.Background(), req)
		var ce *chat.CallError
		if !errors.As(err, &ce) {
			t.Fatalf("call %d: err = %v, want a *chat.CallError", i, err)
		}
		got := *ce
		got.Err = nil
		if got != want.ce || err.Error() != want.text || errors.Is(err, provider.ErrMalformedResponse) != want.malformed {
			t.Errorf("call %d: %+v %q\nwant    %+v %q", i, got, err, want.ce, want.text)
		}
	}
	// The scripted turn's error is not changed: a second model naming no provider says "scripted".
	turn := Transient(503, time.Second)
	m2 := New(turn)
	_, err := m2.Generate(context.Background(), req)
	var ce *chat.CallError
	if !errors.As(err, &ce) || ce.Provider != "scripted" || turn.Err.(*chat.CallError).Provider != "" {
		t.Errorf("err = %v; turn's error %+v", err, turn.Err)
	}
}

func TestCancelledCallIsATransientCallError(t *testing.T) {
	m := New(Turn{Text: "slow", Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := m.Generate(ctx, &chat.Request{Messages: []chat.Message{chat.UserMessage("hi")}})
	var ce *chat.CallError
	if !errors.Is(err, context.Canceled) || !errors.As(err, &ce) || !ce.Transient || ce.Provider != "scripted" || ce.StatusCode != 0 {
		t.Errorf("err = %v, want a transient CallError matching context.Canceled", err)
	}
	if m.Remaining() != 1 {
		t.Errorf("a cancelled call used its turn")
	}
}
