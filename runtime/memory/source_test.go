package memory

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/historytest"
)

// Source passes the history-source conformance suite; its write methods are the suite's
// Writer as they are.
func TestConformance(t *testing.T) {
	s := New()
	historytest.Run(t, s, s)
}

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func msg(thread, id string, minute int) history.Message {
	return history.Message{ThreadID: thread, MessageID: id, Direction: history.Inbound, Text: id,
		Date: t0.Add(time.Duration(minute) * time.Minute)}
}

func TestAppendMessageRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	s := New()
	if _, err := s.AppendMessage(ctx, msg("t", "a", 0)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		m    history.Message
		want error
	}{
		{"empty thread", msg("", "b", 0), ErrInvalid},
		{"empty message id", msg("t", "", 0), ErrInvalid},
		{"duplicate id in another thread", msg("u", "a", 0), ErrDuplicateMessage},
	}
	for _, c := range cases {
		if _, err := s.AppendMessage(ctx, c.m); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	if err := s.RecordToolUses(ctx, 99, history.ToolUse{}); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("RecordToolUses on an unknown message: %v", err)
	}
	for _, c := range []history.Compaction{{ThreadID: "", BoundarySeq: 1}, {ThreadID: "t", BoundarySeq: 0}} {
		if err := s.SetCompaction(ctx, c); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetCompaction(%+v): %v, want ErrInvalid", c, err)
		}
	}
}

func TestHistoryCopiesAndNormalises(t *testing.T) {
	ctx := context.Background()
	s := New()
	m := msg("t", "a", 0)
	m.Date = time.Date(2026, 5, 1, 14, 0, 0, 123456789, time.FixedZone("CEST", 7200))
	m.To = []string{"x@example.com"}
	m.Attachments = []history.Attachment{{ID: "1", Filename: "f"}}
	m.ToolUses = []history.ToolUse{{RunID: "r", ToolCallID: "c", HasResult: true}}
	m.Attachments[0].Data = []byte("bytes")
	seq, err := s.AppendMessage(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	m.To[0] = "changed by the caller"
	m.Attachments[0].ID = "changed by the caller"
	w, err := s.History(ctx, history.Query{ThreadID: "t", ToolUses: true})
	if err != nil {
		t.Fatal(err)
	}
	got := w.Messages[0]
	if got.Seq != seq || got.ToolUses[0].Seq != seq+1 {
		t.Errorf("seqs: message %d, tool use %d; want %d, %d", got.Seq, got.ToolUses[0].Seq, seq, seq+1)
	}
	if want := time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC); !got.Date.Equal(want) || got.Date.Location() != time.UTC {
		t.Errorf("SentAt = %v, want %v in UTC", got.Date, want)
	}
	if got.To[0] != "x@example.com" || got.Attachments[0].ID != "1" || got.Attachments[0].Data != nil {
		t.Errorf("stored message shares caller memory or keeps attachment Data: %+v", got)
	}
	got.To[0] = "changed by the reader"
	w2, _ := s.History(ctx, history.Query{ThreadID: "t"})
	if w2.Messages[0].To[0] != "x@example.com" || w2.Messages[0].ToolUses != nil {
		t.Errorf("second read: %+v (want the original address and no tool uses without ToolUses)", w2.Messages[0])
	}
}
