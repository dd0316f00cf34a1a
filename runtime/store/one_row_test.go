package store

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
)

// Migration 00031 (a message is one row) keeps what was stored before it: every thread's first
// message becomes its thread_start row, each message's attachment rows become its attachments
// column in position order and byte for byte, runs and compactions keep referencing their
// thread, the outbox keeps its entries, new seqs continue after the highest ever handed out, and
// an append to a migrated thread joins it. Down restores the attachments and threads tables with
// the same rows.
func TestOneRowMigrationKeepsStoredRows(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			s := openScratch(t, d)
			ctx := context.Background()
			migrateTo(t, s, 30)
			exec := func(q string, args ...any) int64 {
				t.Helper()
				res, err := s.DB().ExecContext(ctx, d.rebind(q), args...)
				if err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				id, _ := res.LastInsertId()
				return id
			}
			for _, th := range []string{"t1", "t2", "empty"} {
				exec(`INSERT INTO threads (id) VALUES (?)`, th)
			}
			message := func(thread, id, runKey string) int64 {
				var key any
				if runKey != "" {
					key = runKey
				}
				return exec(`INSERT INTO messages (thread_id, mailbox, message_id, in_reply_to, refs, direction, sender,
					recipients, cc, reply_to, subject, sent_at, text_body, html_body, run_key)
					VALUES (?, 'support', ?, '', '[]', 'inbound', 'a@x', '[]', '[]', '[]', 's', ?, 'body', '', ?)`,
					thread, id, d.timeArg(baseTime), key)
			}
			m1 := message("t1", "m1", "")
			m2 := message("t1", "m2", "")
			m3 := message("t2", "m3", "")
			r1 := message("t1", "r1", "run-r1")
			exec(`UPDATE messages SET direction = 'outbound' WHERE seq = ?`, r1)
			exec(`INSERT INTO mail_outbox (message_seq, mailbox) VALUES (?, 'support')`, r1)
			gone := message("t2", "gone", "") // the highest seq handed out, deleted before the migration
			exec(`DELETE FROM messages WHERE seq = ?`, gone)
			odd := "a'b\"c\\d\x00e\nf😀"
			want := map[int64][]history.Attachment{
				m2: {{ID: "att_0", Filename: odd, ContentType: "application/pdf", Size: 7},
					{ID: "att_1", Filename: "second.txt", ContentType: "text/plain", Size: 0}},
				m3: {{ID: "att_2", Filename: "x.png", ContentType: "image/png", Size: 1 << 40}},
			}
			// Inserted out of position order: the column holds them by position.
			for _, a := range []struct {
				seq int64
				pos int
			}{{m2, 1}, {m3, 0}, {m2, 0}} {
				att := want[a.seq][a.pos]
				exec(`INSERT INTO attachments (message_seq, position, attachment_id, filename, content_type, size_bytes)
					VALUES (?, ?, ?, ?, ?, ?)`, a.seq, a.pos, att.ID, att.Filename, att.ContentType, att.Size)
			}
			run := exec(`INSERT INTO runs (run_key, kind, persona, thread_id, message_seq, status, reason, lease_holder, attempt,
				started_at, view_seq) VALUES ('reply-m2', 'reply', 'support', 't1', ?, 'succeeded', '', '', 1, ?, ?)`, m2, d.timeArg(baseTime), m2)
			// The run's ledger (migration 00020), which references the run ON DELETE CASCADE.
			exec(`INSERT INTO run_turns (run_id, turn_index, message_text, tool_calls, state, stop_reason, model, request_id,
				response_id, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens)
				VALUES (?, 0, 'looking', '[]', '', 'tool_use', 'm', 'req', 'resp', 1, 2, 3, 4)`, run)
			exec(`INSERT INTO run_call_outcomes (run_id, turn_index, position, tool_call_id, tool_name, result, succeeded)
				VALUES (?, 0, 0, 'call-1', 'search', 'found', 1)`, run)
			exec(`INSERT INTO compactions (thread_id, boundary_seq, boundary_message_id, status, summary, claim_token,
				claimed_at) VALUES ('t1', ?, 'm1', 'completed', 'sum', 'tok', ?)`, m1, d.timeArg(baseTime))

			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			for thread, first := range map[string]int64{"t1": m1, "t2": m3} {
				var starts []int64
				if err := s.DB().SelectContext(ctx, &starts, d.rebind(`SELECT seq FROM messages WHERE thread_start = ?`), thread); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(starts, []int64{first}) {
					t.Errorf("thread %s: first rows %v, want [%d]", thread, starts, first)
				}
			}
			if n := countRows(t, s, "messages", "thread_start IS NOT NULL"); n != 2 {
				t.Errorf("%d first rows, want 2 (the empty thread goes)", n)
			}
			for _, th := range []string{"t1", "t2"} {
				msgs, err := s.Thread(ctx, th)
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range msgs {
					if !reflect.DeepEqual(m.Attachments, want[m.Seq]) {
						t.Errorf("message %s: attachments %+v, want %+v", m.MessageID, m.Attachments, want[m.Seq])
					}
				}
			}
			if r, err := s.Run(ctx, "reply-m2"); err != nil || r.ThreadID != "t1" || r.MessageSeq != m2 {
				t.Errorf("migrated run = %+v, %v", r, err)
			}
			ledger := func(when string) {
				t.Helper()
				for table, where := range map[string]string{
					"runs":              "id = ? AND view_seq = " + itoa(int(m2)),
					"run_turns":         "run_id = ? AND message_text = 'looking' AND cache_write_tokens = 4",
					"run_call_outcomes": "run_id = ? AND result = 'found'",
				} {
					if n := countRows(t, s, table, where, run); n != 1 {
						t.Errorf("%s: %d %s rows of the run, want 1", when, n, table)
					}
				}
			}
			ledger("after the migration")
			if c, err := s.LatestCompaction(ctx, "t1"); err != nil || c == nil || c.Summary != "sum" {
				t.Errorf("migrated compaction = %+v, %v", c, err)
			}
			if unsent, err := s.UnsentReplies(ctx, "support", 10); err != nil || len(unsent) != 1 || unsent[0].Seq != r1 {
				t.Errorf("migrated outbox = %+v, %v", unsent, err)
			}
			// The thread references hold: a compaction of a thread no message starts is refused.
			if _, err := s.DB().ExecContext(ctx, d.rebind(`INSERT INTO compactions (thread_id, boundary_seq,
				boundary_message_id, status, summary, claim_token, claimed_at) VALUES ('empty', 1, 'x', 'completed', 's', 't', ?)`),
				d.timeArg(baseTime)); err == nil {
				t.Error("a compaction of a thread without messages was stored")
			}
			seq, thread, dup, err := s.AppendMail(ctx, msg("t1", "m4", baseTime).Message, "support", mail.MailRecord{ThreadStored: true})
			if err != nil || dup || thread != "t1" || seq <= gone {
				t.Errorf("append to a migrated thread = %d, %s, %v, %v; want a seq above %d in t1", seq, thread, dup, err, gone)
			}
			if n := countRows(t, s, "messages", "thread_start = 't1'"); n != 1 {
				t.Errorf("t1 has %d first rows after the append, want 1", n)
			}

			p := gooseProvider(t, s)
			if _, err := p.DownTo(ctx, 30); err != nil {
				t.Fatalf("down to 00030: %v", err)
			}
			var threads []string
			if err := s.DB().SelectContext(ctx, &threads, `SELECT id FROM threads ORDER BY id`); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(threads, []string{"t1", "t2"}) {
				t.Errorf("threads after down: %v", threads)
			}
			var rows []attachmentRow
			if err := s.DB().SelectContext(ctx, &rows, `SELECT message_seq, position, attachment_id, filename, content_type,
				size_bytes FROM attachments ORDER BY message_seq, position`); err != nil {
				t.Fatal(err)
			}
			got := map[int64][]history.Attachment{}
			for _, r := range rows {
				got[r.MessageSeq] = append(got[r.MessageSeq], history.Attachment{ID: r.AttachmentID, Filename: r.Filename,
					ContentType: r.ContentType, Size: r.SizeBytes})
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("attachments after down: %+v, want %+v", got, want)
			}
			ledger("after down")
			if err := s.Migrate(ctx); err != nil {
				t.Fatalf("up again: %v", err)
			}
			ledger("after down and up")
			if msgs, err := s.Thread(ctx, "t1"); err != nil || len(msgs) != 4 || !reflect.DeepEqual(msgs[1].Attachments, want[m2]) {
				t.Errorf("t1 after down and up: %+v, %v", msgs, err)
			}
		})
	}
}

// attachmentRow is a row of the attachments table migration 00031 folds into messages (its
// Down brings it back).
type attachmentRow struct {
	MessageSeq   int64  `db:"message_seq"`
	Position     int    `db:"position"`
	AttachmentID string `db:"attachment_id"`
	Filename     string `db:"filename"`
	ContentType  string `db:"content_type"`
	SizeBytes    int64  `db:"size_bytes"`
}

// The lookups of the write path read one index entry per id: ThreadOf through (mailbox,
// message_id), the replies to the message through (mailbox, in_reply_to) and, for the thread a
// message would start, through thread_start; the append's
// lock of the thread's first row through thread_start. On a seeded database with skewed
// threads, with and without statistics.
func TestIngestQueryPlans(t *testing.T) {
	eachDBWithDSN(t, func(t *testing.T, s *Store, dsn string) {
		threads := []scaleThread{{id: "long", n: 2000}}
		for i := range 100 {
			threads = append(threads, scaleThread{id: "other-" + itoa(i), n: 5})
		}
		seedScale(t, s, threads)
		ls, _, log := loggingStore(t, dsn)
		ctx := context.Background()
		ids := []string{"unknown@x", scaleMessageID("long", 1999), scaleMessageID("long", 3), scaleMessageID("other-7", 0)}
		for _, stats := range []string{"no statistics", "statistics"} {
			if stats == "statistics" {
				analyze(t, s)
			}
			log.Take()
			if f, err := ls.ThreadOf(ctx, "", mail.ThreadQuery{IDs: ids, NewThread: "other-9"}); err != nil || f.ThreadID != "long" || f.MessageID != ids[1] {
				t.Fatalf("ThreadOf = %+v, %v", f, err)
			}
			queries := log.Take()
			if len(queries) != 1 {
				t.Fatalf("ThreadOf ran %d queries, want 1", len(queries))
			}
			for _, c := range []struct {
				query   string
				args    []any
				indexes []string
				rows    float64
			}{
				{queries[0].Text, queries[0].Args, []string{"messages_mailbox_message_id", "messages_thread_start", "messages_mailbox_in_reply_to"}, float64(len(ids))},
				{`SELECT thread_start FROM messages WHERE thread_start = ? LIMIT 1`, []any{"long"}, []string{"messages_thread_start"}, 1},
			} {
				p := explain(t, s, c.query, c.args...)
				if len(p.Steps) == 0 {
					t.Errorf("%s: no table access in the plan of %s\n%s", stats, c.query, p.Raw)
				}
				for _, st := range p.Steps {
					if !slices.Contains(c.indexes, st.Index) || st.Access == "SCAN" || st.Access == "ALL" || st.Access == "index" || st.Rows > c.rows {
						t.Errorf("%s: %s reads %s through %q (%s, %.0f rows), want one of %v, at most %.0f rows\n%s",
							stats, c.query, st.Table, st.Index, st.Detail, st.Rows, c.indexes, c.rows, p.Raw)
					}
				}
			}
		}
	})
	if !strings.Contains(joinInsert(), "SELECT") { // the statement the second plan stands for
		t.Fatal("the join INSERT no longer selects the thread's first row")
	}
}
