package store

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/historytest"
	"github.com/personagen/personagen/runtime/store/storetest"
	"github.com/personagen/personagen/runtime/transcript"
)

var h0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// truncationMarker ends a text runtime.Clip cut short.
const truncationMarker = "…[truncated]"

const histThread = "thread-h"

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
	return &runtime.Invocation{Inbound: &history.Message{ThreadID: histThread, MessageID: "current"}}
}

// replayWith runs [ThreadSummary, ThreadHistory] over src and checks Validate.
func replayWith(t testing.TB, src history.Source, h runtime.ThreadHistory) []chat.Message {
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
	if err := chat.Validate(out); err != nil {
		t.Fatalf("replay fails Validate: %v", err)
	}
	return out
}

func jsonBytes(t testing.TB, msgs []chat.Message) []byte {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// historyWriter stores the conformance suite's fixtures through the store's own write API:
// AppendMessage, RecordRound (one call per round) and Compact.
type historyWriter struct{ s *Store }

func (w historyWriter) AppendMessage(ctx context.Context, m history.Message) (int64, error) {
	a, err := w.s.AppendMessage(ctx, Message{Message: m})
	return a.Seq, err
}

func (w historyWriter) RecordToolUses(ctx context.Context, messageSeq int64, uses ...history.ToolUse) error {
	for start := 0; start < len(uses); {
		end := start + 1
		for end < len(uses) && uses[end].RunID == uses[start].RunID && uses[end].TurnIndex == uses[start].TurnIndex {
			end++
		}
		r := Round{Owner: Owner{Type: OwnerMessage, ID: messageSeq}, Persona: "historytest",
			RunID: uses[start].RunID, TurnIndex: uses[start].TurnIndex}
		for i, u := range uses[start:end] {
			if !u.HasResult {
				return fmt.Errorf("the store records every call with its result: %w", errors.ErrUnsupported)
			}
			if u.Position != i {
				return fmt.Errorf("use %+v: position %d, want %d (RecordRound numbers calls itself)", u, u.Position, i)
			}
			r.Calls = append(r.Calls, chat.ToolCall{ID: u.ToolCallID, Name: u.ToolName, Input: json.RawMessage(u.Arguments)})
			r.Results = append(r.Results, Result{Content: u.Result, Succeeded: u.Succeeded})
		}
		if _, err := w.s.RecordRound(ctx, r); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (w historyWriter) SetCompaction(ctx context.Context, c history.Compaction) error {
	res, err := w.s.Compact(ctx, c.ThreadID, c.BoundarySeq, runtime.SummarizerFunc(func(context.Context, runtime.SummaryInput) (string, error) {
		return c.Summary, nil
	}))
	switch {
	case err != nil:
		return err
	case res.Outcome != CompactCompleted:
		return fmt.Errorf("compact %s at %d: outcome %s", c.ThreadID, c.BoundarySeq, res.Outcome)
	case res.Compaction.BoundaryMessageID != c.BoundaryMessageID:
		return fmt.Errorf("compact %s at %d: boundary message %q, want %q", c.ThreadID, c.BoundarySeq,
			res.Compaction.BoundaryMessageID, c.BoundaryMessageID)
	}
	return nil
}

// The store passes the history-source conformance suite on SQLite and MySQL/MariaDB.
func TestConformance(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		historytest.Run(t, s, historyWriter{s})
	})
}

// countingStore opens a second Store on s's database whose round trips are counted (see
// storetest.CountTrips); History runs no transaction, so each is one query.
func countingStore(t testing.TB, s *Store, dsn string) (*Store, *atomic.Int64) {
	t.Helper()
	cs, n, _ := loggingStore(t, dsn)
	return cs, n
}

// loggingStore opens a Store on dsn's database whose round trips are counted and whose queries
// are recorded.
func loggingStore(t testing.TB, dsn string) (*Store, *atomic.Int64, *storetest.QueryLog) {
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
		conn = dsnConnector{dsn: p.sqlite, driver: &sqlite.Driver{}}
	}
	n, log := new(atomic.Int64), &storetest.QueryLog{}
	db := sqlx.NewDb(sql.OpenDB(storetest.CountTrips(conn, n, log)), p.dialect.driverName())
	cs, err := OpenDB(db, WithOptimizeInterval(0), withClockSync(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	n.Store(0) // the clock's measurement at open is not the calls under test
	log.Take()
	return cs, n, log
}

// eachDBWithDSN is eachDB that also hands f the store's DSN.
func eachDBWithDSN(t *testing.T, f func(t *testing.T, s *Store, dsn string)) {
	t.Helper()
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			dsn := migratedDSN(t, d)
			s := openMigrated(t, dsn)
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
		m := Message{Message: history.Message{ThreadID: thread, MessageID: thread + "-" + itoa(i), Direction: history.Inbound,
			From: "ada@example.com", To: []string{"support@acme.test"}, Subject: "S", Date: h0.Add(time.Duration(i) * time.Second),
			Text: "message " + itoa(i)}}
		if i%2 == 1 {
			m.Direction = history.Outbound
		}
		if i%3 == 0 {
			m.Attachments = []history.Attachment{{ID: "a" + itoa(i), Filename: "f.txt", ContentType: "text/plain", Size: 1}}
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
			{"short", history.Query{ToolUses: true}, 2},
			{"long", history.Query{ToolUses: true}, 2},
			{"long", history.Query{ToolUses: true, Limit: 50}, 2},
			{"long", history.Query{ToolUses: true, Limit: 50, AfterSeq: 20}, 2},
			{"long", history.Query{Limit: 50}, 1},
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
		// A whole replay through the resolvers: one for the compaction, two for the window (its
		// messages with their attachments, and its tool uses).
		before := n.Load()
		inv := &runtime.Invocation{Inbound: &history.Message{ThreadID: "long", MessageID: "x"}}
		out, err := runtime.NewChain(
			runtime.Step{Resolver: &runtime.ThreadSummary{Source: cs}},
			runtime.Step{Resolver: &runtime.ThreadHistory{Source: cs, Limit: runtime.NoLimit}},
		).Resolve(ctx, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Load() - before; got != 3 {
			t.Errorf("summary + history replay: %d queries, want 3", got)
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
				runtime.Step{Resolver: runtime.ResolverFunc(func(_ context.Context, _ *runtime.Invocation, dst []chat.Message) ([]chat.Message, error) {
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
		seq := mustAppend(t, s, Message{Message: history.Message{ThreadID: "rr", MessageID: "rr-1", Direction: history.Inbound,
			From: "ada@example.com", Date: h0, Text: "Look it up."}})
		bigArgs := `{"q":"` + strings.Repeat("z", StoredPayloadLimit) + `"}`
		c0, _ := chat.NewToolCall("c0", "search", map[string]string{"q": "one"})
		c1 := chat.ToolCall{ID: "c1", Name: "search", Input: json.RawMessage(bigArgs)}
		src := Owner{Type: OwnerMessage, ID: seq}
		for turn, calls := range [][]chat.ToolCall{{c0, c1}, {c0}} {
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
			RunID: "sched", Calls: []chat.ToolCall{c0}, Results: []Result{{Content: "x", Succeeded: true}}}); err != nil {
			t.Fatal(err)
		}
		inv := &runtime.Invocation{Inbound: &history.Message{ThreadID: "rr", MessageID: "now"}}
		out, err := (&runtime.ThreadHistory{Source: s}).Resolve(ctx, inv, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := chat.Validate(out); err != nil {
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
		if err := json.Unmarshal(calls[1].Input, &wrapped); err != nil || !strings.HasSuffix(wrapped["_clipped_arguments"], truncationMarker) {
			t.Errorf("clipped arguments should replay wrapped, got %.80s (%v)", calls[1].Input, err)
		}
		if out[2].Text != "result 0/0" || out[3].Text != "result 0/1" || out[5].Text != "result 1/0" {
			t.Errorf("results out of order: %q %q %q", out[2].Text, out[3].Text, out[5].Text)
		}
	})
}
