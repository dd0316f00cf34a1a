package runtime_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
)

// benchSource holds a 1,000-message thread with 2,000 tool uses (500 inbound messages, each
// with two rounds of two parallel calls), as the store benchmark BenchmarkReplay does.
func benchSource(b *testing.B) *memory.Source {
	b.Helper()
	s := memory.New()
	body := strings.Repeat("Some words of a realistic email body. ", 20)
	result := `{"items":[` + strings.Repeat(`{"title":"a result","url":"https://example.com/x"},`, 30) + `{}]}`
	for i := range 1000 {
		id := "m" + strconv.Itoa(i)
		m := history.Message{MessageID: id, Direction: history.Inbound, From: "ada@example.com",
			To: []string{"support@acme.test"}, Subject: "Subject " + strconv.Itoa(i), Date: t0.Add(time.Duration(i) * time.Second), Text: body}
		if i%2 == 1 {
			m.Direction = history.Outbound
		}
		m.ThreadID = thread
		seq, err := s.AppendMessage(context.Background(), m)
		if err != nil {
			b.Fatal(err)
		}
		if i%2 == 1 {
			continue
		}
		for turn := range 2 {
			for pos := range 2 {
				if err := s.RecordToolUses(context.Background(), seq, use("run-"+id, turn, pos, "call-"+strconv.Itoa(turn)+strconv.Itoa(pos), "search",
					`{"q":"query `+id+`"}`, result)); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return s
}

// BenchmarkThreadHistoryMemory measures the replay's own cost (no database): ThreadSummary +
// ThreadHistory with NoLimit over an in-memory 1,000-message thread with 2,000 tool uses.
func BenchmarkThreadHistoryMemory(b *testing.B) {
	s := benchSource(b)
	chain := runtime.NewChain(
		runtime.Step{Resolver: &runtime.ThreadSummary{Source: s}},
		runtime.Step{Resolver: &runtime.ThreadHistory{Source: s, Limit: runtime.NoLimit}},
	)
	var buf []chat.Message
	b.ReportAllocs()
	for b.Loop() {
		out, err := chain.Resolve(context.Background(), current(), buf[:0])
		if err != nil {
			b.Fatal(err)
		}
		buf = out
	}
}
