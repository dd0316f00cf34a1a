package historytest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

// use is a recorded call with a successful result.
func use(run string, turn, pos int, callID, args, result string) history.ToolUse {
	return history.ToolUse{RunID: run, TurnIndex: turn, Position: pos, ToolCallID: callID, ToolName: "search",
		Arguments: args, Result: result, HasResult: true, Succeeded: true}
}

// cases are the rules, in the order Run checks them; each name is its subtest's name.
var cases = []struct {
	name string
	run  func(f *fixture)
}{
	{"fields_round_trip", fieldsRoundTrip},
	{"threading_headers_round_trip", threadingHeadersRoundTrip},
	{"order_of_record_not_date", orderOfRecordNotDate},
	{"equal_dates_keep_order_of_record", equalDatesKeepOrderOfRecord},
	{"limit_keeps_the_most_recent", limitKeepsTheMostRecent},
	{"limit_zero_is_the_default", limitZeroIsTheDefault},
	{"exclude_message", excludeMessage},
	{"after_and_up_to_seq", afterAndUpToSeq},
	{"inbound_up_to_seq_lets_later_replies_through", inboundUpToSeqLetsLaterRepliesThrough},
	{"threads_never_mix", threadsNeverMix},
	{"unknown_thread_is_empty", unknownThreadIsEmpty},
	{"tool_uses_only_when_asked", toolUsesOnlyWhenAsked},
	{"tool_uses_keep_recording_order", toolUsesKeepRecordingOrder},
	{"tool_use_without_result", toolUseWithoutResult},
	{"no_compaction", noCompaction},
	{"latest_compaction_wins", latestCompactionWins},
	{"windows_around_a_boundary", windowsAroundABoundary},
	{"bad_queries_are_refused", badQueriesAreRefused},
	{"reads_are_deterministic", readsAreDeterministic},
	{"caller_owns_the_window", callerOwnsTheWindow},
}

// Every field of a message and of its tool uses comes back as written; Date in UTC.
func fieldsRoundTrip(f *fixture) {
	zone := time.FixedZone("CET", 3600)
	written := []history.Message{
		{MessageID: "in", Direction: history.Inbound, From: "Ada Lovelace <ada@example.com>",
			To: []string{"support@acme.test", "Billing <billing@acme.test>"}, Cc: []string{"bob@example.com"},
			Date: time.Date(2026, 3, 2, 10, 0, 0, 123456000, zone), Subject: "Invoice 42 — 𠀋",
			Text: "Hello,\nmy invoice is wrong. 😀", HTML: "<p>Hello,<br>my invoice is <b>wrong</b>.</p>",
			Attachments: []history.Attachment{
				{ID: "att-1", Filename: "scan.pdf", ContentType: "application/pdf", Size: 48213, Data: []byte("%PDF-1.7")},
				{ID: "att-2", Filename: "photo.png", ContentType: "image/png", Size: 0},
			}},
		{MessageID: "out", Direction: history.Outbound, From: "support@acme.test", To: []string{"ada@example.com"},
			Date: time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC), Subject: "Re: Invoice 42", Text: "Which invoice?"},
		{MessageID: "html-only", Direction: history.Inbound, From: "ada@example.com",
			Date: time.Date(2026, 3, 2, 11, 0, 0, 0, time.UTC), Text: " ", HTML: "<p>Only HTML.</p>"},
	}
	uses := []history.ToolUse{
		use("run-1", 0, 0, "call-a", `{"q":"invoice 42"}`, `{"hits":1}`),
		{RunID: "run-1", TurnIndex: 0, Position: 1, ToolCallID: "call-b", ToolName: "fetch",
			Arguments: `{"url":"https://acme.test/i/42"}`, Result: "timeout after 30 s", HasResult: true, Succeeded: false},
		use("run-1", 1, 0, "call-c", `{}`, ``),
	}
	for _, m := range written {
		f.add("", m)
	}
	f.record("in", uses...)
	w := f.read(history.Query{Limit: history.NoLimit, ToolUses: true})
	if len(w.Messages) != len(written) {
		f.t.Fatalf("History returned %d messages, want %d", len(w.Messages), len(written))
	}
	for i, want := range written {
		want.Seq = f.seq(want.MessageID)
		want.ThreadID = f.thread()
		want.MessageID = f.id(want.MessageID)
		got := w.Messages[i]
		for _, d := range diffMessage(got, want) {
			f.t.Errorf("message %s: %s", want.MessageID, d)
		}
		var wantUses []history.ToolUse
		if i == 0 {
			wantUses = uses
		}
		for _, d := range diffToolUses(got.ToolUses, wantUses) {
			f.t.Errorf("message %s: %s", want.MessageID, d)
		}
	}
}

// InReplyTo and References come back as written.
func threadingHeadersRoundTrip(f *fixture) {
	msgs := []history.Message{
		{MessageID: "first", Direction: history.Inbound, From: "ada@example.com", Date: t0, Text: "first"},
		{MessageID: "reply", InReplyTo: f.id("first"), References: []string{"<older@example.com>", f.id("first")},
			Direction: history.Outbound, From: "support@acme.test", Date: t0.Add(time.Minute), Text: "reply"},
	}
	for i := range msgs {
		m := &msgs[i]
		short := m.MessageID
		m.ThreadID, m.MessageID = f.thread(), f.id(short)
		seq, err := f.w.AppendMessage(f.ctx, *m)
		if errUnsupported(err) {
			f.t.Skipf("the source stores no threading headers (%v)", err)
		}
		if err != nil {
			f.t.Fatalf("writer: append message %s: %v", m.MessageID, err)
		}
		m.Seq = seq
	}
	w := f.read(history.Query{})
	if len(w.Messages) != len(msgs) {
		f.t.Fatalf("History returned %d messages, want %d", len(w.Messages), len(msgs))
	}
	for i, want := range msgs {
		for _, d := range diffMessage(w.Messages[i], want) {
			f.t.Errorf("message %s: %s", want.MessageID, d)
		}
	}
}

// Messages come in the order the source received them, never by their Date headers: the
// customer's clock runs three hours fast, so the reply is dated before the question it
// answers, and still follows it, with the question's round.
func orderOfRecordNotDate(f *fixture) {
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	f.add("", history.Message{MessageID: "q1", Date: day.Add(12 * time.Hour)})
	f.record("q1", use("r1", 0, 0, "c1", `{"order":7}`, `"shipped"`))
	f.add("", history.Message{MessageID: "reply", Direction: history.Outbound, From: "support@acme.test",
		Date: day.Add(9*time.Hour + 5*time.Minute)})
	f.add("", history.Message{MessageID: "q2", Date: day.Add(12*time.Hour + 30*time.Minute)})
	w := f.expect(history.Query{ToolUses: true}, 0, "q1", "reply", "q2")
	if q1 := f.message(w, "q1"); q1 != nil && len(q1.ToolUses) != 1 {
		f.t.Errorf("q1 carries %d tool uses, want its round's 1", len(q1.ToolUses))
	}
	f.expect(history.Query{Limit: 2}, 1, "reply", "q2")
	if f.seq("q1") >= f.seq("reply") || f.seq("reply") >= f.seq("q2") {
		f.t.Errorf("seqs %d, %d, %d do not increase in the order of record", f.seq("q1"), f.seq("reply"), f.seq("q2"))
	}
}

// Equal Date headers cannot tie: the order of record decides, not the message id.
func equalDatesKeepOrderOfRecord(f *fixture) {
	for _, id := range []string{"c", "a", "b"} {
		f.add("", history.Message{MessageID: id, Date: t0})
	}
	f.expect(history.Query{}, 0, "c", "a", "b")
	f.expect(history.Query{Limit: 2}, 1, "a", "b")
}

// Limit keeps the most recent messages, oldest first, and Omitted counts the rest.
func limitKeepsTheMostRecent(f *fixture) {
	f.in("m1", "m2", "m3", "m4", "m5")
	f.expect(history.Query{Limit: 1}, 4, "m5")
	f.expect(history.Query{Limit: 2}, 3, "m4", "m5")
	f.expect(history.Query{Limit: 5}, 0, "m1", "m2", "m3", "m4", "m5")
	f.expect(history.Query{Limit: 9}, 0, "m1", "m2", "m3", "m4", "m5")
	f.expect(history.Query{Limit: history.NoLimit}, 0, "m1", "m2", "m3", "m4", "m5")
}

// Limit 0 means history.DefaultLimit; history.NoLimit means every message.
func limitZeroIsTheDefault(f *fixture) {
	n := history.DefaultLimit + 3
	var all []string
	for i := range n {
		all = append(all, "m"+strconv.Itoa(i+1))
	}
	f.in(all...)
	f.expect(history.Query{}, 3, all[3:]...)
	f.expect(history.Query{Limit: history.NoLimit}, 0, all...)
}

// ExcludeMessageID is left out wherever it lies, and never counted as omitted.
func excludeMessage(f *fixture) {
	f.in("m1", "m2", "m3", "m4")
	f.expect(history.Query{ExcludeMessageID: f.id("m2")}, 0, "m1", "m3", "m4")
	f.expect(history.Query{ExcludeMessageID: f.id("m4"), Limit: 2}, 1, "m2", "m3")
	f.expect(history.Query{ExcludeMessageID: f.id("m1"), Limit: 2}, 1, "m3", "m4")
	f.expect(history.Query{ExcludeMessageID: f.id("not-stored")}, 0, "m1", "m2", "m3", "m4")
}

// AfterSeq and UpToSeq cut the selection before the limit; Omitted counts only selected
// messages.
func afterAndUpToSeq(f *fixture) {
	f.in("m1", "m2", "m3", "m4", "m5")
	s := f.seq
	f.expect(history.Query{AfterSeq: s("m2")}, 0, "m3", "m4", "m5")
	f.expect(history.Query{UpToSeq: s("m3")}, 0, "m1", "m2", "m3")
	f.expect(history.Query{AfterSeq: s("m1"), UpToSeq: s("m4")}, 0, "m2", "m3", "m4")
	f.expect(history.Query{AfterSeq: s("m1"), UpToSeq: s("m4"), Limit: 2}, 1, "m3", "m4")
	f.expect(history.Query{AfterSeq: s("m1"), ExcludeMessageID: f.id("m5"), Limit: 2}, 1, "m3", "m4")
	f.expect(history.Query{AfterSeq: s("m5")}, 0)
	f.expect(history.Query{AfterSeq: s("m3"), UpToSeq: s("m2")}, 0)
}

// InboundUpToSeq bounds inbound messages only: a reply run answering q2 sees q1 and the reply
// to q1 stored after q2 arrived, but not q3, which arrived later still, nor messages beyond
// UpToSeq.
func inboundUpToSeqLetsLaterRepliesThrough(f *fixture) {
	f.in("q1", "q2", "q3")
	f.add("", history.Message{MessageID: "r1", Direction: history.Outbound})
	f.add("", history.Message{MessageID: "r2", Direction: history.Outbound})
	s := f.seq
	f.expect(history.Query{ExcludeMessageID: f.id("q2"), UpToSeq: s("r1"), InboundUpToSeq: s("q2")}, 0, "q1", "r1")
	f.expect(history.Query{InboundUpToSeq: s("q1")}, 0, "q1", "r1", "r2")
	f.expect(history.Query{UpToSeq: s("r1"), InboundUpToSeq: s("q2"), Limit: 2}, 1, "q2", "r1")
	f.expect(history.Query{ExcludeMessageID: f.id("q2"), UpToSeq: s("r1"), InboundUpToSeq: s("q2"), Limit: 1}, 1, "r1")
	f.expect(history.Query{AfterSeq: s("q1"), InboundUpToSeq: s("q2"), ToolUses: true}, 0, "q2", "r1", "r2")
}

// A thread's window holds its own messages and tool uses only, however appends interleave.
func threadsNeverMix(f *fixture) {
	other := f.thread("other")
	f.add("", history.Message{MessageID: "a1"})
	f.add(other, history.Message{MessageID: "b1", Date: t0})
	f.add("", history.Message{MessageID: "a2"})
	f.record("b1", use("rb", 0, 0, "cb", `{}`, `"b"`))
	f.add(other, history.Message{MessageID: "b2"})
	w := f.expect(history.Query{ToolUses: true}, 0, "a1", "a2")
	for _, m := range w.Messages {
		if len(m.ToolUses) != 0 {
			f.t.Errorf("%s carries another thread's tool uses: %+v", m.MessageID, m.ToolUses)
		}
	}
	f.expect(history.Query{ThreadID: other, Limit: 1}, 1, "b2")
	f.expect(history.Query{ThreadID: other, ToolUses: true}, 0, "b1", "b2")
}

// An unknown thread gives an empty Window and no error.
func unknownThreadIsEmpty(f *fixture) {
	f.expect(history.Query{ThreadID: f.thread("never-written"), Limit: 5, ToolUses: true}, 0)
	f.expect(history.Query{ThreadID: f.thread("never-written"), AfterSeq: 3, Limit: history.NoLimit}, 0)
}

// Tool uses come only when the Query asks for them.
func toolUsesOnlyWhenAsked(f *fixture) {
	f.in("m1", "m2")
	f.record("m1", use("r", 0, 0, "c", `{}`, `"x"`))
	for _, m := range f.read(history.Query{}).Messages {
		if len(m.ToolUses) != 0 {
			f.t.Errorf("%s carries %d tool uses without Query.ToolUses", m.MessageID, len(m.ToolUses))
		}
	}
	w := f.read(history.Query{ToolUses: true})
	if m := f.message(w, "m1"); m == nil || len(m.ToolUses) != 1 {
		f.t.Errorf("with Query.ToolUses, m1 should carry its 1 tool use: %+v", w.Messages)
	}
}

// A message's tool uses are all there, with Seqs increasing in the order they were recorded
// (run ids in text order are the reverse), whatever order the Window lists them in.
func toolUsesKeepRecordingOrder(f *fixture) {
	f.in("m1", "m2", "m3")
	first := []history.ToolUse{
		use("run-b", 0, 0, "b0", `{"q":"b0"}`, `"b0"`),
		use("run-b", 0, 1, "b1", `{"q":"b1"}`, `"b1"`),
	}
	second := []history.ToolUse{use("run-a", 0, 0, "same", `{"q":"a0"}`, `"a0"`)}
	third := []history.ToolUse{use("run-a", 1, 0, "same", `{"q":"a1"}`, `"a1"`)}
	f.record("m3", use("run-c", 0, 0, "c0", `{}`, `"c0"`))
	f.record("m1", first...)
	f.record("m1", second...)
	f.record("m1", third...)
	w := f.read(history.Query{ToolUses: true})
	want := append(append(append([]history.ToolUse(nil), first...), second...), third...)
	m1, m2, m3 := f.message(w, "m1"), f.message(w, "m2"), f.message(w, "m3")
	if m1 == nil || m2 == nil || m3 == nil {
		f.t.Fatalf("window %+v lacks m1, m2 or m3", w.Messages)
	}
	for _, d := range diffToolUses(m1.ToolUses, want) {
		f.t.Errorf("m1: %s", d)
	}
	if len(m2.ToolUses) != 0 {
		f.t.Errorf("m2 has no recorded tool uses, got %+v", m2.ToolUses)
	}
	if len(m3.ToolUses) != 1 || len(m1.ToolUses) == 0 || m3.ToolUses[0].Seq >= bySeq(m1.ToolUses)[0].Seq {
		f.t.Errorf("m3's use was recorded before m1's: its Seq must be smaller (m1 %+v, m3 %+v)", m1.ToolUses, m3.ToolUses)
	}
}

// A call whose result was never recorded comes back with HasResult false.
func toolUseWithoutResult(f *fixture) {
	f.in("m1")
	missing := history.ToolUse{RunID: "r", TurnIndex: 0, Position: 0, ToolCallID: "c", ToolName: "fetch", Arguments: `{}`}
	if err := f.record("m1", missing); err != nil {
		f.t.Skipf("the source stores no tool use without a result (%v)", err)
	}
	w := f.read(history.Query{ToolUses: true})
	if m := f.message(w, "m1"); m == nil {
		f.t.Fatalf("window lacks m1")
	} else {
		for _, d := range diffToolUses(m.ToolUses, []history.ToolUse{missing}) {
			f.t.Errorf("m1: %s", d)
		}
	}
}

// A thread without a compaction, known or not, has none: (nil, nil).
func noCompaction(f *fixture) {
	f.in("m1")
	for _, thread := range []string{f.thread(), f.thread("never-written")} {
		c, err := f.src.LatestCompaction(f.ctx, thread)
		if c != nil || err != nil {
			f.t.Errorf("LatestCompaction(%q) = %+v, %v; want nil, nil", thread, c, err)
		}
	}
}

// LatestCompaction is the completed compaction with the greatest boundary, of that thread only.
func latestCompactionWins(f *fixture) {
	f.in("m1", "m2", "m3")
	f.add(f.thread("other"), history.Message{MessageID: "x1"})
	f.compact("m1", "Summary up to m1.")
	f.compact("m2", "Summary up to m2, covering the first.")
	c, err := f.src.LatestCompaction(f.ctx, f.thread())
	want := history.Compaction{ThreadID: f.thread(), BoundarySeq: f.seq("m2"), BoundaryMessageID: f.id("m2"),
		Summary: "Summary up to m2, covering the first."}
	if err != nil || c == nil || *c != want {
		f.t.Errorf("LatestCompaction = %+v, %v; want %+v", c, err, want)
	}
	if c, err := f.src.LatestCompaction(f.ctx, f.thread("other")); c != nil || err != nil {
		f.t.Errorf("another thread's LatestCompaction = %+v, %v; want nil, nil", c, err)
	}
}

// The windows a replay and a compaction read around a boundary: after it (with Omitted
// counting only messages after it), and up to and including it, each message with all its
// rounds on its own side.
func windowsAroundABoundary(f *fixture) {
	f.in("m1", "m2", "m3", "m4", "m5", "m6")
	f.record("m2", use("r2", 0, 0, "c2", `{}`, `"boundary's round"`))
	f.record("m3", use("r3", 0, 0, "c3", `{}`, `"after"`))
	f.compact("m2", "Summary up to m2.")
	b := f.seq("m2")
	f.expect(history.Query{AfterSeq: b, Limit: 2}, 2, "m5", "m6")
	f.expect(history.Query{AfterSeq: b, Limit: 3, ExcludeMessageID: f.id("m6")}, 0, "m3", "m4", "m5")
	after := f.expect(history.Query{AfterSeq: b, Limit: history.NoLimit, ToolUses: true}, 0, "m3", "m4", "m5", "m6")
	if m := f.message(after, "m3"); m != nil && len(m.ToolUses) != 1 {
		f.t.Errorf("m3 after the boundary carries %d tool uses, want 1", len(m.ToolUses))
	}
	upTo := f.expect(history.Query{UpToSeq: b, Limit: history.NoLimit, ToolUses: true}, 0, "m1", "m2")
	if m := f.message(upTo, "m2"); m != nil && len(m.ToolUses) != 1 {
		f.t.Errorf("the boundary message m2 carries %d tool uses, want its round's 1", len(m.ToolUses))
	}
}

// Each rule of history.Query.Check is refused, with an error matching history.ErrInvalidQuery.
func badQueriesAreRefused(f *fixture) {
	f.in("m1")
	for _, q := range []history.Query{
		{Limit: 5},
		{ThreadID: f.thread(), Limit: history.NoLimit - 1},
		{ThreadID: f.thread(), Limit: -50},
		{ThreadID: f.thread(), AfterSeq: -1},
		{ThreadID: f.thread(), UpToSeq: -1},
		{ThreadID: f.thread(), InboundUpToSeq: -1},
	} {
		w, err := f.src.History(f.ctx, q)
		if !errors.Is(err, history.ErrInvalidQuery) {
			f.t.Errorf("History(%s) = %v, %v; want an error matching history.ErrInvalidQuery", describe(q), w, err)
		}
	}
}

// The same rows give the same Window on every read (tool uses compared in Seq order).
func readsAreDeterministic(f *fixture) {
	f.in("m1", "m2", "m3", "m4")
	f.record("m2", use("r", 0, 0, "c0", `{"a":1}`, `"x"`), use("r", 0, 1, "c1", `{"a":2}`, `"y"`))
	f.record("m4", use("s", 0, 0, "c0", `{}`, `"z"`))
	q := history.Query{Limit: 3, ToolUses: true}
	first := f.read(q)
	for i := range 3 {
		again := f.read(q)
		if d := diffWindows(again, first); d != "" {
			f.t.Fatalf("read %d differs from the first: %s", i+2, d)
		}
	}
}

// A Window belongs to its caller: changing it does not change what the next read returns.
func callerOwnsTheWindow(f *fixture) {
	f.add("", history.Message{MessageID: "m1", To: []string{"support@acme.test"}, Cc: []string{"bob@example.com"},
		Attachments: []history.Attachment{{ID: "att-1", Filename: "a.pdf", ContentType: "application/pdf", Size: 1}}})
	f.record("m1", use("r", 0, 0, "c", `{}`, `"result"`))
	q := history.Query{ToolUses: true}
	w := f.read(q)
	want := copyWindow(w)
	for i := range w.Messages {
		m := &w.Messages[i]
		m.Text = "changed"
		for k := range m.To {
			m.To[k] = "changed"
		}
		for k := range m.Cc {
			m.Cc[k] = "changed"
		}
		for k := range m.Attachments {
			m.Attachments[k].ID = "changed"
		}
		for k := range m.ToolUses {
			m.ToolUses[k].Result = "changed"
		}
	}
	if d := diffWindows(f.read(q), want); d != "" {
		f.t.Errorf("changing a returned Window changed the next read: %s", d)
	}
}

// copyWindow returns a deep copy of w.
func copyWindow(w *history.Window) *history.Window {
	c := &history.Window{Omitted: w.Omitted, Messages: slices.Clone(w.Messages)}
	for i := range c.Messages {
		m := &c.Messages[i]
		m.To, m.Cc = slices.Clone(m.To), slices.Clone(m.Cc)
		m.Attachments, m.ToolUses = slices.Clone(m.Attachments), slices.Clone(m.ToolUses)
	}
	return c
}

// diffWindows describes the first difference between two windows, or returns "".
func diffWindows(got, want *history.Window) string {
	if got.Omitted != want.Omitted || len(got.Messages) != len(want.Messages) {
		return fmt.Sprintf("%d messages, Omitted %d; want %d, Omitted %d", len(got.Messages), got.Omitted, len(want.Messages), want.Omitted)
	}
	for i := range got.Messages {
		if d := diffMessage(got.Messages[i], want.Messages[i]); len(d) > 0 {
			return fmt.Sprintf("message %d: %s", i, d[0])
		}
		w := bySeq(want.Messages[i].ToolUses)
		if d := diffToolUses(got.Messages[i].ToolUses, w); len(d) > 0 {
			return fmt.Sprintf("message %d: %s", i, d[0])
		}
		for k, u := range bySeq(got.Messages[i].ToolUses) {
			if u.Seq != w[k].Seq {
				return fmt.Sprintf("message %d: tool use %d has Seq %d, want %d", i, k, u.Seq, w[k].Seq)
			}
		}
	}
	return ""
}
