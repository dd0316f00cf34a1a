package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// sampleTurn is a turn of run with two calls whose arguments and state carry bytes a re-encoding
// would change (spaces, "<", an escaped slash).
func sampleTurn(run Run, turn int) Turn {
	return Turn{RunID: run.ID, TurnIndex: turn, Text: "Let me check <both> " + fourByte,
		ToolCalls: []chat.ToolCall{
			{ID: "c1", Name: "lookup_order", Input: json.RawMessage(`{ "number" : "INV-1" }`)},
			{ID: "c2", Name: "escalate_ticket", Input: json.RawMessage(`{"summary":"a\/b <x>","reason":"refund"}`)},
		},
		State:      []chat.ProviderState{{Provider: "anthropic", Data: json.RawMessage(`{"type":"thinking", "signature":"s<1>"}`)}},
		StopReason: "tool_use", Model: "claude-x", RequestID: "req-1", ResponseID: "msg-1",
		Usage: chat.Usage{InputTokens: 1200, OutputTokens: 80, CacheReadTokens: 1000, CacheWriteTokens: 3}}
}

func TestTurnsAreRecordedFencedAndReadBackExactly(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t1", "m1", baseTime))
		run := startReply(t, s, "p", "t1", seq)
		t0, t1 := sampleTurn(run, 0), sampleTurn(run, 1)
		t1.ToolCalls, t1.State, t1.Text, t1.StopReason = nil, nil, "Done.", "end_turn"
		for _, turn := range []Turn{t0, t1} {
			if out, err := s.StartTurn(ctx, "w1", turn); err != nil || out != Stored {
				t.Fatalf("StartTurn(%d) = %v, %v", turn.TurnIndex, out, err)
			}
		}
		if out, err := s.StartTurn(ctx, "w1", t0); err != nil || out != AlreadyStored {
			t.Errorf("StartTurn again = %v, %v; want AlreadyStored", out, err)
		}
		other := t0
		other.Text = "another answer"
		if _, err := s.StartTurn(ctx, "w1", other); !errors.Is(err, ErrConflict) {
			t.Errorf("StartTurn with another answer: %v, want ErrConflict", err)
		}
		if _, err := s.StartTurn(ctx, "w2", sampleTurn(run, 2)); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("StartTurn by another holder: %v, want ErrLeaseLost", err)
		}

		o := CallOutcome{Position: 1, ToolCallID: "c2", ToolName: "escalate_ticket",
			Result: Result{Content: `{"ticket":"BIL-1"}`, Succeeded: true}}
		if out, err := s.SettleCall(ctx, "w1", run.ID, 0, o); err != nil || out != Stored {
			t.Fatalf("SettleCall = %v, %v", out, err)
		}
		if out, err := s.SettleCall(ctx, "w1", run.ID, 0, o); err != nil || out != AlreadyStored {
			t.Errorf("SettleCall again = %v, %v; want AlreadyStored", out, err)
		}
		failed := o
		failed.Result.Succeeded = false
		if _, err := s.SettleCall(ctx, "w1", run.ID, 0, failed); !errors.Is(err, ErrConflict) {
			t.Errorf("SettleCall with another outcome: %v, want ErrConflict", err)
		}
		if _, err := s.SettleCall(ctx, "w1", run.ID, 7, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("SettleCall of an unrecorded turn: %v, want ErrInvalid", err)
		}
		if _, err := s.SettleCall(ctx, "w2", run.ID, 0, CallOutcome{Position: 0, ToolCallID: "c1", ToolName: "lookup_order"}); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("SettleCall by another holder: %v, want ErrLeaseLost", err)
		}

		got, err := s.Turns(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		t0.Outcomes = []CallOutcome{o}
		if want := []Turn{t0, t1}; !reflect.DeepEqual(got, want) {
			t.Fatalf("Turns =\n%+v\nwant\n%+v", got, want)
		}
		// Bytes, not just JSON values, come back: a resumed run sends what the model produced.
		if string(got[0].ToolCalls[0].Input) != `{ "number" : "INV-1" }` || string(got[0].State[0].Data) != `{"type":"thinking", "signature":"s<1>"}` {
			t.Errorf("stored bytes changed: %s / %s", got[0].ToolCalls[0].Input, got[0].State[0].Data)
		}

		if _, err := s.FinishRun(ctx, run.Key, "w1", Finish{Status: RunSucceeded}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.StartTurn(ctx, "w1", sampleTurn(run, 3)); !errors.Is(err, ErrRunFinished) {
			t.Errorf("StartTurn after finishing: %v, want ErrRunFinished", err)
		}
		// The ledger goes with its run.
		if err := s.DeleteThread(ctx, "t1"); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Turns(ctx, run.ID); err != nil || len(got) != 0 {
			t.Errorf("Turns after DeleteThread = %v, %v", got, err)
		}
	})
}

func TestSettleCallStoresTheResultAsARoundWould(t *testing.T) {
	redact := func(tool string, kind PayloadKind, p string) string {
		return strings.ReplaceAll(p, "sk-secret", "[redacted]")
	}
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run := startScheduled(t, s, "p", "digest")
		if _, err := s.StartTurn(ctx, "w1", sampleTurn(run, 0)); err != nil {
			t.Fatal(err)
		}
		long := "key sk-secret " + strings.Repeat("x", 20000)
		if _, err := s.SettleCall(ctx, "w1", run.ID, 0, CallOutcome{Position: 0, ToolCallID: "c1", ToolName: "lookup_order",
			Result: Result{Content: long, Succeeded: true}}); err != nil {
			t.Fatal(err)
		}
		turns, err := s.Turns(ctx, run.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := turns[0].Outcomes[0].Result.Content, s.StoredPayload("lookup_order", PayloadResult, long); got != want ||
			!strings.HasPrefix(got, "key [redacted] ") || len([]rune(got)) != StoredPayloadLimit {
			t.Errorf("stored outcome = %.40q… (%d characters)", got, len([]rune(got)))
		}
	}, WithRedact(redact))
}

func TestStartTurnRefusesBadTurns(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		run := startScheduled(t, s, "p", "digest")
		bad := func(f func(*Turn)) Turn { tt := sampleTurn(run, 0); f(&tt); return tt }
		for name, turn := range map[string]Turn{
			"negative turn":  bad(func(t *Turn) { t.TurnIndex = -1 }),
			"no tool name":   bad(func(t *Turn) { t.ToolCalls[0].Name = "" }),
			"long text":      bad(func(t *Turn) { t.Text = strings.Repeat("a", MaxRoundTextBytes+1) }),
			"bad state":      bad(func(t *Turn) { t.State[0].Data = json.RawMessage("{") }),
			"negative usage": bad(func(t *Turn) { t.Usage.OutputTokens = -1 }),
			"long stop":      bad(func(t *Turn) { t.StopReason = strings.Repeat("s", MaxNameChars+1) }),
			"huge arguments": bad(func(t *Turn) {
				t.ToolCalls[0].Input = json.RawMessage(`"` + strings.Repeat("a", MaxTurnCallBytes) + `"`)
			}),
		} {
			if _, err := s.StartTurn(ctx, "w1", turn); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}
		if got, err := s.Turns(ctx, run.ID); err != nil || len(got) != 0 {
			t.Errorf("a refused turn was written: %v, %v", got, err)
		}
	})
}

func TestViewAndCompactionAt(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		if v, err := s.View(ctx, "none"); err != nil || v.UpToSeq != 0 || v.Compaction != nil {
			t.Errorf("View(unknown) = %+v, %v", v, err)
		}
		var seqs []int64
		for i, id := range []string{"m1", "m2", "m3", "m4"} {
			seqs = append(seqs, mustAppend(t, s, msg("t1", id, baseTime.Add(time.Duration(i)*time.Minute))))
		}
		if v, err := s.View(ctx, "t1"); err != nil || v.UpToSeq != seqs[3] || v.Compaction != nil {
			t.Errorf("View(uncompacted) = %+v, %v", v, err)
		}
		sum := func(text string) history.Summarizer {
			return summarizerFunc(func(context.Context, history.SummaryInput) (string, error) { return text, nil })
		}
		for i, b := range seqs[:2] {
			if _, err := s.Compact(ctx, "t1", b, sum("summary "+string(rune('A'+i)))); err != nil {
				t.Fatal(err)
			}
		}
		v, err := s.View(ctx, "t1")
		if err != nil || v.UpToSeq != seqs[3] || v.Compaction == nil || v.Compaction.BoundarySeq != seqs[1] || v.Compaction.Summary != "summary B" {
			t.Errorf("View(compacted) = %+v (%+v), %v", v, v.Compaction, err)
		}
		c, err := s.CompactionAt(ctx, "t1", seqs[0])
		if err != nil || c.Summary != "summary A" || c.BoundaryMessageID != "m1" {
			t.Errorf("CompactionAt(first) = %+v, %v", c, err)
		}
		if _, err := s.CompactionAt(ctx, "t1", seqs[2]); !errors.Is(err, ErrCompactionNotFound) {
			t.Errorf("CompactionAt(no compaction) = %v, want ErrCompactionNotFound", err)
		}
	})
}

// summarizerFunc adapts a func to history.Summarizer.
type summarizerFunc func(context.Context, history.SummaryInput) (string, error)

func (f summarizerFunc) Summarize(ctx context.Context, in history.SummaryInput) (string, error) {
	return f(ctx, in)
}

func TestRunKeepsItsViewAndReplyOfFindsTheReply(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, msg("t1", "m1", baseTime))
		newest := mustAppend(t, s, msg("t1", "m2", baseTime))
		nr := NewRun{Key: "r1", Kind: RunReply, Persona: "p", ThreadID: "t1", MessageSeq: seq, ViewSeq: newest, Holder: "w1"}
		run, _, err := s.StartRun(ctx, nr)
		if err != nil {
			t.Fatal(err)
		}
		if stored, err := s.Run(ctx, "r1"); err != nil || stored.ViewSeq != newest || run.ViewSeq != newest {
			t.Errorf("ViewSeq = %d (stored %d), %v; want %d", run.ViewSeq, stored.ViewSeq, err, newest)
		}
		bad := nr
		bad.Key, bad.MessageSeq, bad.ViewSeq = "r2", newest, seq
		if _, _, err := s.StartRun(ctx, bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("a view before the message: %v, want ErrInvalid", err)
		}
		if _, err := s.ReplyOf(ctx, "r1"); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("ReplyOf before the reply: %v", err)
		}
		reply := msg("t1", "reply-1", baseTime)
		reply.Direction, reply.RunKey = history.Outbound, "r1"
		rseq := mustAppend(t, s, reply)
		got, err := s.ReplyOf(ctx, "r1")
		if err != nil || got.Seq != rseq || got.MessageID != "reply-1" || got.RunKey != "r1" || got.ThreadID != "t1" {
			t.Errorf("ReplyOf = %+v, %v", got, err)
		}
	})
}
