package memory

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func msg(id string, minute int) runtime.StoredMessage {
	return runtime.StoredMessage{MessageID: id, Direction: runtime.DirectionInbound, Text: id,
		SentAt: t0.Add(time.Duration(minute) * time.Minute)}
}

func ids(h *runtime.History) []string {
	var out []string
	for _, m := range h.Messages {
		out = append(out, m.MessageID)
	}
	return out
}

func TestAddMessageRejectsBadInput(t *testing.T) {
	s := New()
	if _, err := s.AddMessage("t", msg("a", 0)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		thread string
		m      runtime.StoredMessage
		want   error
	}{
		{"empty thread", "", msg("b", 0), ErrInvalid},
		{"empty message id", "t", msg("", 0), ErrInvalid},
		{"duplicate id in another thread", "u", msg("a", 0), ErrDuplicateMessage},
	}
	for _, c := range cases {
		if _, err := s.AddMessage(c.thread, c.m); !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.want)
		}
	}
	if err := s.AddToolUses("missing", runtime.ToolUse{}); !errors.Is(err, ErrUnknownMessage) {
		t.Errorf("AddToolUses on an unknown message: %v", err)
	}
	for _, c := range []runtime.Compaction{{ThreadID: "", BoundarySeq: 1}, {ThreadID: "t", BoundarySeq: 0}} {
		if err := s.SetCompaction(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("SetCompaction(%+v): %v, want ErrInvalid", c, err)
		}
	}
}

func TestHistorySelectsOrdersAndCounts(t *testing.T) {
	s := New()
	// Added out of sent order ("c" dated after "b" but stored before it); "c" and "d" share a
	// sent time. The order of record is the order.
	for _, m := range []runtime.StoredMessage{msg("a", 0), msg("c", 5), msg("b", 1), msg("d", 5), msg("e", 9)} {
		if _, err := s.AddMessage("t", m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AddMessage("other", msg("z", 3)); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		q       runtime.HistoryQuery
		want    []string
		omitted int
	}{
		{"whole thread in order of record", runtime.HistoryQuery{}, []string{"a", "c", "b", "d", "e"}, 0},
		{"excluded message", runtime.HistoryQuery{ExcludeMessageID: "c"}, []string{"a", "b", "d", "e"}, 0},
		{"limit keeps the most recent", runtime.HistoryQuery{Limit: 2}, []string{"d", "e"}, 3},
		{"after a seq", runtime.HistoryQuery{AfterSeq: 2}, []string{"b", "d", "e"}, 0},
		{"up to a seq", runtime.HistoryQuery{UpToSeq: 3}, []string{"a", "c", "b"}, 0},
		{"after, exclude and limit", runtime.HistoryQuery{AfterSeq: 1, ExcludeMessageID: "e", Limit: 2}, []string{"b", "d"}, 1},
	}
	for _, c := range cases {
		c.q.ThreadID = "t"
		h, err := s.History(context.Background(), c.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(h); !slices.Equal(got, c.want) || h.Omitted != c.omitted {
			t.Errorf("%s: %v omitted %d, want %v omitted %d", c.name, got, h.Omitted, c.want, c.omitted)
		}
	}
	h, _ := s.History(context.Background(), runtime.HistoryQuery{ThreadID: "unknown", Limit: 3})
	if len(h.Messages) != 0 || h.Omitted != 0 {
		t.Errorf("unknown thread: %+v", h)
	}
}

func TestHistoryReturnsCopiesAndNormalisedValues(t *testing.T) {
	s := New()
	m := msg("a", 0)
	m.SentAt = time.Date(2026, 5, 1, 14, 0, 0, 123456789, time.FixedZone("CEST", 7200))
	m.To = []string{"x@example.com"}
	m.Attachments = []runtime.Attachment{{ID: "1", Filename: "f", Data: []byte("bytes")}}
	m.ToolUses = []runtime.ToolUse{{RunID: "r", ToolCallID: "c", HasResult: true}}
	seq, err := s.AddMessage("t", m)
	if err != nil {
		t.Fatal(err)
	}
	m.To[0] = "changed by the caller"
	h, _ := s.History(context.Background(), runtime.HistoryQuery{ThreadID: "t", ToolUses: true})
	got := h.Messages[0]
	if got.Seq != seq || got.ToolUses[0].Seq != seq+1 {
		t.Errorf("seqs: message %d, tool use %d; want %d, %d", got.Seq, got.ToolUses[0].Seq, seq, seq+1)
	}
	if want := time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC); !got.SentAt.Equal(want) || got.SentAt.Location() != time.UTC {
		t.Errorf("SentAt = %v, want %v in UTC", got.SentAt, want)
	}
	if got.To[0] != "x@example.com" || got.Attachments[0].Data != nil {
		t.Errorf("stored message shares caller memory or keeps Data: %+v", got)
	}
	got.To[0] = "changed by the reader"
	h2, _ := s.History(context.Background(), runtime.HistoryQuery{ThreadID: "t"})
	if h2.Messages[0].To[0] != "x@example.com" || h2.Messages[0].ToolUses != nil {
		t.Errorf("second read: %+v (want the original address and no tool uses without ToolUses)", h2.Messages[0])
	}
}

func TestLatestCompactionIsTheGreatestBoundary(t *testing.T) {
	s := New()
	ctx := context.Background()
	if c, err := s.LatestCompaction(ctx, "t"); c != nil || err != nil {
		t.Fatalf("empty: %v, %v", c, err)
	}
	for _, c := range []runtime.Compaction{{ThreadID: "t", BoundarySeq: 5, Summary: "five"},
		{ThreadID: "t", BoundarySeq: 9, Summary: "nine"}, {ThreadID: "t", BoundarySeq: 7, Summary: "seven"},
		{ThreadID: "t", BoundarySeq: 9, Summary: "nine again"}} {
		if err := s.SetCompaction(c); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.LatestCompaction(ctx, "t")
	if err != nil || c.BoundarySeq != 9 || c.Summary != "nine again" {
		t.Fatalf("LatestCompaction = %+v, %v", c, err)
	}
}
