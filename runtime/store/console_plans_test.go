package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// consoleAccess says how a console listing may read one table (by name or alias): through
// which indexes, and (MariaDB, whose ANALYZE counts) at most how many rows in all.
type consoleAccess struct {
	indexes []string
	rows    float64
}

// checkConsolePlan fails t unless every table access of p uses one of its allowed indexes,
// nothing is sorted or put in a temporary table, no table is scanned except an index read in
// its order (SQLite "SCAN … USING INDEX", which a LIMIT stops), and on MariaDB no table is read
// for more rows than allowed. A count per hour or per day groups the rows of its window, which
// takes a temporary table; its rows are bounded all the same.
func checkConsolePlan(t *testing.T, label string, p queryPlan, allowed map[string]consoleAccess) {
	t.Helper()
	if (p.Sorts || p.Temporary) && !strings.Contains(label, "per ") { // a count per hour or day groups its window's rows
		t.Errorf("%s: the plan sorts or builds a temporary table\n%s", label, p.Raw)
	}
	if len(p.Steps) == 0 {
		t.Errorf("%s: no table access in the plan\n%s", label, p.Raw)
	}
	read := map[string]float64{}
	for _, st := range p.Steps {
		a, ok := allowed[st.Table]
		if !ok {
			t.Errorf("%s: reads %s (%s), which it should not\n%s", label, st.Table, st.Detail, p.Raw)
			continue
		}
		if !slices.Contains(a.indexes, st.Index) {
			t.Errorf("%s: reads %s through %q (%s), want one of %v\n%s", label, st.Table, st.Index, st.Detail, a.indexes, p.Raw)
		}
		if st.Access == "ALL" || (st.Access == "SCAN" && st.Index == "") {
			t.Errorf("%s: scans %s (%s)\n%s", label, st.Table, st.Detail, p.Raw)
		}
		if st.Rows >= 0 {
			read[st.Table] += st.Rows
		}
	}
	for table, n := range read {
		if n > allowed[table].rows {
			t.Errorf("%s: read %.0f rows of %s, want at most %.0f\n%s", label, n, table, allowed[table].rows, p.Raw)
		}
	}
}

// TestConsoleQueryPlans pins the plans of the console's listings on a store of 3,000 threads
// and 6,000 runs, before and after the planner has statistics: a page of 20 reads about 20
// rows of each table it touches, through the index that holds its order, whatever the store
// holds; the per-hour and per-day counts read the runs of their window only.
func TestConsoleQueryPlans(t *testing.T) {
	eachDBWithDSN(t, func(t *testing.T, s *Store, dsn string) {
		ctx := context.Background()
		d := s.dialect
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		insert := func(table, cols string, n int, row func(i int) []any) {
			tx, err := s.db.BeginTxx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			ncols := len(strings.Split(cols, ","))
			for b := 0; b < n; b += 200 {
				var vals []string
				var args []any
				for i := b; i < min(b+200, n); i++ {
					vals = append(vals, "("+placeholders(ncols)+")")
					args = append(args, row(i)...)
				}
				if _, err := tx.ExecContext(ctx, d.rebind("INSERT INTO "+table+" ("+cols+") VALUES "+strings.Join(vals, ", ")), args...); err != nil {
					t.Fatal(err)
				}
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		personas := []string{"support", "research", "sales"}
		insert("messages", "thread_id, thread_start, mailbox, message_id, direction, sender, recipients, cc, subject, sent_at, text_body, html_body, run_key",
			3000, func(i int) []any {
				th := fmt.Sprintf("t%04d", i)
				runKey := any(nil)
				dir := "inbound"
				if i%3 == 0 {
					runKey, dir = "reply-"+th, "outbound"
				}
				return []any{th, th, personas[i%3], "m" + th, dir, "a@x", "[]", "[]", "s", d.timeArg(start), "x", "", runKey}
			})
		statuses := []string{"succeeded", "failed", "skipped", "abandoned"}
		insert("runs", "run_key, kind, persona, responsibility, fire_at, status, reason, failure_class, lease_holder, attempt, started_at, finished_at",
			6000, func(i int) []any {
				class := ""
				if statuses[i%4] == "failed" {
					class = string(FailureClasses[7+i%6])
				}
				at := start.Add(time.Duration(i) * time.Minute)
				return []any{fmt.Sprintf("run-%d", i), "scheduled", personas[i%3], fmt.Sprintf("r%d", i%7), d.timeArg(at), statuses[i%4], "",
					class, "", 1, d.timeArg(at), d.timeArg(at)}
			})
		insert("runs", "run_key, kind, persona, thread_id, message_seq, status, reason, lease_holder, attempt, started_at",
			20, func(i int) []any {
				seq := 2980 + i + 1 // the seq of thread t(2980+i), the first page's
				return []any{fmt.Sprintf("reply-run-%d", i), "reply", personas[(2980+i)%3], fmt.Sprintf("t%04d", 2980+i), seq, "succeeded", "", "", 1, d.timeArg(start)}
			})
		if _, err := s.db.ExecContext(ctx, `UPDATE mail_outbox SET failed_at = ?, available_at = NULL WHERE message_seq % 2 = 0`, d.timeArg(start)); err != nil {
			t.Fatal(err)
		}
		ls, _, log := loggingStore(t, dsn)
		page := 20.0
		threads := map[string]consoleAccess{
			"a": {[]string{indexThreadActivity, indexThreadActivityMailbox}, page + 1},
			"f": {[]string{"messages_thread_start"}, page},
			"p": {[]string{"PRIMARY", "sqlite_autoindex_pending_replies_1"}, page},
			"r": {[]string{"runs_persona_thread"}, page},
		}
		byID := map[string]consoleAccess{"runs": {[]string{"PRIMARY"}, page}}
		runsVia := func(index string, rows float64) map[string]consoleAccess {
			return map[string]consoleAccess{"runs": {[]string{index}, rows}}
		}
		lastHour := start.Add(5999 * time.Minute).Add(-time.Hour)
		for _, stats := range []string{"no statistics", "statistics"} {
			if stats == "statistics" {
				analyze(t, s)
			}
			cursor := ThreadCursor{LastActivity: time.Now().Add(time.Hour), ThreadID: "t9"}
			for _, c := range []struct {
				label  string
				call   func() error
				access []map[string]consoleAccess // per query, in order
			}{
				{"threads", func() error { _, err := ls.Threads(ctx, ThreadQuery{Limit: 20}); return err }, []map[string]consoleAccess{threads, byID}},
				{"threads after a cursor", func() error { _, err := ls.Threads(ctx, ThreadQuery{Limit: 20, After: cursor}); return err }, []map[string]consoleAccess{threads, byID}},
				{"threads of a mailbox", func() error { _, err := ls.Threads(ctx, ThreadQuery{Limit: 20, Mailbox: "sales"}); return err }, []map[string]consoleAccess{threads, byID}},
				{"runs", func() error { _, err := ls.ListRuns(ctx, RunFilter{Limit: 20}); return err }, []map[string]consoleAccess{runsVia(indexRunsStarted, page)}},
				{"failed runs", func() error { _, err := ls.ListRuns(ctx, RunFilter{Status: RunFailed, Limit: 20}); return err }, []map[string]consoleAccess{runsVia(indexRunsStatus, page)}},
				{"runs of a class", func() error { _, err := ls.ListRuns(ctx, RunFilter{Class: FailureHostError, Limit: 20}); return err }, []map[string]consoleAccess{runsVia(indexRunsClass, page)}},
				{"runs of a persona", func() error { _, err := ls.ListRuns(ctx, RunFilter{Persona: "sales", Limit: 20}); return err }, []map[string]consoleAccess{runsVia(indexRunsPersona, page)}},
				{"failed runs after a cursor", func() error {
					_, err := ls.ListRuns(ctx, RunFilter{Status: RunFailed, Limit: 20, After: RunCursor{StartedAt: start.Add(3000 * time.Minute), ID: 3001}})
					return err
				}, []map[string]consoleAccess{runsVia(indexRunsStatus, page+1)}},
				{"runs per hour", func() error { _, err := ls.RunsPerHour(ctx, lastHour); return err }, []map[string]consoleAccess{runsVia(indexRunsStarted, 61)}},
				{"usage per day", func() error { _, err := ls.UsagePerDay(ctx, lastHour); return err }, []map[string]consoleAccess{runsVia(indexRunsStarted, 61)}},
				{"unsent replies", func() error { _, err := ls.Outbox(ctx, OutboxQuery{Status: OutboxUnsent, Limit: 20}); return err },
					[]map[string]consoleAccess{{"o": {[]string{indexOutbox}, page}, "m": {[]string{"PRIMARY"}, page}}}},
				{"failed replies", func() error { _, err := ls.Outbox(ctx, OutboxQuery{Status: OutboxFailed, Limit: 20}); return err },
					[]map[string]consoleAccess{{"o": {[]string{indexOutboxFailed}, page}, "m": {[]string{"PRIMARY"}, page}}}},
			} {
				log.Take()
				if err := c.call(); err != nil {
					t.Fatalf("%s: %v", c.label, err)
				}
				queries := log.Take()
				if len(queries) != len(c.access) {
					t.Errorf("%s, %s: %d queries, want %d", stats, c.label, len(queries), len(c.access))
					continue
				}
				for i, q := range queries {
					checkConsolePlan(t, stats+", "+c.label, explain(t, s, q.Text, q.Args...), c.access[i])
				}
			}
		}
	})
}
