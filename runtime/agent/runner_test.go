package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

func TestReplyRunsToolRoundsAndStoresTheReply(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newToolbox()
		m := &model{}
		p := persona(st, box.tools())
		res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if err != nil {
			t.Fatal(err)
		}
		key := agent.ReplyKey("support", mailbox, in.MessageID)
		if res.Run.Key != key || res.Run.Status != store.RunSucceeded || res.AlreadyFinished {
			t.Errorf("run = %+v", res.Run)
		}
		var results []string
		for turn := range rounds {
			results = append(results, `{"found":"`+callID(turn, "lookup")+`","status":"shipped <on time>","token":"[redacted]"}`,
				runtime.Clip("article about "+callID(turn, "search")+": "+longText, store.StoredPayloadLimit), "done: "+callID(turn, "act"))
		}
		wantText := "Dear Ada, I read: " + strings.Join(results, " | ")
		if res.Text != wantText || res.Reply == nil || res.Reply.Text != wantText {
			t.Fatalf("text = %.300q\nwant   %.300q", res.Text, wantText)
		}
		if r := res.Reply; r.InReplyTo != in.MessageID || r.RunKey != key || r.Subject != "Re: Order A-17" ||
			r.To[0] != "Ada <ada@example.com>" || r.Mailbox != mailbox {
			t.Errorf("reply headers = %+v", r)
		}
		if len(m.sent()) != rounds+1 {
			t.Errorf("%d model calls, want %d", len(m.sent()), rounds+1)
		}
		for turn := range rounds {
			for _, name := range []string{"lookup", "search", "act"} {
				if n := box.ran(name, callID(turn, name)); n != 1 {
					t.Errorf("%s of turn %d ran %d times", name, turn, n)
				}
			}
		}
		stored, err := st.Rounds(ctx, store.Owner{Type: store.OwnerMessage, ID: in.Seq}, key)
		if err != nil || len(stored) != rounds {
			t.Fatalf("Rounds = %d, %v", len(stored), err)
		}
		if stored[1].Text != "Round 1: checking." || string(stored[1].Calls[2].Input) != `{"q": "t1-act"}` ||
			stored[1].Results[2].Content != "done: t1-act" {
			t.Errorf("round 1 = %+v", stored[1])
		}
		want := chat.Usage{InputTokens: 1000 + 1100 + 1200 + 1300, OutputTokens: 20 + 21 + 22 + 23, CacheReadTokens: 2000}
		run, err := st.Run(ctx, key)
		if err != nil || run.Usage != want || run.StopReason != "end_turn" || res.Usage != want {
			t.Errorf("run usage %+v, stop %q, result usage %+v; want %+v", run.Usage, run.StopReason, res.Usage, want)
		}
		if len(res.Turns) != rounds+1 || res.Turns[0].Usage.InputTokens != 1000 || res.Turns[3].ResponseID != "resp-final" {
			t.Errorf("turns = %+v", res.Turns)
		}

		// Delivered again: the stored reply comes back, nothing runs.
		again, err := runner(st, m, "w2").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if err != nil || !again.AlreadyFinished || again.Reply == nil || again.Reply.Seq != res.Reply.Seq || again.Text != wantText {
			t.Errorf("second delivery = %+v, %v", again, err)
		}
		if len(m.sent()) != rounds+1 {
			t.Errorf("the second delivery called the model")
		}
		if !slices.EqualFunc(again.Messages, res.Messages, chat.Message.Equal) || len(res.Messages) != 4+rounds*4+1 {
			t.Errorf("the second delivery's conversation (%d messages) differs from the run's (%d)", len(again.Messages), len(res.Messages))
		}
		thread, err := st.Thread(ctx, threadID)
		if err != nil || len(thread) != 4 {
			t.Errorf("thread has %d messages, %v; want 4 (one reply)", len(thread), err)
		}
	})
}

func callID(turn int, name string) string {
	return "t" + string(rune('0'+turn)) + "-" + name
}

// Every request the runner sends passes Validate and carries the tool results as the store
// keeps them: the model gets what a resumed run would read back.
func TestRequestsCarryStoredResults(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		m := &model{}
		if _, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in}); err != nil {
			t.Fatal(err)
		}
		reqs := m.sent()
		var last struct {
			Messages []chat.Message `json:"messages"`
			Tools    []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(reqs[len(reqs)-1], &last); err != nil {
			t.Fatal(err)
		}
		// system, summary? (none), history: m1, r1, then the inbound turn, then 3 rounds of 1+3.
		if got, want := len(last.Messages), 1+2+1+rounds*4; got != want {
			t.Fatalf("last request has %d messages, want %d:\n%s", got, want, reqs[len(reqs)-1])
		}
		if len(last.Tools) != 3 || last.Tools[2].Name != "act" {
			t.Errorf("tools = %+v", last.Tools)
		}
	})
}

func TestToolFailuresBecomeResults(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		box := newToolbox()
		tools := box.tools()
		panicky := runtime.Tool(panicTool{})
		p := persona(st, append(tools, panicky))
		calls := []chat.ToolCall{
			{ID: "c1", Name: "nope", Input: json.RawMessage(`{}`)},
			chat.ToolCallFromArguments("c2", "lookup", `{"q": "cut`),
			{ID: "c3", Name: "lookup", Input: json.RawMessage(`{"q": 7}`)},
			{ID: "c4", Name: "boom", Input: json.RawMessage(`{}`)},
		}
		turn := 0
		m := chat.ModelFunc(func(ctx context.Context, req *chat.Request) (*chat.Response, error) {
			turn++
			if turn == 1 {
				return &chat.Response{Message: chat.AssistantMessage("", calls...), StopReason: chat.StopToolUse}, nil
			}
			var got []string
			for _, msg := range req.Messages[len(req.Messages)-4:] {
				if !msg.IsError {
					t.Errorf("result of %s is not an error: %q", msg.ToolCallID, msg.Text)
				}
				got = append(got, msg.Text)
			}
			return &chat.Response{Message: chat.AssistantMessage(strings.Join(got, "\n"))}, nil
		})
		res, err := runner(st, m, "w1").Reply(ctx, agent.Inbound{Persona: p, Message: in})
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Join([]string{
			`unknown tool "nope"; the tools are: act, boom, lookup, search`,
			`the arguments of this call of lookup are not a JSON object: {"q": "cut`,
			`invalid tool input for lookup: the arguments do not match the input schema: at /q: expected string, but got number`,
			`tool panicked: kaboom`,
		}, "\n")
		if res.Text != want {
			t.Errorf("results =\n%s\nwant\n%s", res.Text, want)
		}
		if len(box.runs) != 0 {
			t.Errorf("tools ran with invalid arguments: %v", box.runs)
		}
	})
}

type panicTool struct{}

func (panicTool) Name() string                 { return "boom" }
func (panicTool) Description() string          { return "Panics." }
func (panicTool) InputSchema() json.RawMessage { return json.RawMessage(`{"type":"object"}`) }
func (panicTool) Idempotent() bool             { return true }
func (panicTool) Call(context.Context, *runtime.Invocation, json.RawMessage) (string, error) {
	panic("kaboom")
}

func TestMaxTurnsAndNoAnswerFailTheRun(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		ctx := context.Background()
		st := d.open(t)
		in := seed(t, st)
		r := runner(st, &model{}, "w1")
		r.MaxTurns = 2
		res, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in})
		if !errors.Is(err, agent.ErrMaxTurns) || res == nil || res.Run.Status != store.RunFailed {
			t.Fatalf("Reply = %+v, %v; want ErrMaxTurns and a failed run", res, err)
		}
		run, _ := st.Run(ctx, res.Run.Key)
		if run.Status != store.RunFailed || !strings.Contains(run.Reason, "turn limit") || run.Usage.InputTokens != 2100 {
			t.Errorf("stored run = %+v", run)
		}
		// A failed run is not run again by a redelivery.
		if _, err := runner(st, &model{}, "w2").Reply(ctx, agent.Inbound{Persona: persona(st, nil), Message: in}); !errors.Is(err, store.ErrRunFinished) {
			t.Errorf("redelivery of a failed run: %v, want ErrRunFinished", err)
		}
		// An empty answer fails too, under another key.
		empty := chat.ModelFunc(func(context.Context, *chat.Request) (*chat.Response, error) {
			return &chat.Response{Message: chat.AssistantMessage(" "), StopReason: chat.StopMaxTokens}, nil
		})
		res, err = runner(st, empty, "w1").Reply(ctx, agent.Inbound{Persona: persona(st, nil), Message: in, Key: "second"})
		if !errors.Is(err, agent.ErrNoAnswer) || res.Run.Status != store.RunFailed {
			t.Errorf("empty answer: %+v, %v", res, err)
		}
	})
}
