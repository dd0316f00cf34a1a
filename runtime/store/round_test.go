package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
)

// testRound returns a round of n calls for src; call i is "tool_i" with arguments {"i":i}.
func testRound(src Owner, runID string, turn, n int) Round {
	r := Round{Owner: src, Persona: "support-agent", RunID: runID, TurnIndex: turn}
	for i := range n {
		r.Calls = append(r.Calls, chat.ToolCall{
			ID: fmt.Sprintf("call_%d", i), Name: fmt.Sprintf("tool_%d", i), Input: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)),
		})
		r.Results = append(r.Results, Result{Content: fmt.Sprintf(`{"ok":%d}`, i), Succeeded: i%2 == 0})
	}
	return r
}

// messageSource appends a message to a new thread and returns it as a round owner.
func messageSource(t *testing.T, s *Store, thread string) Owner {
	t.Helper()
	return Owner{OwnerMessage, mustAppend(t, s, msg(thread, thread+"-in", baseTime))}
}

// storedRows reads the round rows of src, by position.
func storedRows(t *testing.T, s *Store, r Round) []toolUseRow {
	t.Helper()
	rows, err := s.storedRound(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestRecordRoundStoresOneRowPerCallInOrder(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		src := messageSource(t, s, "t")
		r := testRound(src, "run-1", 0, 3)
		r.Calls[1].Input = nil // an absent input is stored as {}
		out, err := s.RecordRound(context.Background(), r)
		if err != nil || out != Stored {
			t.Fatalf("RecordRound = %v, %v; want stored", out, err)
		}
		rows := storedRows(t, s, r)
		none := sql.NullString{String: "", Valid: true}
		want := []toolUseRow{
			{none, none, "support-agent", 0, "call_0", "tool_0", `{"i":0}`, `{"ok":0}`, true},
			{sql.NullString{}, sql.NullString{}, "support-agent", 1, "call_1", "tool_1", `{}`, `{"ok":1}`, false},
			{sql.NullString{}, sql.NullString{}, "support-agent", 2, "call_2", "tool_2", `{"i":2}`, `{"ok":2}`, true},
		}
		if fmt.Sprint(rows) != fmt.Sprint(want) {
			t.Errorf("stored rows\n%v\nwant\n%v", rows, want)
		}
		if n := countRows(t, s, "tool_uses", "thread_id = ? AND owner_id = ?", "t", src.ID); n != 3 {
			t.Errorf("rows carrying the thread id = %d, want 3", n)
		}
	})
}

func TestRecordRoundRetryAfterCommitAddsNothing(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, 4)
		if out, err := s.RecordRound(context.Background(), r); err != nil || out != Stored {
			t.Fatalf("first RecordRound = %v, %v", out, err)
		}
		for i := range 3 {
			out, err := s.RecordRound(context.Background(), r)
			if err != nil || out != AlreadyStored {
				t.Fatalf("retry %d = %v, %v; want already stored", i, out, err)
			}
		}
		if n := countRows(t, s, "tool_uses", ""); n != 4 {
			t.Errorf("%d rows after retries, want 4", n)
		}
		// The same calls in another turn are another round.
		if out, err := s.RecordRound(context.Background(), testRound(r.Owner, "run-1", 1, 4)); err != nil || out != Stored {
			t.Errorf("next turn = %v, %v; want stored", out, err)
		}
	})
}

func TestRecordRoundDifferingRetryConflictsAndKeepsStoredRows(t *testing.T) {
	cases := []struct {
		name     string
		edit     func(*Round)
		position int
		field    string
	}{
		{"different result", func(r *Round) { r.Results[1].Content = "other" }, 1, "result"},
		{"different success", func(r *Round) { r.Results[2].Succeeded = !r.Results[2].Succeeded }, 2, "succeeded"},
		{"different arguments", func(r *Round) { r.Calls[0].Input = json.RawMessage(`{"i":99}`) }, 0, "arguments"},
		{"different tool name", func(r *Round) { r.Calls[2].Name = "renamed" }, 2, "tool_name"},
		{"different call id", func(r *Round) { r.Calls[0].ID = "call_x" }, 0, "tool_call_id"},
		{"different persona", func(r *Round) { r.Persona = "other-agent" }, 0, "persona"},
		{"fewer calls", func(r *Round) { r.Calls, r.Results = r.Calls[:2], r.Results[:2] }, -1, "calls"},
		{"more calls", func(r *Round) { *r = testRound(r.Owner, r.RunID, r.TurnIndex, 4) }, -1, "calls"},
	}
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, 3)
		if _, err := s.RecordRound(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		before := storedRows(t, s, r)
		for _, c := range cases {
			retry := testRound(r.Owner, r.RunID, r.TurnIndex, 3)
			c.edit(&retry)
			out, err := s.RecordRound(context.Background(), retry)
			var ce *ConflictError
			if !errors.Is(err, ErrConflict) || !errors.As(err, &ce) {
				t.Errorf("%s: RecordRound = %v, %v; want a *ConflictError", c.name, out, err)
				continue
			}
			if ce.Position != c.position || ce.Field != c.field {
				t.Errorf("%s: conflict at position %d field %s, want %d %s", c.name, ce.Position, ce.Field, c.position, c.field)
			}
			if after := storedRows(t, s, r); fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("%s: stored rows changed\n%v\nto\n%v", c.name, before, after)
			}
		}
	})
}

func TestRecordRoundConcurrentRetriesLeaveExactlyOneCopy(t *testing.T) {
	const goroutines, calls = 16, 8
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, calls)
		var wg sync.WaitGroup
		outcomes := make([]Outcome, goroutines)
		errs := make([]error, goroutines)
		start := make(chan struct{})
		for g := range goroutines {
			wg.Go(func() {
				<-start
				outcomes[g], errs[g] = s.RecordRound(context.Background(), r)
			})
		}
		close(start)
		wg.Wait()
		stored := 0
		for g := range goroutines {
			if errs[g] != nil {
				t.Errorf("goroutine %d: %v", g, errs[g])
			}
			if outcomes[g] == Stored {
				stored++
			}
		}
		if stored != 1 {
			t.Errorf("%d goroutines stored the round, want exactly 1", stored)
		}
		if n := countRows(t, s, "tool_uses", ""); n != calls {
			t.Errorf("%d rows, want %d", n, calls)
		}
	})
}

func TestRecordRoundClipsAHugeResult(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, 2)
		r.Results[0].Content = strings.Repeat("a", 1<<20)                    // 1 MB of ASCII
		r.Results[1].Content = strings.Repeat(fourByte, 1<<20/len(fourByte)) // 1 MB of mostly 4-byte characters
		r.Calls[1].Input = json.RawMessage(`{"q":"` + strings.Repeat("😀", 20000) + `"}`)
		if _, err := s.RecordRound(context.Background(), r); err != nil {
			t.Fatalf("RecordRound: %v", err)
		}
		rows := storedRows(t, s, r)
		for _, p := range []struct{ name, got, src string }{
			{"ascii result", rows[0].Result, r.Results[0].Content},
			{"4-byte result", rows[1].Result, r.Results[1].Content},
			{"4-byte arguments", rows[1].Arguments, string(r.Calls[1].Input)},
		} {
			if n := utf8.RuneCountInString(p.got); n != StoredPayloadLimit {
				t.Errorf("%s: %d characters stored, want %d", p.name, n, StoredPayloadLimit)
			}
			if want := runtime.Clip(p.src, StoredPayloadLimit); p.got != want {
				t.Errorf("%s: stored text differs from runtime.Clip's (len %d vs %d)", p.name, len(p.got), len(want))
			}
			if !strings.HasSuffix(p.got, truncationMarker) || !utf8.ValidString(p.got) {
				t.Errorf("%s: stored text lacks the marker or is not UTF-8", p.name)
			}
		}
	})
}

func TestRecordRoundRoundTripsFourByteCharacters(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-"+fourByte, 0, 1)
		r.Calls[0].Input = json.RawMessage(`{"q":"` + fourByte + `"}`)
		r.Calls[0].ID = "call-😀"
		r.Results[0].Content = fourByte + "\x00 nul kept"
		if _, err := s.RecordRound(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		got := storedRows(t, s, r)[0]
		if got.Arguments != string(r.Calls[0].Input) || got.Result != r.Results[0].Content || got.ToolCallID != r.Calls[0].ID {
			t.Errorf("stored %q / %q / %q, want byte-identical input", got.Arguments, got.Result, got.ToolCallID)
		}
		if out, err := s.RecordRound(context.Background(), r); err != nil || out != AlreadyStored {
			t.Errorf("retry = %v, %v; want already stored (4-byte text compares equal)", out, err)
		}
	})
}

func TestRecordRoundRedactsBeforeClipping(t *testing.T) {
	const secret = "sk-SECRET-KEY"
	redact := func(tool string, kind PayloadKind, p string) string {
		return strings.ReplaceAll(p, secret, "[redacted "+string(kind)+" of "+tool+"]")
	}
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, 1)
		r.Calls[0].Input = json.RawMessage(`{"key":"` + secret + `"}`)
		// The secret straddles the clip boundary: clipping first would keep half of it.
		r.Results[0].Content = strings.Repeat("x", StoredPayloadLimit-15) + secret + strings.Repeat("y", 100)
		if _, err := s.RecordRound(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		got := storedRows(t, s, r)[0]
		if got.Arguments != `{"key":"[redacted arguments of tool_0]"}` {
			t.Errorf("arguments = %q", got.Arguments)
		}
		if strings.Contains(got.Result, "sk-") || utf8.RuneCountInString(got.Result) != StoredPayloadLimit {
			t.Errorf("result keeps part of the secret or has the wrong length: ...%q", got.Result[len(got.Result)-40:])
		}
	}, WithRedact(redact))
}

func TestRecordRoundReplacesInvalidUTF8(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, 1)
		r.Results[0].Content = "ok \xff\xfe bytes"
		if _, err := s.RecordRound(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		if got := storedRows(t, s, r)[0].Result; got != "ok \uFFFD bytes" {
			t.Errorf("result = %q, want invalid bytes replaced", got)
		}
	})
}

func TestRecordRoundFailingMidwayLeavesNoRows(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, 5)
		s.hooks = &roundHooks{args: func(args []any) {
			args[len(args)-3] = nil // the last row's tool name: a NOT NULL violation
		}}
		_, err := s.RecordRound(context.Background(), r)
		if err == nil || isDuplicateKey(err) || errors.Is(err, ErrConflict) {
			t.Fatalf("RecordRound with a NULL tool name = %v, want the database's NOT NULL error", err)
		}
		if n := countRows(t, s, "tool_uses", ""); n != 0 {
			t.Errorf("%d rows of the failed round stored, want 0", n)
		}
		s.hooks = nil
		if out, err := s.RecordRound(context.Background(), r); err != nil || out != Stored {
			t.Errorf("RecordRound after the failure = %v, %v; want stored", out, err)
		}
	})
}

func TestRecordRoundConnectionKilledBeforeCommitLeavesNoRows(t *testing.T) {
	s := newTestStore(t, DialectMySQL)
	ctx := context.Background()
	r := testRound(messageSource(t, s, "t"), "run-1", 0, 8)
	s.hooks = &roundHooks{afterInsert: func(ctx context.Context, tx *sqlx.Tx) error {
		var id int64
		if err := tx.GetContext(ctx, &id, "SELECT CONNECTION_ID()"); err != nil {
			return err
		}
		var inTx int
		if err := tx.GetContext(ctx, &inTx, "SELECT COUNT(*) FROM tool_uses"); err != nil || inTx != 8 {
			return fmt.Errorf("rows visible inside the transaction = %d, %v; want 8", inTx, err)
		}
		_, err := s.DB().ExecContext(ctx, fmt.Sprintf("KILL %d", id)) // from another connection
		return err
	}}
	_, err := s.RecordRound(ctx, r)
	if err == nil {
		t.Fatal("RecordRound with its connection killed before COMMIT succeeded")
	}
	if n := countRows(t, s, "tool_uses", ""); n != 0 {
		t.Errorf("%d rows survived the killed transaction, want 0", n)
	}
	s.hooks = nil
	if out, err := s.RecordRound(ctx, r); err != nil || out != Stored {
		t.Errorf("RecordRound after the kill = %v, %v; want stored", out, err)
	}
}

func TestRecordRoundRejectsInvalidRoundsBeforeWriting(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Round)
		want error
	}{
		{"more results than calls", func(r *Round) { r.Results = append(r.Results, Result{}) }, ErrInvalidRound},
		{"fewer results than calls", func(r *Round) { r.Results = r.Results[:1] }, ErrInvalidRound},
		{"no calls", func(r *Round) { r.Calls, r.Results = nil, nil }, ErrInvalidRound},
		{"too many calls", func(r *Round) { *r = testRound(r.Owner, r.RunID, 0, MaxRoundCalls+1) }, ErrInvalidRound},
		{"unknown owner type", func(r *Round) { r.Owner.Type = "email" }, ErrInvalidRound},
		{"negative turn", func(r *Round) { r.TurnIndex = -1 }, ErrInvalidRound},
		{"turn beyond the column's 32 bits (MySQL INT would refuse it, SQLite would not)", func(r *Round) { r.TurnIndex = 1 << 31 }, ErrInvalidRound},
		{"empty run id", func(r *Round) { r.RunID = "" }, ErrInvalidRound},
		{"run id ending in a space", func(r *Round) { r.RunID = "run-1 " }, ErrInvalidRound},
		{"empty persona", func(r *Round) { r.Persona = "" }, ErrInvalidRound},
		{"empty tool name", func(r *Round) { r.Calls[0].Name = "" }, ErrInvalidRound},
		{"tool call id over 255 characters", func(r *Round) { r.Calls[1].ID = strings.Repeat("i", 256) }, ErrInvalidRound},
		{"unknown message", func(r *Round) { r.Owner.ID += 1000 }, ErrUnknownOwner},
		{"unknown run", func(r *Round) { r.Owner = Owner{OwnerRun, 424242} }, ErrUnknownOwner},
	}
	eachDB(t, func(t *testing.T, s *Store) {
		src := messageSource(t, s, "t")
		for _, c := range cases {
			r := testRound(src, "run-1", 0, 3)
			c.edit(&r)
			if _, err := s.RecordRound(context.Background(), r); !errors.Is(err, c.want) {
				t.Errorf("%s: error = %v, want %v", c.name, err, c.want)
			}
		}
		if n := countRows(t, s, "tool_uses", ""); n != 0 {
			t.Errorf("%d rows written by invalid rounds, want 0", n)
		}
	})
}

func TestRecordRoundForScheduledRunHasNoThread(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		id := startScheduled(t, s, "support-agent", "daily-digest").ID
		r := testRound(Owner{OwnerRun, id}, "run-1", 0, 2)
		if out, err := s.RecordRound(context.Background(), r); err != nil || out != Stored {
			t.Fatalf("RecordRound = %v, %v", out, err)
		}
		if n := countRows(t, s, "tool_uses", "owner_type = 'run' AND owner_id = ? AND thread_id IS NULL", id); n != 2 {
			t.Errorf("%d thread-less rows for the run, want 2", n)
		}
	})
}

// A round keeps its assistant message's text and provider state; Rounds reads a run's rounds
// back in turn order exactly as recorded, for a resumed run to replay.
func TestRoundsReadBackARunsRoundsWithTextAndState(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		owner := messageSource(t, s, "t")
		state := []chat.ProviderState{
			{Provider: "anthropic", Data: json.RawMessage(`{"type": "thinking", "thinking": "a <b> & c", "signature": "sig=="}`)},
			{Provider: "anthropic", Data: json.RawMessage(`{"type":"redacted_thinking","data":"` + fourByte + `"}`)},
		}
		r0 := testRound(owner, "run-1", 0, 2)
		r0.Text, r0.State = "Let me look that up. "+fourByte, state
		r1 := testRound(owner, "run-1", 1, 1)
		other := testRound(owner, "run-2", 0, 1)
		for _, r := range []Round{r1, r0, other} { // recorded out of turn order
			if out, err := s.RecordRound(ctx, r); err != nil || out != Stored {
				t.Fatalf("RecordRound(turn %d) = %v, %v", r.TurnIndex, out, err)
			}
		}
		got, err := s.Rounds(ctx, owner, "run-1")
		if err != nil || len(got) != 2 {
			t.Fatalf("Rounds = %+v, %v; want 2 rounds", got, err)
		}
		for i, want := range []Round{r0, r1} {
			g := got[i]
			if g.Owner != want.Owner || g.Persona != want.Persona || g.RunID != want.RunID || g.TurnIndex != want.TurnIndex ||
				g.Text != want.Text || len(g.State) != len(want.State) || fmt.Sprint(g.Results) != fmt.Sprint(want.Results) {
				t.Errorf("round %d = %+v\nwant %+v", i, g, want)
			}
			for j := range want.State {
				if g.State[j].Provider != want.State[j].Provider || !bytes.Equal(g.State[j].Data, want.State[j].Data) {
					t.Errorf("round %d state %d = %s %s, want the bytes %s %s", i, j, g.State[j].Provider, g.State[j].Data,
						want.State[j].Provider, want.State[j].Data)
				}
			}
			for j, c := range want.Calls {
				if !g.Calls[j].Equal(c) {
					t.Errorf("round %d call %d = %+v, want %+v", i, j, g.Calls[j], c)
				}
			}
		}
		if out, err := s.RecordRound(ctx, r0); err != nil || out != AlreadyStored {
			t.Errorf("identical retry = %v, %v; want already stored", out, err)
		}
		changed := r0
		changed.State = state[:1]
		var c *ConflictError
		if _, err := s.RecordRound(ctx, changed); !errors.As(err, &c) || c.Field != "state" || c.Position != 0 {
			t.Errorf("retry with other state: %v; want a conflict on state at position 0", err)
		}
		changed = r0
		changed.Text = "other"
		if _, err := s.RecordRound(ctx, changed); !errors.As(err, &c) || c.Field != "text" {
			t.Errorf("retry with other text: %v; want a conflict on text", err)
		}
		if none, err := s.Rounds(ctx, owner, "no-such-run"); err != nil || len(none) != 0 {
			t.Errorf("Rounds(unknown run) = %+v, %v; want none", none, err)
		}
		bad := testRound(owner, "run-3", 0, 1)
		for name, edit := range map[string]func(*Round){
			"over-long text":     func(r *Round) { r.Text = strings.Repeat("x", MaxRoundTextBytes+1) },
			"invalid UTF-8 text": func(r *Round) { r.Text = "\xff" },
			"state not JSON":     func(r *Round) { r.State = []chat.ProviderState{{Provider: "p", Data: json.RawMessage(`{`)}} },
			"over-long state": func(r *Round) {
				r.State = []chat.ProviderState{{Provider: "p", Data: json.RawMessage(`"` + strings.Repeat("s", MaxRoundStateBytes) + `"`)}}
			},
		} {
			r := bad
			edit(&r)
			if _, err := s.RecordRound(ctx, r); !errors.Is(err, ErrInvalidRound) {
				t.Errorf("%s: error = %v, want ErrInvalidRound", name, err)
			}
		}
		if n := countRows(t, s, "tool_uses", "run_id = 'run-3'"); n != 0 {
			t.Errorf("%d rows of refused rounds", n)
		}
	})
}

// The largest round the limits allow — 100 calls whose arguments and results are 16,000
// four-byte characters, text and state at their limits, all of it needing the most escaping —
// is one INSERT under MariaDB's default 16 MiB max_allowed_packet, on both dialects.
func TestLargestAllowedRoundIsStored(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		r := testRound(messageSource(t, s, "t"), "run-1", 0, MaxRoundCalls)
		big := strings.Repeat("😀", StoredPayloadLimit)
		for i := range r.Calls {
			r.Calls[i].Input = json.RawMessage(`"` + big + `"`)
			r.Results[i].Content = big
		}
		r.Text = strings.Repeat("'", MaxRoundTextBytes)
		// Data of backslashes: each is 2 bytes of JSON string, then 2 again when escaped in SQL.
		data := `"` + strings.Repeat(`\\`, (MaxRoundStateBytes-40)/4) + `"`
		r.State = []chat.ProviderState{{Provider: "p", Data: json.RawMessage(data)}}
		if out, err := s.RecordRound(context.Background(), r); err != nil || out != Stored {
			t.Fatalf("RecordRound(the largest round) = %v, %.300v", out, err)
		}
		got, err := s.Rounds(context.Background(), r.Owner, r.RunID)
		if err != nil || len(got) != 1 || got[0].Text != r.Text || string(got[0].State[0].Data) != data ||
			got[0].Results[99].Content != big {
			t.Fatalf("the largest round did not read back (%v)", err)
		}
	})
}
