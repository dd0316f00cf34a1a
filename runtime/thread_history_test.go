package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/internal/chatgolden"

	"github.com/personagen/personagen/runtime"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
)

// historyGolden compares msgs with testdata/history/<name>.chat (see chatgolden.Check).
func historyGolden(t *testing.T, name string, msgs []chat.Message) {
	t.Helper()
	chatgolden.Check(t, filepath.Join("testdata", "history", name+".chat"), msgs)
}

func encodeMessages(t testing.TB, msgs []chat.Message) []byte {
	t.Helper()
	if msgs == nil {
		msgs = []chat.Message{}
	}
	b, err := json.MarshalIndent(msgs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const thread = "thread-1"

// fixture builds a memory source message by message.
type fixture struct {
	t    testing.TB
	s    *memory.Source
	n    int
	seqs map[string]int64 // message id -> seq
}

func newFixture(t testing.TB) *fixture {
	return &fixture{t: t, s: memory.New(), seqs: map[string]int64{}}
}

// in adds an inbound message with a plain body, sent n minutes after t0.
func (f *fixture) in(id, text string) int64 {
	return f.add(history.Message{MessageID: id, Direction: history.Inbound,
		From: "Ada Lovelace <ada@example.com>", To: []string{"support@acme.test"}, Subject: "Invoice 42", Text: text})
}

// out adds an outbound message with a plain body.
func (f *fixture) out(id, text string) int64 {
	return f.add(history.Message{MessageID: id, Direction: history.Outbound,
		From: "support@acme.test", To: []string{"Ada Lovelace <ada@example.com>"}, Subject: "Re: Invoice 42", Text: text})
}

func (f *fixture) add(m history.Message) int64 {
	f.t.Helper()
	if m.Date.IsZero() {
		m.Date = t0.Add(time.Duration(f.n) * time.Minute)
	}
	f.n++
	m.ThreadID = thread
	seq, err := f.s.AppendMessage(context.Background(), m)
	if err != nil {
		f.t.Fatal(err)
	}
	f.seqs[m.MessageID] = seq
	return seq
}

func (f *fixture) uses(messageID string, uses ...history.ToolUse) {
	f.t.Helper()
	if err := f.s.RecordToolUses(context.Background(), f.seqs[messageID], uses...); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) compaction(boundary int64, summary string) {
	f.t.Helper()
	if err := f.s.SetCompaction(context.Background(), history.Compaction{ThreadID: thread, BoundarySeq: boundary, Summary: summary}); err != nil {
		f.t.Fatal(err)
	}
}

// use is a recorded call with a result.
func use(run string, turn, pos int, id, name, args, result string) history.ToolUse {
	return history.ToolUse{RunID: run, TurnIndex: turn, Position: pos, ToolCallID: id, ToolName: name,
		Arguments: args, Result: result, HasResult: true, Succeeded: true}
}

// current is the inbound message being answered.
func current() *runtime.Invocation {
	return &runtime.Invocation{Inbound: &history.Message{ThreadID: thread, MessageID: "current", From: "ada@example.com"}}
}

// replay runs the chain [summary?, history] on inv and checks the output passes Validate.
func replay(t testing.TB, inv *runtime.Invocation, steps ...runtime.Resolver) []chat.Message {
	t.Helper()
	var out []chat.Message
	for _, r := range steps {
		var err error
		if out, err = r.Resolve(context.Background(), inv, out); err != nil {
			t.Fatalf("resolve: %v", err)
		}
	}
	if err := chat.Validate(out); err != nil {
		t.Fatalf("replay fails Validate: %v\n%s", err, encodeMessages(t, out))
	}
	return out
}

func TestThreadHistoryGolden(t *testing.T) {
	long := strings.Repeat("0123456789", 5)
	cases := []struct {
		name  string
		build func(f *fixture) []runtime.Resolver
	}{
		{"plain_thread", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Hello, my invoice is wrong.")
			f.out("m2", "Which invoice do you mean?")
			f.in("current", "The one from March.") // excluded wherever it lies
			f.add(history.Message{MessageID: "m3", Direction: history.Inbound, From: "Ada <ada@example.com>",
				To: []string{"support@acme.test", "billing@acme.test"}, Cc: []string{"Bob <bob@example.com>"},
				Subject: "Invoice 42\r\nFrom: forged@evil.test", Text: "  \nNumber 42, sorry.\n\n"})
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"html_only_body", func(f *fixture) []runtime.Resolver {
			f.add(history.Message{MessageID: "m1", Direction: history.Inbound, From: "ada@example.com",
				Subject: "Formatted", Text: " \n ",
				HTML: `<html><head><style>p{color:red}</style><script>alert(1)</script></head><body><p>First &amp; foremost.</p><p>Second<br>line.</p></body></html>`})
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"attachment_only_message", func(f *fixture) []runtime.Resolver {
			f.add(history.Message{MessageID: "m1", Direction: history.Inbound, From: "ada@example.com",
				Subject: "Scans", Attachments: []history.Attachment{
					{ID: "att-1", Filename: "scan.pdf", ContentType: "application/pdf", Size: 48213},
					{ID: "att-2", Filename: "photo\n.png", ContentType: "image/png", Size: 1024},
				}})
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"empty_message_skipped_rounds_kept", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Look this up please.")
			f.add(history.Message{MessageID: "m2", Direction: history.Inbound, From: "ada@example.com",
				Text: "  \n\t", HTML: "<p> </p>"})
			f.uses("m2", use("r1", 0, 0, "c1", "search", `{"q":"march"}`, `{"hits":0}`))
			f.out("m3", "Nothing found.")
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"limit_cuts_before_message_with_rounds", func(f *fixture) []runtime.Resolver {
			f.in("m1", "First question.")
			f.uses("m1", use("r1", 0, 0, "c1", "search", `{"q":"one"}`, `"dropped with m1"`))
			f.out("m2", "First answer.")
			f.in("m3", "Second question.")
			f.uses("m3", use("r3", 0, 0, "c3", "search", `{"q":"two"}`, `"kept with m3"`))
			f.out("m4", "Second answer.")
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s, Limit: 2}}
		}},
		{"two_runs_on_one_message", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Please check twice.")
			// run ids in text order are the reverse of recording order
			f.uses("m1", use("run-b", 0, 0, "b0", "search", `{"q":"b"}`, `"first run"`))
			f.uses("m1", use("run-a", 0, 0, "a0", "search", `{"q":"a"}`, `"second run"`))
			f.uses("m1", use("run-a", 1, 0, "a1", "fetch", `{"url":"https://x.test"}`, `"second run, turn 1"`))
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"run_with_two_turns_of_parallel_calls", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Compare three shops.")
			// positions recorded out of order within the round
			f.uses("m1",
				use("r1", 0, 2, "c2", "fetch", `{"url":"https://c.test"}`, `"C"`),
				use("r1", 0, 0, "c0", "fetch", `{"url":"https://a.test"}`, `"A"`),
				use("r1", 0, 1, "c1", "fetch", `{"url":"https://b.test"}`, `"B"`),
				use("r1", 1, 1, "d1", "price", `{"shop":"b"}`, `12`),
				use("r1", 1, 0, "d0", "price", `{"shop":"a"}`, `10`))
			f.out("m2", "Shop A is cheapest.")
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"same_call_id_in_two_turns", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Retry the lookup.")
			f.uses("m1",
				use("r1", 0, 0, "call_1", "search", `{"q":"x"}`, `"timeout"`),
				use("r1", 1, 0, "call_1", "search", `{"q":"x"}`, `"found"`))
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"call_without_result", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Fetch both.")
			missing := use("r1", 0, 1, "c1", "fetch", `{"url":"https://b.test"}`, "")
			missing.HasResult = false
			f.uses("m1", use("r1", 0, 0, "c0", "fetch", `{"url":"https://a.test"}`, `"A"`), missing)
			f.out("m2", "Only A answered.")
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"clock_skew_replays_in_order_of_record", func(f *fixture) []runtime.Resolver {
			// The customer's clock runs three hours fast: the reply is dated before the question
			// it answers. Replay follows the order of record; the Date lines show the headers.
			day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
			f.add(history.Message{MessageID: "q1", Direction: history.Inbound, From: "ada@example.com",
				Date: day.Add(12 * time.Hour), Text: "Where is order 7?"})
			f.uses("q1", use("r1", 0, 0, "c1", "order_status", `{"order":7}`, `"shipped"`))
			f.add(history.Message{MessageID: "reply", Direction: history.Outbound, From: "support@acme.test",
				Date: day.Add(9*time.Hour + 5*time.Minute), Text: "It shipped this morning."})
			f.add(history.Message{MessageID: "q2", Direction: history.Inbound, From: "ada@example.com",
				Date: day.Add(12*time.Hour + 30*time.Minute), Text: "Thanks, and the tracking number?"})
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"clipped_arguments_and_results", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Big payloads.")
			f.uses("m1",
				use("r1", 0, 0, "c0", "search", `{"q":"`+long+runtime.TruncationMarker, long),
				use("r1", 0, 1, "c1", "search", `["not","an","object"]`, `short`),
				use("r1", 0, 2, "c2", "search", ``, `<b>&</b>`),
				use("r1", 0, 3, "c3", "search", "  {\"q\": \"<kept as stored>\"}  ", `"ok"`))
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s, ReplayResultLimit: 20}}
		}},
		{"malformed_call_ids_renamed", func(f *fixture) []runtime.Resolver {
			f.in("m1", "A source with bad ids.")
			f.uses("m1",
				use("r1", 0, 0, "dup", "a", `{}`, `"1"`),
				use("r1", 0, 1, "dup", "b", `{}`, `"2"`),
				use("r1", 0, 2, "", "c", `{}`, `"3"`),
				use("r1", 0, 3, "dup_1", "d", `{}`, `"4"`))
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"skip_tool_calls", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Search.")
			f.uses("m1", use("r1", 0, 0, "c0", "search", `{}`, `"x"`))
			f.out("m2", "Done.")
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s, SkipToolCalls: true}}
		}},
		{"compaction_seam_without_rounds", func(f *fixture) []runtime.Resolver {
			f.in("m1", "Old question.")
			b := f.out("m2", "Old answer.")
			f.in("m3", "New question.")
			f.out("m4", "New answer.")
			f.compaction(b, "Ada asked an old question and got an old answer.")
			s := f.s
			return []runtime.Resolver{&runtime.ThreadSummary{Source: s}, &runtime.ThreadHistory{Source: s}}
		}},
		{"compaction_seam_with_rounds", func(f *fixture) []runtime.Resolver {
			b := f.in("m1", "Old question.")
			f.uses("m1", use("r1", 0, 0, "c1", "search", `{"q":"old"}`, `"summarised"`))
			f.in("m2", "New question.")
			f.uses("m2", use("r2", 0, 0, "c2", "search", `{"q":"new"}`, `"replayed"`))
			f.out("m3", "New answer.")
			f.compaction(b, "Ada asked an old question; a search ran.")
			return []runtime.Resolver{&runtime.ThreadSummary{Source: f.s}, &runtime.ThreadHistory{Source: f.s}}
		}},
		{"boundary_older_than_window", func(f *fixture) []runtime.Resolver {
			b := f.in("m1", "Summarised.")
			for _, id := range []string{"m2", "m3", "m4", "m5", "m6"} {
				f.in(id, "Message "+id+".")
			}
			f.compaction(b, "One summarised message.")
			return []runtime.Resolver{&runtime.ThreadSummary{Source: f.s, Role: chat.RoleSystem}, &runtime.ThreadHistory{Source: f.s, Limit: 2}}
		}},
		{"one_message_between_boundary_and_window", func(f *fixture) []runtime.Resolver {
			b := f.in("m1", "Summarised.")
			f.in("m2", "Left out.")
			f.in("m3", "Replayed.")
			f.compaction(b, "Summary.")
			return []runtime.Resolver{&runtime.ThreadSummary{Source: f.s}, &runtime.ThreadHistory{Source: f.s, Limit: 1}}
		}},
		{"history_without_summary_ignores_compaction", func(f *fixture) []runtime.Resolver {
			b := f.in("m1", "Before the boundary.")
			f.in("m2", "After the boundary.")
			f.compaction(b, "Never shown.")
			return []runtime.Resolver{&runtime.ThreadHistory{Source: f.s}}
		}},
		{"latest_compaction_wins", func(f *fixture) []runtime.Resolver {
			b1 := f.in("m1", "One.")
			b2 := f.in("m2", "Two.")
			f.in("m3", "Three.")
			f.compaction(b2, "Summary up to two (includes the first summary).")
			f.compaction(b1, "Summary up to one.")
			return []runtime.Resolver{&runtime.ThreadSummary{Source: f.s}, &runtime.ThreadHistory{Source: f.s}}
		}},
		{"empty_thread", func(f *fixture) []runtime.Resolver {
			f.in("current", "Only the message being answered.")
			return []runtime.Resolver{&runtime.ThreadSummary{Source: f.s}, &runtime.ThreadHistory{Source: f.s}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			steps := c.build(newFixture(t))
			historyGolden(t, c.name, replay(t, current(), steps...))
		})
	}
}

func TestThreadHistoryContributesNothingWithoutInbound(t *testing.T) {
	f := newFixture(t)
	f.in("m1", "Hello.")
	for name, inv := range map[string]*runtime.Invocation{
		"scheduled run":  {Responsibility: &runtime.Responsibility{Name: "daily"}},
		"empty thread":   {Inbound: &history.Message{MessageID: "x"}},
		"nil invocation": nil,
	} {
		for _, r := range []runtime.Resolver{&runtime.ThreadHistory{}, &runtime.ThreadSummary{}} {
			dst := []chat.Message{chat.SystemMessage("kept")}
			out, err := r.Resolve(context.Background(), inv, dst)
			if err != nil || len(out) != 1 || out[0].Text != "kept" {
				t.Errorf("%s, %T: got %v, %v; want dst unchanged", name, r, out, err)
			}
		}
	}
}

// A stored inbound message is answered with what the store received before it: a message that
// arrived while the run was pending is not replayed.
func TestThreadHistoryStopsBeforeAStoredInbound(t *testing.T) {
	f := newFixture(t)
	f.in("m1", "Before.")
	seq := f.in("current", "Being answered.")
	f.in("m3", "Arrived while the run was pending.")
	inv := current()
	inv.Inbound.Seq = seq
	out := replay(t, inv, &runtime.ThreadHistory{Source: f.s})
	if len(out) != 1 || !strings.HasSuffix(out[0].Text, "\n\nBefore.") {
		t.Fatalf("replay = %s, want m1 only", encodeMessages(t, out))
	}
	// Without a Seq (a message the host did not store), the later message is replayed.
	if out := replay(t, current(), &runtime.ThreadHistory{Source: f.s}); len(out) != 2 {
		t.Fatalf("replay without Seq = %s, want m1 and m3", encodeMessages(t, out))
	}
}

// A run's View fixes what it reads: the reply to an earlier message stored after the answered
// one arrived is replayed, a later arrival is not, and the pinned compaction is used — none, here,
// although one completed since the run started.
func TestThreadHistoryReadsTheRunsView(t *testing.T) {
	f := newFixture(t)
	f.in("q1", "First question.")
	seq := f.in("current", "Second question, sent while q1 was being answered.")
	f.in("q3", "Third question, later still.")
	r1 := f.out("r1", "Answer to the first question.")
	f.out("r-late", "Stored after the run started.")
	f.compaction(f.seqs["q1"], "summary made after the run started")
	inv := current()
	inv.Inbound.Seq = seq
	inv.View = &history.View{UpToSeq: r1}
	out := replay(t, inv, &runtime.ThreadSummary{Source: f.s}, &runtime.ThreadHistory{Source: f.s})
	if len(out) != 2 || out[0].Role != chat.RoleUser || !strings.HasSuffix(out[0].Text, "\n\nFirst question.") ||
		out[1].Role != chat.RoleAssistant || !strings.HasSuffix(out[1].Text, "\n\nAnswer to the first question.") {
		t.Fatalf("replay = %s, want q1 then r1, no summary", encodeMessages(t, out))
	}
	// Pinning the compaction replays its summary and what follows its boundary, in the same view.
	inv = current()
	inv.Inbound.Seq = seq
	inv.View = &history.View{UpToSeq: r1, Compaction: &history.Compaction{ThreadID: thread, BoundarySeq: f.seqs["q1"], Summary: "pinned"}}
	out = replay(t, inv, &runtime.ThreadSummary{Source: f.s}, &runtime.ThreadHistory{Source: f.s})
	if len(out) != 2 || out[0].Text != runtime.SummaryText("pinned") || !strings.HasSuffix(out[1].Text, "\n\nAnswer to the first question.") {
		t.Fatalf("replay = %s, want the pinned summary then r1", encodeMessages(t, out))
	}
}

func TestThreadHistoryRejectsBadOptions(t *testing.T) {
	src := memory.New()
	cases := []struct {
		name string
		r    runtime.Resolver
		want error
	}{
		{"limit below NoLimit", &runtime.ThreadHistory{Source: src, Limit: -2}, runtime.ErrInvalidHistoryOption},
		{"result limit below NoLimit", &runtime.ThreadHistory{Source: src, ReplayResultLimit: -5}, runtime.ErrInvalidHistoryOption},
		{"history without source", &runtime.ThreadHistory{}, runtime.ErrNoHistorySource},
		{"summary without source", &runtime.ThreadSummary{}, runtime.ErrNoHistorySource},
		{"summary with unknown role", &runtime.ThreadSummary{Source: src, Role: "narrator"}, runtime.ErrInvalidHistoryOption},
		{"summary with tool role", &runtime.ThreadSummary{Source: src, Role: chat.RoleTool}, runtime.ErrInvalidHistoryOption},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := []chat.Message{chat.SystemMessage("kept")}
			out, err := c.r.Resolve(context.Background(), current(), dst)
			if !errors.Is(err, c.want) {
				t.Fatalf("error = %v, want %v", err, c.want)
			}
			if len(out) != 1 {
				t.Errorf("dst changed on error: %v", out)
			}
		})
	}
}

func TestThreadHistoryLimits(t *testing.T) {
	f := newFixture(t)
	for i := range 60 {
		f.in("m"+string(rune('A'+i/26))+string(rune('a'+i%26)), "body")
	}
	for _, c := range []struct {
		limit, want int
	}{{0, history.DefaultLimit}, {runtime.NoLimit, 60}, {7, 7}, {100, 60}} {
		out := replay(t, current(), &runtime.ThreadHistory{Source: f.s, Limit: c.limit, SkipToolCalls: true})
		if len(out) != c.want {
			t.Errorf("Limit %d: %d messages, want %d", c.limit, len(out), c.want)
		}
	}
}

func TestThreadHistoryResultLimits(t *testing.T) {
	f := newFixture(t)
	f.in("m1", "q")
	big := strings.Repeat("é", 5000)
	f.uses("m1", use("r", 0, 0, "c", "t", `{}`, big))
	for _, c := range []struct {
		limit, want int
	}{{0, runtime.DefaultReplayResultLimit}, {runtime.NoLimit, 5000}, {100, 100}} {
		out := replay(t, current(), &runtime.ThreadHistory{Source: f.s, ReplayResultLimit: c.limit})
		got := []rune(out[len(out)-1].Text)
		if len(got) != c.want {
			t.Errorf("ReplayResultLimit %d: result has %d characters, want %d", c.limit, len(got), c.want)
		}
	}
}

func TestThreadSummaryMustPrecedeHistory(t *testing.T) {
	f := newFixture(t)
	b := f.in("m1", "x")
	f.compaction(b, "s")
	inv := current()
	out, err := (&runtime.ThreadHistory{Source: f.s}).Resolve(context.Background(), inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = (&runtime.ThreadSummary{Source: f.s}).Resolve(context.Background(), inv, out)
	if !errors.Is(err, runtime.ErrSummaryAfterHistory) {
		t.Fatalf("error = %v, want ErrSummaryAfterHistory", err)
	}
}

// countingSource counts LatestCompaction calls and can fail History once.
type countingSource struct {
	*memory.Source
	latest    int
	failFirst bool
}

func (c *countingSource) LatestCompaction(ctx context.Context, thread string) (*history.Compaction, error) {
	c.latest++
	return c.Source.LatestCompaction(ctx, thread)
}

func (c *countingSource) History(ctx context.Context, q history.Query) (*history.Window, error) {
	if c.failFirst {
		c.failFirst = false
		return nil, errors.New("connection reset")
	}
	return c.Source.History(ctx, q)
}

// A compaction that completes after ThreadSummary read the row must not move ThreadHistory's
// boundary: both read the row once per Invocation, also when the run is retried.
func TestSummaryAndHistoryShareOneCompactionRow(t *testing.T) {
	f := newFixture(t)
	b1 := f.in("m1", "one")
	b2 := f.in("m2", "two")
	f.in("m3", "three")
	f.compaction(b1, "up to one")
	src := &countingSource{Source: f.s, failFirst: true}
	inv := current()
	chain := runtime.NewChain(
		runtime.Step{Kind: "thread_summary", Resolver: &runtime.ThreadSummary{Source: src}},
		runtime.Step{Kind: "compact mid-run", Resolver: runtime.ResolverFunc(func(ctx context.Context, _ *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
			return dst, f.s.SetCompaction(ctx, history.Compaction{ThreadID: thread, BoundarySeq: b2, Summary: "up to two"})
		})},
		runtime.Step{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: src}},
	)
	if _, err := chain.Resolve(context.Background(), inv, nil); err == nil {
		t.Fatal("first try: want the injected History error")
	}
	out, err := chain.Resolve(context.Background(), inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if src.latest != 1 {
		t.Errorf("LatestCompaction called %d times, want 1", src.latest)
	}
	want := []chat.Message{
		chat.UserMessage(runtime.SummaryText("up to one")),
		{Role: chat.RoleUser},
		{Role: chat.RoleUser},
	}
	if len(out) != len(want) || out[0].Text != want[0].Text {
		t.Fatalf("got %s", encodeMessages(t, out))
	}
	if !strings.Contains(out[1].Text, "\n\ntwo") || !strings.Contains(out[2].Text, "\n\nthree") {
		t.Errorf("history after the first boundary should replay m2 and m3, got %s", encodeMessages(t, out))
	}
}

// The same rows give byte-identical messages on every build, whatever order the tool uses were
// handed to the source in relation to each other's runs.
func TestReplayIsByteIdentical(t *testing.T) {
	build := func() []byte {
		f := newFixture(t)
		b := f.in("m0", "summarised")
		f.compaction(b, "summary")
		for i := range 20 {
			id := string(rune('a'+i%26)) + "-msg"
			f.in(id, "question "+id)
			f.uses(id,
				use("run-"+id, 0, 1, "c1", "fetch", `{"u":1}`, `"r1"`),
				use("run-"+id, 0, 0, "c0", "fetch", `{"u":0}`, `"r0"`),
				use("run-"+id, 1, 0, "c0", "fetch", `{"u":`, `"r2"`))
			f.out(id+"-reply", "answer")
		}
		inv := current()
		return encodeMessages(t, replay(t, inv, &runtime.ThreadSummary{Source: f.s}, &runtime.ThreadHistory{Source: f.s, Limit: 30}))
	}
	first := build()
	for i := range 100 {
		if got := build(); !bytes.Equal(got, first) {
			t.Fatalf("build %d differs from the first", i+1)
		}
	}
}

func TestTurnTextFormat(t *testing.T) {
	m := history.Message{
		From: "Ada <ada@example.com>", To: []string{"a@x.test", "b@x.test"},
		Date:    time.Date(2026, 1, 2, 3, 4, 5, 600000, time.FixedZone("CET", 3600)),
		Subject: "Hi", Text: "Body.",
		Attachments: []history.Attachment{{ID: "a1", Filename: "f.txt", ContentType: "text/plain", Size: 3}},
	}
	want := "From: Ada <ada@example.com>\nTo: a@x.test, b@x.test\nCc:\nDate: Fri, 02 Jan 2026 02:04:05 +0000\nSubject: Hi\n\nBody.\n\n[attachment: f.txt (text/plain, 3 bytes, id a1)]"
	got, ok := runtime.TurnText(&m)
	if !ok || got != want {
		t.Errorf("TurnText =\n%q\nwant\n%q", got, want)
	}
	if _, ok := runtime.TurnText(&history.Message{Text: " ", HTML: "<br>"}); ok {
		t.Error("a message with neither body nor attachments must report no content")
	}
}

func TestReplayInput(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{` {"a" : 1} `, ` {"a" : 1} `},
		{``, `{}`},
		{"  \n", `{}`},
		{`{"a":`, `{"_clipped_arguments":"{\"a\":"}`},
		{`[1]`, `{"_clipped_arguments":"[1]"}`},
		{`"s"`, `{"_clipped_arguments":"\"s\""}`},
		{`<&>`, `{"_clipped_arguments":"<&>"}`},
		{"\xff", `{"_clipped_arguments":"\ufffd"}`},
	}
	for _, c := range cases {
		got := runtime.ReplayInput(c.in)
		if string(got) != c.want {
			t.Errorf("ReplayInput(%q) = %s, want %s", c.in, got, c.want)
		}
		var obj map[string]any
		if err := json.Unmarshal(got, &obj); err != nil {
			t.Errorf("ReplayInput(%q) is not a JSON object: %v", c.in, err)
		}
	}
}

func TestSortToolUsesNeverComparesRunIDsAsText(t *testing.T) {
	uses := []history.ToolUse{
		{Seq: 9, RunID: "run-10", TurnIndex: 0, Position: 0},
		{Seq: 3, RunID: "run-9", TurnIndex: 1, Position: 1},
		{Seq: 2, RunID: "run-9", TurnIndex: 1, Position: 0},
		{Seq: 1, RunID: "run-9", TurnIndex: 0, Position: 0},
		{Seq: 10, RunID: "run-10", TurnIndex: 0, Position: 1},
	}
	runtime.SortToolUses(uses)
	var got []int64
	for _, u := range uses {
		got = append(got, u.Seq)
	}
	want := []int64{1, 2, 3, 9, 10}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

// apiCallID is the form of a call id every model API takes; the stored ids of
// FuzzReplayAlwaysValidates have it, so the replay's renamed ones must too.
var apiCallID = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// FuzzReplayAlwaysValidates holds that any tool uses a source may hand over — rounds in any
// order, repeated Seqs, repeated or empty call ids, missing results, arbitrary argument text —
// replay to a list that passes Validate, one assistant message per round, with every call's
// Input a JSON object and every renamed id of the characters [A-Za-z0-9_-], the same bytes every
// time.
func FuzzReplayAlwaysValidates(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 1, 0, 0, 1, 2, 1, 1, 0}, "{\"a\":")
	f.Add([]byte{3, 2, 1, 0, 0, 0, 3, 2, 1, 0, 0, 0}, "")
	f.Add([]byte{1, 1, 1, 1, 2, 2, 2, 2}, "[1,2]")
	f.Fuzz(func(t *testing.T, data []byte, args string) {
		ids := []string{"", "a", "b", "a_1"}
		var uses []history.ToolUse
		for i := 0; i+3 < len(data) && len(uses) < 64; i += 4 {
			uses = append(uses, history.ToolUse{
				Seq: int64(data[i] % 8), RunID: string(rune('p' + data[i+1]%3)), TurnIndex: int(data[i+2] % 3),
				Position: int(data[i+3] % 4), ToolCallID: ids[int(data[i+3]/4)%len(ids)], ToolName: "t",
				Arguments: args, Result: args, HasResult: data[i]%5 != 0,
			})
		}
		m := history.Message{Direction: history.Outbound, Text: args, ToolUses: uses}
		var h runtime.ThreadHistory
		out := h.AppendReplay(nil, []history.Message{m})
		if err := chat.Validate(out); err != nil {
			t.Fatalf("replay fails Validate: %v", err)
		}
		assistants := 0
		for _, msg := range out {
			if len(msg.ToolCalls) > 0 {
				assistants++
			}
			for _, c := range msg.ToolCalls {
				var obj map[string]any
				if err := json.Unmarshal(c.Input, &obj); err != nil || obj == nil {
					t.Fatalf("Input %q is not a JSON object", c.Input)
				}
				if !apiCallID.MatchString(c.ID) {
					t.Fatalf("call id %q: the renaming added a character a model API refuses", c.ID)
				}
			}
		}
		if n := rounds(uses); assistants != n {
			t.Fatalf("%d rounds replayed as %d assistant messages: a round was split", n, assistants)
		}
		again := h.AppendReplay(nil, []history.Message{m})
		if !bytes.Equal(encodeMessages(t, out), encodeMessages(t, again)) {
			t.Fatal("two replays of the same rows differ")
		}
	})
}
