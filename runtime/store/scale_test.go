package store

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// scaleThread is one thread a scale seed writes: n messages and, when keep > 0, a completed
// compaction whose boundary leaves the last keep messages after it.
type scaleThread struct {
	id   string
	n    int
	keep int
}

// seededThread is what seedScale wrote for one thread: its message seqs in order and the
// compaction boundary (0 when none).
type seededThread struct {
	seqs     []int64
	boundary int64
}

// lastID returns the message id of the thread's newest message, the one a reply run answers.
func (st scaleThread) lastID() string { return scaleMessageID(st.id, st.n-1) }

func scaleMessageID(thread string, i int) string { return thread + "-" + itoa(i) }

// The shape of a seeded message: a body of about 760 bytes; messages 0, 6, 10, 16, … (two in
// ten, all inbound) carry one tool round of three calls; every seventh an attachment.
const scaleBody = "Hello, the export of our quarterly board stops at 80 % with a timeout; smaller boards export fine. "

func scaleHasRound(i int) bool { return i%10 == 0 || i%10 == 6 }

// seedScale writes threads with bulk INSERTs matching the schema, their messages interleaved
// over the whole seq range (message i of a thread of n lands at the fraction (i+½)/n of the
// seeding order), as a mailbox's concurrent threads interleave. Seqs are given explicitly
// (1, 2, …), so the database must be fresh.
func seedScale(tb testing.TB, s *Store, threads []scaleThread) map[string]*seededThread {
	tb.Helper()
	ctx := context.Background()
	d := s.dialect
	type item struct {
		thread int
		i      int
		at     float64
	}
	var order []item
	for t, st := range threads {
		for i := range st.n {
			order = append(order, item{t, i, (float64(i) + 0.5) / float64(st.n)})
		}
	}
	slices.SortStableFunc(order, func(a, b item) int { return cmp.Compare(a.at, b.at) })

	out := map[string]*seededThread{}
	for _, st := range threads {
		out[st.id] = &seededThread{seqs: make([]int64, 0, st.n)}
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	exec := func(query string, args ...any) {
		if _, err := tx.ExecContext(ctx, d.rebind(query), args...); err != nil {
			tb.Fatalf("seed: %v", err)
		}
	}
	bulk := func(head string, cols int, rows [][]any) {
		const batch = 200
		for start := 0; start < len(rows); start += batch {
			part := rows[start:min(start+batch, len(rows))]
			vals := make([]string, len(part))
			args := make([]any, 0, cols*len(part))
			for i, r := range part {
				vals[i] = "(" + placeholders(cols) + ")"
				args = append(args, r...)
			}
			exec(head+" VALUES "+strings.Join(vals, ", "), args...)
		}
	}
	result := `{"items":[` + strings.Repeat(`{"title":"Exporting large boards","url":"https://help.acme.test/x"},`, 5) + `{}]}`
	var msgs, uses [][]any
	flush := func() {
		bulk(`INSERT INTO messages (seq, thread_id, thread_start, message_id, direction, sender, recipients, cc, subject,
			sent_at, text_body, html_body, attachments)`, 13, msgs)
		bulk(`INSERT INTO tool_uses (owner_type, owner_id, thread_id, persona, run_id, turn_index, position,
			tool_call_id, tool_name, arguments, result, succeeded)`, 12, uses)
		msgs, uses = msgs[:0], uses[:0]
	}
	for k, it := range order {
		seq := int64(k + 1)
		st := threads[it.thread]
		out[st.id].seqs = append(out[st.id].seqs, seq)
		dir, from, to := "inbound", "Ada Lovelace <ada@example.com>", `["support@acme.test"]`
		if it.i%2 == 1 {
			dir, from, to = "outbound", "support@acme.test", `["Ada Lovelace <ada@example.com>"]`
		}
		body := strings.Repeat(scaleBody, 7+it.i%2) // 707 or 808 bytes
		var start, atts any                         // the thread's first row stands for it (thread_start)
		if it.i == 0 {
			start = st.id
		}
		if it.i%7 == 3 {
			atts = `[{"id":"att-` + itoa(int(seq)) + `","filename":"export.log","content_type":"text/plain","size":1234}]`
		}
		msgs = append(msgs, []any{seq, st.id, start, scaleMessageID(st.id, it.i), dir, from, to, `[]`,
			"Re: Export fails", d.timeArg(h0.Add(time.Duration(seq) * time.Second)), body, "", atts})
		if scaleHasRound(it.i) {
			for pos := range 3 {
				uses = append(uses, []any{"message", seq, st.id, "bench", "run-" + itoa(int(seq)), 0, pos,
					"call-" + itoa(pos), "search_help_center", `{"query":"export timeout","limit":10}`, result, true})
			}
		}
		if len(msgs) == 2000 {
			flush()
		}
	}
	flush()
	for _, st := range threads {
		if st.keep <= 0 || st.keep >= st.n {
			continue
		}
		seqs := out[st.id].seqs
		b := seqs[len(seqs)-st.keep-1]
		out[st.id].boundary = b
		exec(`INSERT INTO compactions (thread_id, boundary_seq, boundary_message_id, status, summary, claim_token,
			claimed_at, completed_at) VALUES (?, ?, ?, 'completed', ?, 'seed', ?, ?)`, st.id, b,
			scaleMessageID(st.id, st.n-st.keep-1), "The customer's quarterly board export times out.",
			d.timeArg(h0), d.timeArg(h0))
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return out
}
