package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
)

// planStep is one table access of a query plan, as both databases' EXPLAIN output is reduced to
// for the plan tests: the table (or alias), the index used ("" for none), whether the access
// reads the index alone, and on MariaDB (ANALYZE executes the query) the rows it really read.
type planStep struct {
	Table     string
	Index     string
	Access    string // SQLite: SEARCH / SCAN; MariaDB: access_type (ref, range, eq_ref, ALL, …)
	IndexOnly bool
	Rows      float64 // rows read (MariaDB r_rows × r_loops); -1 when unknown
	Detail    string  // the database's own words, for failure messages
}

// queryPlan is a query's plan: its table accesses and whether it sorts or uses a temporary
// table.
type queryPlan struct {
	Steps     []planStep
	Sorts     bool // SQLite "USE TEMP B-TREE FOR ORDER BY"; MariaDB filesort
	Temporary bool
	Raw       string
}

// explain returns the plan of query on s's database: SQLite's EXPLAIN QUERY PLAN, MariaDB's
// ANALYZE FORMAT=JSON (which runs the query and reports the rows each access read).
func explain(tb testing.TB, s *Store, query string, args ...any) queryPlan {
	tb.Helper()
	ctx := context.Background()
	if s.dialect == DialectSQLite {
		rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+query, args...)
		if err != nil {
			tb.Fatalf("EXPLAIN QUERY PLAN %s: %v", query, err)
		}
		defer rows.Close()
		var p queryPlan
		var raw []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				tb.Fatal(err)
			}
			raw = append(raw, detail)
			p.Steps = append(p.Steps, sqliteStep(detail)...)
			if strings.Contains(detail, "TEMP B-TREE") {
				p.Sorts = true
			}
		}
		if err := rows.Err(); err != nil {
			tb.Fatal(err)
		}
		p.Raw = strings.Join(raw, "\n")
		return p
	}
	var out string
	if err := s.db.GetContext(ctx, &out, "ANALYZE FORMAT=JSON "+query, args...); err != nil {
		tb.Fatalf("ANALYZE FORMAT=JSON %s: %v", query, err)
	}
	var doc any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		tb.Fatalf("ANALYZE output: %v\n%s", err, out)
	}
	p := queryPlan{Raw: out}
	mariaSteps(doc, &p)
	return p
}

// sqliteStep parses one EXPLAIN QUERY PLAN line ("SEARCH m USING INDEX x (thread_id=?)",
// "SCAN t", "SEARCH a USING COVERING INDEX x (…)", "SEARCH t USING INTEGER PRIMARY KEY (…)").
func sqliteStep(detail string) []planStep {
	f := strings.Fields(detail)
	if len(f) < 2 || (f[0] != "SEARCH" && f[0] != "SCAN") || f[1] == "CONSTANT" {
		return nil
	}
	st := planStep{Access: f[0], Table: f[1], Rows: -1, Detail: detail}
	if i := strings.Index(detail, "USING "); i >= 0 {
		rest := strings.Fields(detail[i+len("USING "):])
		switch {
		case len(rest) >= 3 && rest[0] == "COVERING" && rest[1] == "INDEX":
			st.Index, st.IndexOnly = rest[2], true
		case len(rest) >= 2 && rest[0] == "INDEX":
			st.Index = rest[1]
		case len(rest) >= 3 && rest[0] == "INTEGER" && rest[1] == "PRIMARY":
			st.Index = "PRIMARY"
		}
	}
	return []planStep{st}
}

// mariaSteps collects every table access of a MariaDB ANALYZE FORMAT=JSON document.
func mariaSteps(v any, p *queryPlan) {
	switch v := v.(type) {
	case map[string]any:
		if name, ok := v["table_name"].(string); ok {
			st := planStep{Table: name, Rows: -1, Detail: fmt.Sprint(v["access_type"], " ", v["key"])}
			st.Access, _ = v["access_type"].(string)
			st.Index, _ = v["key"].(string)
			st.IndexOnly, _ = v["using_index"].(bool)
			if r, ok := v["r_rows"].(float64); ok {
				loops, _ := v["r_loops"].(float64)
				st.Rows = r * max(loops, 1)
			}
			p.Steps = append(p.Steps, st)
		}
		for k, c := range v {
			switch k {
			case "filesort", "read_sorted_file":
				p.Sorts = true
			case "temporary_table":
				p.Temporary = true
			}
			mariaSteps(c, p)
		}
	case []any:
		for _, c := range v {
			mariaSteps(c, p)
		}
	}
}

// planExpect says, per table a history query reads (by name or alias), which indexes may serve
// it and the SQLite index constraint the access must use (a prefix of the index's columns).
var planExpect = map[string]struct {
	indexes []string
	uses    []string // SQLite: one of these must appear in the access's detail
}{
	"messages":    {[]string{indexThreadWindow}, []string{"thread_id=?"}},
	"m":           {[]string{indexThreadWindow}, []string{"thread_id=?"}},
	"tool_uses":   {[]string{indexUsesOwner, indexUsesThread}, []string{"owner_type=? AND owner_id=?", "thread_id=?"}},
	"compactions": {[]string{"compactions_thread_status", "compactions_thread_boundary"}, []string{"thread_id=?"}},
}

// checkPlan fails t unless p reads every table through one of its expected indexes, sorts
// nothing, and (MariaDB, which reports the rows each access read) reads at most budget[table]
// rows of each table.
func checkPlan(t *testing.T, label, query string, p queryPlan, budget map[string]float64) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("%s: "+format+"\nquery: %s\nplan:\n%s", append([]any{label}, append(args, query, p.Raw)...)...)
	}
	if len(p.Steps) == 0 {
		fail("no table access found in the plan")
	}
	if p.Sorts || p.Temporary {
		fail("plan sorts or builds a temporary table")
	}
	count := strings.HasPrefix(strings.TrimSpace(query), "SELECT COUNT(*)")
	for _, st := range p.Steps {
		want, ok := planExpect[st.Table]
		if !ok {
			fail("unexpected table %s", st.Table)
			continue
		}
		if !slices.Contains(want.indexes, st.Index) {
			fail("%s read through %q (%s), want one of %v", st.Table, st.Index, st.Detail, want.indexes)
		}
		if st.Access == "SCAN" || st.Access == "ALL" || st.Access == "index" {
			fail("%s is scanned (%s)", st.Table, st.Detail)
		}
		if count && !st.IndexOnly {
			fail("the count reads %s rows, not the index alone (%s)", st.Table, st.Detail)
		}
		if st.Rows < 0 { // SQLite: the constraint on the index must be the thread or the keys
			if !slices.ContainsFunc(want.uses, func(u string) bool { return strings.Contains(st.Detail, u) }) {
				fail("%s access %q uses none of %v", st.Table, st.Detail, want.uses)
			}
			continue
		}
		if b := budget[tableOf(st.Table)]; st.Rows > b {
			fail("%s: read %.0f rows, want at most %.0f", st.Table, st.Rows, b)
		}
	}
}

func tableOf(alias string) string {
	switch alias {
	case "m":
		return "messages"
	}
	return alias
}

// TestHistoryQueryPlans pins the plans replay relies on, on a database of a few thousand rows
// whose threads are as skewed as a mailbox's (one of 3,000 messages, one of 100 spread thinly
// across the others, 300 of 10), before and after the planner has statistics: every query
// History and LatestCompaction run reads each table through the index it names, sorts nothing,
// and on MariaDB (ANALYZE FORMAT=JSON runs the query and counts) reads no more rows than the
// window holds — not the thread's, not the database's. It fails when a plan stops using its
// index, and when a query shape change lets a plan read past the window.
func TestHistoryQueryPlans(t *testing.T) {
	eachDBWithDSN(t, func(t *testing.T, s *Store, dsn string) {
		long := scaleThread{id: "long", n: 3000, keep: 76}
		sparse := scaleThread{id: "sparse", n: 100, keep: 76}
		threads := []scaleThread{long, sparse}
		for i := range 300 {
			threads = append(threads, scaleThread{id: "other-" + itoa(i), n: 10})
		}
		seeded := seedScale(t, s, threads)
		ls, _, log := loggingStore(t, dsn)
		ctx := context.Background()
		for _, stats := range []string{"no statistics", "statistics"} {
			if stats == "statistics" {
				analyze(t, s)
			}
			for _, th := range []scaleThread{long, sparse} {
				b := seeded[th.id].boundary
				seqs := seeded[th.id].seqs
				// The queries of a reply to the thread's newest message: the window of what the
				// store received before it.
				upTo := seqs[len(seqs)-1] - 1
				for _, c := range []struct {
					name string
					q    history.Query
				}{
					{"window", history.Query{ThreadID: th.id, ExcludeMessageID: th.lastID(), UpToSeq: upTo, ToolUses: true}},
					{"window after compaction", history.Query{ThreadID: th.id, ExcludeMessageID: th.lastID(), UpToSeq: upTo,
						ToolUses: true, AfterSeq: b, CountOmitted: true}},
					{"compaction read", history.Query{ThreadID: th.id, UpToSeq: b, Limit: history.NoLimit, ToolUses: true}},
				} {
					label := fmt.Sprintf("%s, %s thread, %s", stats, th.id, c.name)
					log.Take()
					w, err := ls.History(ctx, c.q)
					if err != nil {
						t.Fatal(err)
					}
					budget := map[string]float64{"messages": float64(max(len(w.Messages), w.Omitted) + 2)}
					for _, m := range w.Messages {
						budget["tool_uses"] += float64(len(m.ToolUses))
					}
					budget["tool_uses"]++
					queries := log.Take()
					want := 2 // the window (attachments are a column of its rows) and its tool uses
					if c.q.CountOmitted {
						want = 3
						if w.Omitted != th.keep-1-history.DefaultLimit {
							t.Errorf("%s: Omitted %d, want %d", label, w.Omitted, th.keep-1-history.DefaultLimit)
						}
					}
					if len(queries) != want {
						t.Errorf("%s: %d queries, want %d", label, len(queries), want)
					}
					for _, lq := range queries {
						checkPlan(t, label, lq.Text, explain(t, s, lq.Text, lq.Args...), budget)
					}
				}
				log.Take()
				if _, err := ls.LatestCompaction(ctx, th.id); err != nil {
					t.Fatal(err)
				}
				for _, lq := range log.Take() {
					checkPlan(t, stats+", latest compaction of "+th.id, lq.Text, explain(t, s, lq.Text, lq.Args...),
						map[string]float64{"compactions": 1})
				}
			}
		}
	})
}

// analyze gives the planner statistics of the whole database: ANALYZE on SQLite (what
// Optimize runs, without its analysis limit), ANALYZE TABLE of the history tables on MariaDB.
func analyze(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	stmts := []string{"ANALYZE"}
	if s.dialect == DialectMySQL {
		stmts = []string{"ANALYZE TABLE messages, tool_uses, compactions"}
	}
	for _, q := range stmts {
		rows, err := s.db.QueryContext(ctx, q) // ANALYZE TABLE answers with a result set
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		rows.Close()
	}
}

// Omitted is counted only when asked for, and then exactly: the selected messages before the
// window, without the excluded one wherever it lies.
func TestHistoryCountsOmittedOnlyWhenAsked(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		seedThread(t, s, "t", 120)
		seedThread(t, s, "u", 30) // another thread, interleaved after t, never counted
		ctx := context.Background()
		seqs := threadSeqs(t, s, "t")
		id := func(i int) string { return "t-" + itoa(i) }
		for _, c := range []struct {
			q    history.Query
			want int
		}{
			{history.Query{Limit: 50, CountOmitted: true}, 70},
			{history.Query{Limit: 50}, 0},
			{history.Query{Limit: 50, AfterSeq: seqs[9], CountOmitted: true}, 60},
			{history.Query{Limit: 50, AfterSeq: seqs[9], ExcludeMessageID: id(30), CountOmitted: true}, 59},  // before the window
			{history.Query{Limit: 50, AfterSeq: seqs[9], ExcludeMessageID: id(5), CountOmitted: true}, 60},   // before AfterSeq
			{history.Query{Limit: 50, AfterSeq: seqs[9], ExcludeMessageID: id(119), CountOmitted: true}, 59}, // the newest: the window moves back
			{history.Query{Limit: 50, AfterSeq: seqs[9], ExcludeMessageID: "u-3", CountOmitted: true}, 60},   // of another thread
			{history.Query{Limit: 50, AfterSeq: seqs[9], UpToSeq: seqs[99], CountOmitted: true}, 40},
			{history.Query{Limit: 200, CountOmitted: true}, 0},
		} {
			c.q.ThreadID = "t"
			w, err := s.History(ctx, c.q)
			if err != nil {
				t.Fatal(err)
			}
			if w.Omitted != c.want {
				t.Errorf("%+v: Omitted %d, want %d", c.q, w.Omitted, c.want)
			}
			for _, m := range w.Messages {
				if m.MessageID == c.q.ExcludeMessageID {
					t.Errorf("%+v: window holds the excluded message", c.q)
				}
			}
		}
	})
}

// A window of more than maxListedSeqs messages reads its tool uses by its seq range instead of
// listing its seqs: both ways give every message exactly its own tool uses and attachments,
// never a neighbouring thread's, and the newest 50 of a large window equal a 50-message window.
func TestHistoryLargeWindowsReadTheirOwnRows(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		big := scaleThread{id: "big", n: 2 * maxListedSeqs}
		seeded := seedScale(t, s, []scaleThread{big, {id: "beside", n: maxListedSeqs}})
		ctx := context.Background()
		all, err := s.History(ctx, history.Query{ThreadID: big.id, Limit: history.NoLimit, ToolUses: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(all.Messages) != big.n {
			t.Fatalf("%d messages, want %d", len(all.Messages), big.n)
		}
		for i, m := range all.Messages {
			if m.Seq != seeded[big.id].seqs[i] || m.MessageID != scaleMessageID(big.id, i) {
				t.Fatalf("message %d is %s (seq %d)", i, m.MessageID, m.Seq)
			}
			wantAtts, wantUses := 0, 0
			if i%7 == 3 {
				wantAtts = 1
			}
			if scaleHasRound(i) {
				wantUses = 3
			}
			if len(m.Attachments) != wantAtts || len(m.ToolUses) != wantUses {
				t.Fatalf("message %d: %d attachments, %d tool uses; want %d, %d", i, len(m.Attachments), len(m.ToolUses), wantAtts, wantUses)
			}
			for _, u := range m.ToolUses {
				if u.RunID != "run-"+itoa(int(m.Seq)) {
					t.Fatalf("message %d (seq %d) carries a tool use of run %s", i, m.Seq, u.RunID)
				}
			}
			for _, a := range m.Attachments {
				if a.ID != "att-"+itoa(int(m.Seq)) {
					t.Fatalf("message %d (seq %d) carries attachment %s", i, m.Seq, a.ID)
				}
			}
		}
		w, err := s.History(ctx, history.Query{ThreadID: big.id, ToolUses: true})
		if err != nil {
			t.Fatal(err)
		}
		tail := all.Messages[len(all.Messages)-len(w.Messages):]
		for _, ms := range [][]history.Message{w.Messages, tail} { // tool uses come in no particular order
			for _, m := range ms {
				slices.SortFunc(m.ToolUses, func(a, b history.ToolUse) int { return cmp.Compare(a.Seq, b.Seq) })
			}
		}
		if !reflect.DeepEqual(w.Messages, tail) {
			t.Error("the 50-message window differs from the newest 50 of the whole thread")
		}
	})
}

// TestSubjectLookupQueryPlan pins the plan of ThreadOf's subject lookup (runtime/mail's subject
// rule) on a mailbox of 3,000 messages, 600 of them one sender's under one subject key spread
// over two years, the rest under 240 other keys or none, before and after the planner has
// statistics: the lookup reads messages through (mailbox, subject_key, sent_at, seq), sorts
// nothing, and on MariaDB (ANALYZE runs the query) reads one row of the index — not the key's
// 600, not the mailbox's 3,000 — and the answer is the newest in the window.
func TestSubjectLookupQueryPlan(t *testing.T) {
	eachDBWithDSN(t, func(t *testing.T, s *Store, dsn string) {
		ctx := context.Background()
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		var rows [][]any
		for i := range 3000 {
			key := any(nil)
			switch {
			case i%5 == 0:
				key = "hot-key"
			case i%5 != 4:
				key = fmt.Sprintf("key-%03d", i%240)
			}
			at := start.Add(time.Duration(i%730) * 24 * time.Hour) // sent_at does not follow seq
			thread := fmt.Sprintf("support/t%d", i)
			rows = append(rows, []any{thread, thread, "support", fmt.Sprintf("m%d@x", i), "inbound", "Ada <ada@example.com>",
				`["support@acme.test"]`, "[]", "Re: s", s.dialect.timeArg(at), "x", "", key})
		}
		tx, err := s.db.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < len(rows); b += 200 {
			part := rows[b:min(b+200, len(rows))]
			vals := make([]string, len(part))
			var args []any
			for i, r := range part {
				vals[i] = "(" + placeholders(13) + ")"
				args = append(args, r...)
			}
			if _, err := tx.ExecContext(ctx, s.dialect.rebind(`INSERT INTO messages (thread_id, thread_start, mailbox, message_id,
				direction, sender, recipients, cc, subject, sent_at, text_body, html_body, subject_key) VALUES `+strings.Join(vals, ", ")), args...); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		// The newest hot-key message: hot keys (i%5 == 0) fall on days i%730, multiples of 5,
		// so the latest is day 725, held by i = 725, 1455, 2185 and 2915; of those the highest
		// seq, 2915's.
		since := start.Add(700 * 24 * time.Hour)
		ls, _, log := loggingStore(t, dsn)
		for _, stats := range []string{"no statistics", "statistics"} {
			if stats == "statistics" {
				analyze(t, s)
			}
			log.Take()
			f, err := ls.ThreadOf(ctx, "support", mail.ThreadQuery{SubjectKey: "hot-key", Since: since})
			if err != nil || f.SubjectThread != "support/t2915" {
				t.Fatalf("%s: ThreadOf = %+v, %v; want the subject thread support/t2915", stats, f, err)
			}
			queries := log.Take()
			if len(queries) != 1 {
				t.Fatalf("%s: %d queries, want 1", stats, len(queries))
			}
			p := explain(t, s, queries[0].Text, queries[0].Args...)
			if p.Sorts || p.Temporary {
				t.Errorf("%s: the subject lookup sorts or builds a temporary table\n%s", stats, p.Raw)
			}
			found := false
			for _, st := range p.Steps {
				if st.Table != "messages" {
					continue // MariaDB's derived table of the one row
				}
				found = true
				if st.Index != indexMailboxSubject || st.Access == "SCAN" || st.Access == "ALL" || st.Access == "index" || st.Rows > 1 {
					t.Errorf("%s: messages read through %q (%s, %.0f rows), want %s, one row\n%s", stats, st.Index, st.Detail, st.Rows, indexMailboxSubject, p.Raw)
				}
				if st.Rows < 0 && !strings.Contains(st.Detail, "(mailbox=? AND subject_key=? AND sent_at>?)") {
					t.Errorf("%s: SQLite access %q does not range over the key's window", stats, st.Detail)
				}
			}
			if !found {
				t.Errorf("%s: no access to messages in the plan\n%s", stats, p.Raw)
			}
		}
	})
}
