package store

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/personagen/personagen/internal/chatgolden"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"

	"github.com/personagen/personagen/runtime"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/memory"
	"github.com/personagen/personagen/runtime/transcript"
)

var h0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

const histThread = "thread-h"

// histOp is one step of a history scenario, applied alike to a Store and to a memory.Source.
type histOp struct {
	msg     *history.Message  // a message to append (ToolUses recorded after it)
	uses    []history.ToolUse // tool uses to record for the message named usesFor
	usesFor string
	compact string // compact up to the message named compact
}

// scenario applies ops to both sources and returns the message ids' seqs in each.
type scenario struct {
	ops []histOp
}

func (sc *scenario) in(id, text string) *scenario {
	return sc.msg(history.Message{MessageID: id, Direction: history.Inbound,
		From: "Ada <ada@example.com>", To: []string{"support@acme.test"}, Subject: "Order 7", Text: text})
}

func (sc *scenario) out(id, text string) *scenario {
	return sc.msg(history.Message{MessageID: id, Direction: history.Outbound,
		From: "support@acme.test", To: []string{"Ada <ada@example.com>"}, Subject: "Re: Order 7", Text: text})
}

func (sc *scenario) msg(m history.Message) *scenario {
	if m.SentAt.IsZero() {
		m.SentAt = h0.Add(time.Duration(len(sc.ops)) * time.Minute)
	}
	sc.ops = append(sc.ops, histOp{msg: &m})
	return sc
}

func (sc *scenario) uses(id string, uses ...history.ToolUse) *scenario {
	sc.ops = append(sc.ops, histOp{usesFor: id, uses: uses})
	return sc
}

func (sc *scenario) compactAt(id string) *scenario {
	sc.ops = append(sc.ops, histOp{compact: id})
	return sc
}

func tu(run string, turn, pos int, id, args, result string) history.ToolUse {
	return history.ToolUse{RunID: run, TurnIndex: turn, Position: pos, ToolCallID: id, ToolName: "search",
		Arguments: args, Result: result, HasResult: true, Succeeded: true}
}

// fixedSummary is a Summarizer that names the messages it saw and the previous summary.
func fixedSummary(calls *atomic.Int64) history.Summarizer {
	return runtime.SummarizerFunc(func(_ context.Context, in runtime.SummaryInput) (string, error) {
		if calls != nil {
			calls.Add(1)
		}
		return summaryOf(in), nil
	})
}

func summaryOf(in runtime.SummaryInput) string {
	var b strings.Builder
	b.WriteString("Summary of " + in.ThreadID)
	if in.Previous != "" {
		b.WriteString(" after [" + in.Previous + "]")
	}
	b.WriteString(": ")
	for i, m := range in.Messages {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(m.Role))
		if len(m.ToolCalls) > 0 {
			b.WriteString("(calls)")
		}
	}
	return b.String()
}

// apply builds the scenario in s and in a memory source; it returns the memory source.
func (sc *scenario) apply(t testing.TB, s *Store) *memory.Source {
	t.Helper()
	ctx := context.Background()
	mem := memory.New()
	seqs := map[string]int64{}
	memSeqs := map[string]int64{}
	var compacts []string
	for _, op := range sc.ops {
		switch {
		case op.msg != nil:
			m := *op.msg
			seq, err := s.AppendMessage(ctx, NewMessage{ThreadID: histThread, MessageID: m.MessageID, Direction: m.Direction,
				From: m.From, To: m.To, Cc: m.Cc, Subject: m.Subject, SentAt: m.SentAt, Text: m.Text, HTML: m.HTML,
				Attachments: newAttachments(m.Attachments)})
			if err != nil {
				t.Fatal(err)
			}
			seqs[m.MessageID] = seq.Seq
			if memSeqs[m.MessageID], err = mem.AppendMessage(ctx, histThread, m); err != nil {
				t.Fatal(err)
			}
		case op.usesFor != "":
			for _, u := range op.uses {
				insertToolUse(t, s, histThread, seqs[op.usesFor], u)
			}
			if err := mem.RecordToolUses(ctx, memSeqs[op.usesFor], op.uses...); err != nil {
				t.Fatal(err)
			}
		default:
			compacts = append(compacts, op.compact)
		}
	}
	// Compactions run once the thread is complete: Compact refuses the thread's newest message
	// as a boundary.
	for _, id := range compacts {
		res, err := s.Compact(ctx, histThread, seqs[id], fixedSummary(nil))
		if err != nil || res.Outcome != CompactCompleted {
			t.Fatalf("Compact: %+v, %v", res, err)
		}
		c := *res.Compaction
		c.BoundarySeq = memSeqs[id]
		if err := mem.SetCompaction(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

func newAttachments(atts []history.Attachment) []runtime.Attachment {
	var out []runtime.Attachment
	for _, a := range atts {
		out = append(out, runtime.Attachment{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size})
	}
	return out
}

// insertToolUse writes one tool_uses row directly, so tests control the recording order.
func insertToolUse(t testing.TB, s *Store, thread string, msgSeq int64, u history.ToolUse) {
	t.Helper()
	_, err := s.DB().ExecContext(context.Background(), s.dialect.rebind(`INSERT INTO tool_uses
		(owner_type, owner_id, thread_id, persona, run_id, turn_index, position, tool_call_id, tool_name,
		arguments, result, succeeded) VALUES ('message', ?, ?, 'tester', ?, ?, ?, ?, ?, ?, ?, ?)`),
		msgSeq, thread, u.RunID, u.TurnIndex, u.Position, u.ToolCallID, u.ToolName, u.Arguments, u.Result, u.Succeeded)
	if err != nil {
		t.Fatal(err)
	}
}

func currentInv() *runtime.Invocation {
	return &runtime.Invocation{Inbound: &runtime.Inbound{ThreadID: histThread, MessageID: "current"}}
}

// replayWith runs [ThreadSummary, ThreadHistory] over src and checks Validate.
func replayWith(t testing.TB, src history.Source, h runtime.ThreadHistory) []runtime.Message {
	t.Helper()
	h.Source = src
	inv := currentInv()
	out, err := runtime.NewChain(
		runtime.Step{Kind: "thread_summary", Resolver: &runtime.ThreadSummary{Source: src}},
		runtime.Step{Kind: "thread_history", Resolver: &h},
	).Resolve(context.Background(), inv, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := runtime.Validate(out); err != nil {
		t.Fatalf("replay fails Validate: %v", err)
	}
	return out
}

func jsonBytes(t testing.TB, msgs []runtime.Message) []byte {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkHistoryGolden(t *testing.T, name string, msgs []runtime.Message) {
	t.Helper()
	chatgolden.Check(t, filepath.Join("testdata", "history", name+".chat"), msgs)
}

func historyScenarios() []struct {
	name string
	sc   *scenario
	h    runtime.ThreadHistory
} {
	long := strings.Repeat("abcdefghij", 3)
	return []struct {
		name string
		sc   *scenario
		h    runtime.ThreadHistory
	}{
		{"plain_thread", new(scenario).in("m1", "Where is my order?").out("m2", "It ships today.").
			in("current", "Thanks!").in("m3", "Any tracking number?"), runtime.ThreadHistory{}},
		{"html_only_body", new(scenario).msg(history.Message{MessageID: "m1", Direction: history.Inbound,
			From: "ada@example.com", Subject: "Formatted", HTML: `<style>b{}</style><p>Hello <b>there</b></p><script>x()</script>`}),
			runtime.ThreadHistory{}},
		{"attachment_only_message", new(scenario).msg(history.Message{MessageID: "m1", Direction: history.Inbound,
			From: "ada@example.com", Cc: []string{"bob@example.com"}, Subject: "Scan", Attachments: []history.Attachment{
				{ID: "att-9", Filename: "scan.pdf", ContentType: "application/pdf", Size: 77}}}), runtime.ThreadHistory{}},
		{"empty_message_skipped", new(scenario).in("m1", "One.").msg(history.Message{MessageID: "m2",
			Direction: history.Outbound, From: "support@acme.test"}).in("m3", "Three."), runtime.ThreadHistory{}},
		{"limit_cuts_before_message_with_rounds", new(scenario).in("m1", "Q1").uses("m1", tu("r1", 0, 0, "c1", `{"q":1}`, `"gone"`)).
			out("m2", "A1").in("m3", "Q2").uses("m3", tu("r3", 0, 0, "c3", `{"q":3}`, `"kept"`)).out("m4", "A2"),
			runtime.ThreadHistory{Limit: 2}},
		{"two_runs_on_one_message", new(scenario).in("m1", "Q").
			uses("m1", tu("run-b", 0, 0, "b0", `{}`, `"b first"`)).
			uses("m1", tu("run-a", 0, 0, "a0", `{}`, `"a second"`), tu("run-a", 1, 0, "a1", `{}`, `"a turn 1"`)),
			runtime.ThreadHistory{}},
		{"run_with_two_turns_of_parallel_calls", new(scenario).in("m1", "Q").
			uses("m1", tu("r", 0, 1, "x1", `{"i":1}`, `1`), tu("r", 0, 0, "x0", `{"i":0}`, `0`),
				tu("r", 1, 1, "y1", `{"i":3}`, `3`), tu("r", 1, 0, "y0", `{"i":2}`, `2`)).out("m2", "A"),
			runtime.ThreadHistory{}},
		{"same_call_id_in_two_turns", new(scenario).in("m1", "Q").
			uses("m1", tu("r", 0, 0, "same", `{}`, `"first"`), tu("r", 1, 0, "same", `{}`, `"second"`)),
			runtime.ThreadHistory{}},
		{"clock_skew", new(scenario).
			msg(history.Message{MessageID: "q1", Direction: history.Inbound, From: "a@x.test", SentAt: h0.Add(3 * time.Hour), Text: "q1"}).
			uses("q1", tu("r1", 0, 0, "c1", `{}`, `"shipped"`)).
			msg(history.Message{MessageID: "reply", Direction: history.Outbound, From: "b@x.test", SentAt: h0.Add(5 * time.Minute), Text: "reply"}).
			msg(history.Message{MessageID: "q2", Direction: history.Inbound, From: "a@x.test", SentAt: h0.Add(3*time.Hour + 30*time.Minute), Text: "q2"}),
			runtime.ThreadHistory{}},
		{"clipped_arguments", new(scenario).in("m1", "Q").
			uses("m1", tu("r", 0, 0, "c", `{"q":"`+long+runtime.TruncationMarker, long)), runtime.ThreadHistory{ReplayResultLimit: 15}},
		{"compaction_seam_without_rounds", new(scenario).in("m1", "Old Q").out("m2", "Old A").compactAt("m2").
			in("m3", "New Q").out("m4", "New A"), runtime.ThreadHistory{}},
		{"compaction_seam_with_rounds", new(scenario).in("m1", "Old Q").uses("m1", tu("r1", 0, 0, "o", `{}`, `"old"`)).
			compactAt("m1").in("m2", "New Q").uses("m2", tu("r2", 0, 0, "n", `{}`, `"new"`)).out("m3", "New A"),
			runtime.ThreadHistory{}},
		{"boundary_older_than_window", new(scenario).in("m1", "S").compactAt("m1").
			in("m2", "2").in("m3", "3").in("m4", "4").in("m5", "5"), runtime.ThreadHistory{Limit: 2}},
		{"recursive_compaction", new(scenario).in("m1", "1").compactAt("m1").in("m2", "2").out("m3", "3").
			compactAt("m3").in("m4", "4"), runtime.ThreadHistory{}},
	}
}

// The store replays exactly what the in-memory source replays for the same rows, and both
// match the golden transcript.
func TestStoreHistoryGolden(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		for i, c := range historyScenarios() {
			t.Run(c.name, func(t *testing.T) {
				if i > 0 {
					if err := s.DeleteThread(context.Background(), histThread); err != nil {
						t.Fatal(err)
					}
				}
				mem := c.sc.apply(t, s)
				got := replayWith(t, s, c.h)
				if want := replayWith(t, mem, c.h); !bytes.Equal(jsonBytes(t, got), jsonBytes(t, want)) {
					t.Errorf("store replay differs from the in-memory replay:\nstore:  %s\nmemory: %s", jsonBytes(t, got), jsonBytes(t, want))
				}
				checkHistoryGolden(t, c.name, got)
			})
		}
	})
}

func TestStoreHistoryUnknownThreadIsEmpty(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		h, err := s.History(context.Background(), history.Query{ThreadID: "nope", Limit: 5, ToolUses: true})
		if err != nil || len(h.Messages) != 0 || h.Omitted != 0 {
			t.Fatalf("History = %+v, %v; want empty", h, err)
		}
		c, err := s.LatestCompaction(context.Background(), "nope")
		if err != nil || c != nil {
			t.Fatalf("LatestCompaction = %+v, %v; want nil, nil", c, err)
		}
	})
}

type dsnConnector struct {
	dsn string
	d   driver.Driver
}

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) { return c.d.Open(c.dsn) }
func (c dsnConnector) Driver() driver.Driver                        { return c.d }

// countingStore opens a second Store on s's database whose round trips are counted (see
// tripConnector); History runs no transaction, so each is one query.
func countingStore(t testing.TB, s *Store, dsn string) (*Store, *atomic.Int64) {
	t.Helper()
	p, err := parseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var conn driver.Connector
	if p.dialect == DialectMySQL {
		if conn, err = mysql.NewConnector(p.mysql); err != nil {
			t.Fatal(err)
		}
	} else {
		conn = dsnConnector{dsn: p.sqlite, d: &sqlite.Driver{}}
	}
	n := new(atomic.Int64)
	db := sqlx.NewDb(sql.OpenDB(tripConnector{Connector: conn, trips: n}), p.dialect.driverName())
	cs, err := OpenDB(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, n
}

// eachDBWithDSN is eachDB that also hands f the store's DSN.
func eachDBWithDSN(t *testing.T, f func(t *testing.T, s *Store, dsn string)) {
	t.Helper()
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			dsn := scratchDSN(t, d)
			s, err := Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if err := s.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			f(t, s, dsn)
		})
	}
}

// seedThread appends n messages, each inbound one with two tool rounds of one call, and an
// attachment on every third message.
func seedThread(t testing.TB, s *Store, thread string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		m := NewMessage{ThreadID: thread, MessageID: thread + "-" + itoa(i), Direction: history.Inbound,
			From: "ada@example.com", To: []string{"support@acme.test"}, Subject: "S", SentAt: h0.Add(time.Duration(i) * time.Second),
			Text: "message " + itoa(i)}
		if i%2 == 1 {
			m.Direction = history.Outbound
		}
		if i%3 == 0 {
			m.Attachments = []runtime.Attachment{{ID: "a" + itoa(i), Filename: "f.txt", ContentType: "text/plain", Size: 1}}
		}
		a, err := s.AppendMessage(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		seq := a.Seq
		if m.Direction == history.Inbound {
			insertToolUse(t, s, thread, seq, tu("run-"+itoa(i), 0, 0, "c0", `{"i":`+itoa(i)+`}`, `"r0"`))
			insertToolUse(t, s, thread, seq, tu("run-"+itoa(i), 1, 0, "c1", `{"i":`+itoa(i)+`}`, `"r1"`))
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// History costs the same small number of queries whatever the thread's length.
func TestStoreHistoryQueryCountIsConstant(t *testing.T) {
	eachDBWithDSN(t, func(t *testing.T, s *Store, dsn string) {
		seedThread(t, s, "short", 4)
		seedThread(t, s, "long", 120)
		cs, n := countingStore(t, s, dsn)
		ctx := context.Background()
		for _, c := range []struct {
			thread string
			q      history.Query
			want   int64
		}{
			{"short", history.Query{ToolUses: true}, 3},
			{"long", history.Query{ToolUses: true}, 3},
			{"long", history.Query{ToolUses: true, Limit: 50}, 3},
			{"long", history.Query{ToolUses: true, Limit: 50, AfterSeq: 20}, 3},
			{"long", history.Query{Limit: 50}, 2},
			{"none", history.Query{ToolUses: true}, 1},
		} {
			c.q.ThreadID = c.thread
			before := n.Load()
			h, err := cs.History(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if got := n.Load() - before; got != c.want {
				t.Errorf("%s %+v: %d queries, want %d", c.thread, c.q, got, c.want)
			}
			if c.thread == "long" && c.q.ToolUses && len(h.Messages[len(h.Messages)-2].ToolUses) != 2 {
				t.Errorf("%s: the last inbound message should carry its 2 tool uses", c.thread)
			}
		}
		// A whole replay through the resolvers: one for the compaction, three for the window.
		before := n.Load()
		inv := &runtime.Invocation{Inbound: &runtime.Inbound{ThreadID: "long", MessageID: "x"}}
		out, err := runtime.NewChain(
			runtime.Step{Resolver: &runtime.ThreadSummary{Source: cs}},
			runtime.Step{Resolver: &runtime.ThreadHistory{Source: cs, Limit: runtime.NoLimit}},
		).Resolve(ctx, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Load() - before; got != 4 {
			t.Errorf("summary + history replay: %d queries, want 4", got)
		}
		if len(out) != 120+60*2*2 {
			t.Errorf("replay has %d messages, want %d", len(out), 120+60*2*2)
		}
	})
}

// The same rows give byte-identical messages on every build, after reopening the store, and on
// a retried run.
func TestStoreReplayIsByteIdentical(t *testing.T) {
	eachDBWithDSN(t, func(t *testing.T, s *Store, dsn string) {
		seedThread(t, s, histThread, 30)
		ctx := context.Background()
		var seqs []int64
		if err := s.DB().SelectContext(ctx, &seqs, `SELECT seq FROM messages WHERE thread_id = ? ORDER BY seq`, histThread); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Compact(ctx, histThread, seqs[9], fixedSummary(nil)); err != nil {
			t.Fatal(err)
		}
		h := runtime.ThreadHistory{Limit: 12}
		first := jsonBytes(t, replayWith(t, s, h))
		for i := range 100 {
			if got := jsonBytes(t, replayWith(t, s, h)); !bytes.Equal(got, first) {
				t.Fatalf("build %d differs from the first", i+1)
			}
		}
		reopened, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer reopened.Close()
		if got := jsonBytes(t, replayWith(t, reopened, h)); !bytes.Equal(got, first) {
			t.Fatalf("replay after reopening differs")
		}
		// A retried run: the first try fails in the chain after history, the retry on the same
		// Invocation returns what a fresh run returns.
		inv := currentInv()
		hist := h
		hist.Source = reopened
		boom := errors.New("model call failed")
		chain := func(fail bool) *runtime.Chain {
			return runtime.NewChain(
				runtime.Step{Resolver: &runtime.ThreadSummary{Source: reopened}},
				runtime.Step{Resolver: &hist},
				runtime.Step{Resolver: runtime.ResolverFunc(func(_ context.Context, _ *runtime.Invocation, dst []runtime.Message) ([]runtime.Message, error) {
					if fail {
						return dst, boom
					}
					return dst, nil
				})},
			)
		}
		if _, err := chain(true).Resolve(ctx, inv, nil); !errors.Is(err, boom) {
			t.Fatalf("first try: %v", err)
		}
		retry, err := chain(false).Resolve(ctx, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonBytes(t, retry); !bytes.Equal(got, first) {
			t.Fatalf("retried run differs")
		}
	})
}

// Rounds written by RecordRound replay as they were recorded: calls in position order, results
// paired, a clipped argument payload wrapped, and a responsibility run's rounds never in a
// thread's history.
func TestStoreHistoryReplaysRecordedRounds(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seq := mustAppend(t, s, NewMessage{ThreadID: "rr", MessageID: "rr-1", Direction: history.Inbound,
			From: "ada@example.com", SentAt: h0, Text: "Look it up."})
		bigArgs := `{"q":"` + strings.Repeat("z", StoredPayloadLimit) + `"}`
		c0, _ := runtime.NewToolCall("c0", "search", map[string]string{"q": "one"})
		c1 := runtime.ToolCall{ID: "c1", Name: "search", Input: json.RawMessage(bigArgs)}
		src := Owner{Type: OwnerMessage, ID: seq}
		for turn, calls := range [][]runtime.ToolCall{{c0, c1}, {c0}} {
			results := make([]Result, len(calls))
			for i := range calls {
				results[i] = Result{Content: "result " + itoa(turn) + "/" + itoa(i), Succeeded: true}
			}
			if _, err := s.RecordRound(ctx, Round{Owner: src, Persona: "p", RunID: "run-1", TurnIndex: turn,
				Calls: calls, Results: results}); err != nil {
				t.Fatal(err)
			}
		}
		run := startScheduled(t, s, "p", "daily")
		if _, err := s.RecordRound(ctx, Round{Owner: Owner{Type: OwnerRun, ID: run.ID}, Persona: "p",
			RunID: "sched", Calls: []runtime.ToolCall{c0}, Results: []Result{{Content: "x", Succeeded: true}}}); err != nil {
			t.Fatal(err)
		}
		inv := &runtime.Invocation{Inbound: &runtime.Inbound{ThreadID: "rr", MessageID: "now"}}
		out, err := (&runtime.ThreadHistory{Source: s}).Resolve(ctx, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := runtime.Validate(out); err != nil {
			t.Fatal(err)
		}
		if len(out) != 1+3+2 {
			t.Fatalf("replay has %d messages, want 6: %s", len(out), transcript.Print(out))
		}
		calls := out[1].ToolCalls
		if len(calls) != 2 || calls[0].ID != "c0" || string(calls[0].Input) != `{"q":"one"}` {
			t.Fatalf("first round calls: %+v", calls)
		}
		var wrapped map[string]string
		if err := json.Unmarshal(calls[1].Input, &wrapped); err != nil || !strings.HasSuffix(wrapped[runtime.ClippedArgumentsKey], runtime.TruncationMarker) {
			t.Errorf("clipped arguments should replay wrapped, got %.80s (%v)", calls[1].Input, err)
		}
		if out[2].Text != "result 0/0" || out[3].Text != "result 0/1" || out[5].Text != "result 1/0" {
			t.Errorf("results out of order: %q %q %q", out[2].Text, out[3].Text, out[5].Text)
		}
	})
}
