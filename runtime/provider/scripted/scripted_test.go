package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/provider"
)

func call(id string) runtime.ToolCall {
	return runtime.ToolCall{ID: id, Name: "lookup", Input: json.RawMessage(`{"q":"` + id + `"}`)}
}

func TestScriptAnswersInOrderAndRecordsRequests(t *testing.T) {
	m := New(
		Calls(call("c1"), call("c2")),
		Turn{Text: "Done.", Usage: runtime.Usage{InputTokens: 12, OutputTokens: 3}},
	)
	var _ runtime.Model = m
	ctx := context.Background()
	msgs := []runtime.Message{runtime.UserMessage("Where is A-17?")}
	req := &runtime.Request{Model: runtime.ModelSettings{Name: "claude-x"}, Messages: msgs}
	r1, err := m.Generate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.AssistantMessage("", call("c1"), call("c2"))
	if !r1.Message.Equal(want) || r1.StopReason != runtime.StopToolUse || r1.Model != "claude-x" ||
		r1.RequestID != "scripted-req-1" || r1.ResponseID != "scripted-resp-1" {
		t.Fatalf("first response = %+v", r1)
	}
	// The caller reuses its buffer: what was recorded must not change.
	msgs = append(msgs, r1.Message, runtime.ToolMessage("c1", "shipped"), runtime.ToolErrorMessage("c2", "timeout"))
	r2, err := m.Generate(ctx, &runtime.Request{Model: req.Model, Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if r2.Message.Text != "Done." || r2.StopReason != runtime.StopEndTurn || r2.Usage.InputTokens != 12 || r2.ResponseID != "scripted-resp-2" {
		t.Fatalf("second response = %+v", r2)
	}
	msgs[0] = runtime.UserMessage("changed")
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
		Turn{Text: "partial", StopReason: runtime.StopMaxTokens},
		Turn{StopReason: runtime.StopRefusal, Refusal: "I can't help with that."},
		Turn{Reply: func(req *runtime.Request) (*runtime.Response, error) {
			return &runtime.Response{Message: runtime.AssistantMessage("echo: " + req.Messages[0].Text), StopReason: runtime.StopEndTurn}, nil
		}},
		Turn{Err: runtime.ErrContextWindow},
	)
	req := &runtime.Request{Messages: []runtime.Message{runtime.UserMessage("hi")}}
	ctx := context.Background()
	if _, err := m.Generate(ctx, req); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if r, _ := m.Generate(ctx, req); r.StopReason != runtime.StopMaxTokens || r.Message.Text != "partial" {
		t.Errorf("got %+v", r)
	}
	if r, _ := m.Generate(ctx, req); r.StopReason != runtime.StopRefusal || r.Refusal != "I can't help with that." {
		t.Errorf("got %+v", r)
	}
	if r, _ := m.Generate(ctx, req); r.Message.Text != "echo: hi" || r.RequestID != "scripted-req-4" {
		t.Errorf("got %+v", r)
	}
	if _, err := m.Generate(ctx, req); !errors.Is(err, runtime.ErrContextWindow) {
		t.Errorf("err = %v", err)
	}
}

func TestDelayHonoursCancellationAndKeepsTheTurn(t *testing.T) {
	m := New(Turn{Text: "slow", Delay: time.Hour}, Text("next"))
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	req := &runtime.Request{Messages: []runtime.Message{runtime.UserMessage("hi")}}
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
	bad := &runtime.Request{Messages: []runtime.Message{runtime.UserMessage("x"), runtime.ToolMessage("c9", "orphan")}}
	var pe *runtime.PairingError
	if _, err := m.Generate(context.Background(), bad); !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a *runtime.PairingError", err)
	}
	temp := 0.5
	m.Provider = provider.Anthropic
	_, err := m.Generate(context.Background(), &runtime.Request{Model: runtime.ModelSettings{Temperature: &temp}, Messages: []runtime.Message{runtime.UserMessage("x")}})
	if se := provider.SettingErrors(err); len(se) != 1 || !strings.Contains(err.Error(), "model.temperature") {
		t.Fatalf("err = %v", err)
	}
	if m.Remaining() != 1 || len(m.Requests()) != 2 {
		t.Errorf("refused calls used a turn (Remaining %d) or were not recorded (%d)", m.Remaining(), len(m.Requests()))
	}
}
