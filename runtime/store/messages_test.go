package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
)

// fourByte holds characters outside the Basic Multilingual Plane: emoji, a flag sequence, CJK
// extension B, and a mathematical letter. utf8 (3-byte) columns would mangle every one.
const fourByte = "😀 🇩🇪 𠀋𡈽 𝒳 👩‍👩‍👧"

var baseTime = time.Date(2024, 3, 1, 9, 30, 0, 0, time.UTC)

func msg(thread, id string, sent time.Time) NewMessage {
	return NewMessage{
		ThreadID: thread, MessageID: id, Direction: history.Inbound,
		From: "ana@example.com", To: []string{"agent@example.com"}, Subject: "Re: " + id,
		SentAt: sent, Text: "body of " + id,
	}
}

func mustAppend(t *testing.T, s *Store, m NewMessage) int64 {
	t.Helper()
	seq, err := s.AppendMessage(context.Background(), m)
	if err != nil {
		t.Fatalf("AppendMessage(%s): %v", m.MessageID, err)
	}
	return seq
}

// countRows counts the rows of table matching where (SQL with '?' args; "" for all).
func countRows(t *testing.T, s *Store, table, where string, args ...any) int {
	t.Helper()
	q := "SELECT COUNT(*) FROM " + table
	if where != "" {
		q += " WHERE " + where
	}
	var n int
	if err := s.DB().GetContext(context.Background(), &n, s.Dialect().rebind(q), args...); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

func TestAppendMessageRoundTripsFourByteCharactersByteIdentical(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		in := NewMessage{
			ThreadID: "thread-" + fourByte, MessageID: "<" + fourByte + "@example.com>",
			Direction: history.Outbound,
			From:      fourByte + " <bot@example.com>",
			To:        []string{"𠀋 <a@example.com>", "b@example.com"},
			Cc:        []string{"😀@example.com"},
			Subject:   "Subject " + fourByte,
			SentAt:    baseTime,
			Text:      strings.Repeat(fourByte, 100),
			HTML:      "<p>" + fourByte + "</p>",
			Attachments: []history.Attachment{
				{ID: "att-1", Filename: fourByte + ".pdf", ContentType: "application/pdf", Size: 1234},
				{ID: "att-2", Filename: "b.png", ContentType: "image/png", Size: 0},
			},
		}
		seq := mustAppend(t, s, in)
		got, err := s.Thread(context.Background(), in.ThreadID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("Thread returned %d messages, want 1", len(got))
		}
		m := got[0]
		want := history.Message{
			Seq: seq, ThreadID: in.ThreadID, MessageID: in.MessageID, Direction: in.Direction, From: in.From, To: in.To, Cc: in.Cc,
			Date: in.SentAt, Subject: in.Subject, Text: in.Text, HTML: in.HTML, Attachments: storedAttachments(in.Attachments),
		}
		if !equalStored(m, want) {
			t.Errorf("Thread()[0] =\n%+v\nwant\n%+v", m, want)
		}
	})
}

// storedAttachments is the metadata of atts as the store returns it: Data nil.
func storedAttachments(atts []history.Attachment) []history.Attachment {
	var out []history.Attachment
	for _, a := range atts {
		a.Data = nil
		out = append(out, a)
	}
	return out
}

func equalStored(a, b history.Message) bool {
	if a.Seq != b.Seq || a.ThreadID != b.ThreadID || a.MessageID != b.MessageID || a.Direction != b.Direction || a.From != b.From ||
		!a.Date.Equal(b.Date) || a.Date.Location() != time.UTC || a.Subject != b.Subject ||
		a.Text != b.Text || a.HTML != b.HTML || strings.Join(a.To, "\x00") != strings.Join(b.To, "\x00") ||
		strings.Join(a.Cc, "\x00") != strings.Join(b.Cc, "\x00") || len(a.Attachments) != len(b.Attachments) {
		return false
	}
	for i := range a.Attachments {
		x, y := a.Attachments[i], b.Attachments[i]
		if x.ID != y.ID || x.Filename != y.Filename || x.ContentType != y.ContentType || x.Size != y.Size {
			return false
		}
	}
	return true
}

func TestSentAtRoundTripsToTheMicrosecondInUTC(t *testing.T) {
	berlin := time.FixedZone("CET", 3600)
	cases := []struct {
		name string
		in   time.Time
		want time.Time
	}{
		{"microseconds kept", time.Date(2024, 3, 1, 9, 30, 15, 123456000, time.UTC), time.Date(2024, 3, 1, 9, 30, 15, 123456000, time.UTC)},
		{"nanoseconds truncated, not rounded", time.Date(2024, 3, 1, 9, 30, 15, 999999999, time.UTC), time.Date(2024, 3, 1, 9, 30, 15, 999999000, time.UTC)},
		{"zone converted to UTC", time.Date(2024, 3, 1, 10, 0, 0, 1000, berlin), time.Date(2024, 3, 1, 9, 0, 0, 1000, time.UTC)},
		{"year 1000", time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	eachDB(t, func(t *testing.T, s *Store) {
		for i, c := range cases {
			thread := "t" + string(rune('a'+i))
			mustAppend(t, s, msg(thread, thread+"-m", c.in))
			got, err := s.Thread(context.Background(), thread)
			if err != nil {
				t.Fatal(err)
			}
			if g := got[0].Date; !g.Equal(c.want) || g.Location() != time.UTC {
				t.Errorf("%s: SentAt = %v (%v), want %v UTC", c.name, g, g.Location(), c.want)
			}
		}
	})
}

func TestEqualSentAtKeepInsertionOrder(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ids := []string{"m-zulu", "m-alpha", "m-mike", "m-bravo", "m-yankee"}
		var seqs []int64
		for _, id := range ids {
			seqs = append(seqs, mustAppend(t, s, msg("t", id, baseTime)))
		}
		got, err := s.Thread(context.Background(), "t")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(ids) {
			t.Fatalf("got %d messages, want %d", len(got), len(ids))
		}
		for i, m := range got {
			if m.MessageID != ids[i] || m.Seq != seqs[i] {
				t.Errorf("message %d = %s seq %d, want %s seq %d", i, m.MessageID, m.Seq, ids[i], seqs[i])
			}
			if i > 0 && m.Seq <= got[i-1].Seq {
				t.Errorf("seq %d not above previous %d", m.Seq, got[i-1].Seq)
			}
		}
	})
}

func TestAppendDuplicateMessageIDWritesNothing(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		mustAppend(t, s, msg("t1", "m1", baseTime))
		dup := msg("t2", "m1", baseTime)
		dup.Attachments = []history.Attachment{{ID: "a", Filename: "f", ContentType: "text/plain", Size: 1}}
		_, err := s.AppendMessage(context.Background(), dup)
		if !errors.Is(err, ErrDuplicateMessage) {
			t.Fatalf("AppendMessage(duplicate) error = %v, want ErrDuplicateMessage", err)
		}
		if n := countRows(t, s, "threads", "id = ?", "t2"); n != 0 {
			t.Errorf("thread t2 created by the failed append (%d rows)", n)
		}
		if n := countRows(t, s, "messages", ""); n != 1 {
			t.Errorf("%d messages stored, want 1", n)
		}
		if n := countRows(t, s, "attachments", ""); n != 0 {
			t.Errorf("%d attachments stored, want 0", n)
		}
	})
}

func TestAppendMessageRejectsInvalidValues(t *testing.T) {
	cases := []struct {
		name string
		edit func(*NewMessage)
	}{
		{"empty thread id", func(m *NewMessage) { m.ThreadID = "" }},
		{"thread id over 191 characters", func(m *NewMessage) { m.ThreadID = strings.Repeat("😀", 192) }},
		{"empty message id", func(m *NewMessage) { m.MessageID = "" }},
		{"message id over 255 characters", func(m *NewMessage) { m.MessageID = strings.Repeat("x", 256) }},
		{"message id ending in a space", func(m *NewMessage) { m.MessageID = "m1 " }},
		{"thread id ending in a space", func(m *NewMessage) { m.ThreadID = "t " }},
		{"unknown direction", func(m *NewMessage) { m.Direction = "sideways" }},
		{"zero sent_at", func(m *NewMessage) { m.SentAt = time.Time{} }},
		{"sent_at before year 1000", func(m *NewMessage) { m.SentAt = time.Date(999, 12, 31, 0, 0, 0, 0, time.UTC) }},
		{"invalid UTF-8 body", func(m *NewMessage) { m.Text = "ok \xff not ok" }},
		{"invalid UTF-8 recipient", func(m *NewMessage) { m.To = []string{"\xc3"} }},
		{"negative attachment size", func(m *NewMessage) {
			m.Attachments = []history.Attachment{{ID: "a", Filename: "f", ContentType: "x/y", Size: -1}}
		}},
	}
	eachDB(t, func(t *testing.T, s *Store) {
		for _, c := range cases {
			m := msg("t", "m-"+c.name, baseTime)
			c.edit(&m)
			if _, err := s.AppendMessage(context.Background(), m); !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: error = %v, want ErrInvalid", c.name, err)
			}
		}
		if n := countRows(t, s, "messages", ""); n != 0 {
			t.Errorf("%d messages stored, want 0", n)
		}
	})
}

func TestThreadOfUnknownThreadIsEmpty(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		mustAppend(t, s, msg("known", "m1", baseTime))
		got, err := s.Thread(context.Background(), "unknown")
		if err != nil || len(got) != 0 {
			t.Errorf("Thread(unknown) = %v, %v; want no messages, nil", got, err)
		}
	})
}

func TestDeleteThreadLeavesNoneOfItsRows(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		var keepSeq int64
		for _, thread := range []string{"doomed", "kept"} {
			for i := range 3 {
				m := msg(thread, thread+"-"+string(rune('a'+i)), baseTime)
				m.Attachments = []history.Attachment{{ID: "x", Filename: "f.txt", ContentType: "text/plain", Size: 3}}
				seq := mustAppend(t, s, m)
				keepSeq = seq
				if _, err := s.RecordRound(ctx, testRound(Source{SourceMessage, seq}, "run-"+thread, 0, 2)); err != nil {
					t.Fatal(err)
				}
			}
		}
		runID, err := s.StartRun(ctx, "support-agent", "daily-digest")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordRound(ctx, testRound(Source{SourceResponsibilityRun, runID}, "sched", 0, 2)); err != nil {
			t.Fatal(err)
		}

		// A compaction row (table of migration 00002, the history feature's) per thread.
		for _, thread := range []string{"doomed", "kept"} {
			if _, err := s.DB().ExecContext(ctx, s.Dialect().rebind(`INSERT INTO compactions (thread_id, boundary_seq,
				boundary_message_id, status, summary, claim_token, claimed_at) VALUES (?, 1, 'm', 'completed', 's', 'tok', ?)`),
				thread, s.Dialect().timeArg(baseTime)); err != nil {
				t.Fatalf("insert compaction: %v", err)
			}
		}
		if err := s.DeleteThread(ctx, "doomed"); err != nil {
			t.Fatalf("DeleteThread: %v", err)
		}
		for table, where := range map[string]string{
			"threads":     "id = ?",
			"compactions": "thread_id = ?",
			"messages":    "thread_id = ?",
			"tool_uses":   "thread_id = ?",
			"attachments": "message_seq IN (SELECT seq FROM messages WHERE thread_id = ?)",
		} {
			if n := countRows(t, s, table, where, "doomed"); n != 0 {
				t.Errorf("%s: %d rows of the deleted thread remain", table, n)
			}
			if n := countRows(t, s, table, where, "kept"); n == 0 {
				t.Errorf("%s: the other thread's rows were deleted too", table)
			}
		}
		if n := countRows(t, s, "attachments", ""); n != 3 {
			t.Errorf("%d attachments left, want the kept thread's 3", n)
		}
		if n := countRows(t, s, "tool_uses", "source_type = 'responsibility_run'"); n != 2 {
			t.Errorf("responsibility run tool uses = %d, want 2 kept", n)
		}
		if got, _ := s.Thread(ctx, "kept"); len(got) != 3 || got[2].Seq != keepSeq {
			t.Errorf("kept thread changed: %d messages", len(got))
		}
		if err := s.DeleteThread(ctx, "doomed"); err != nil {
			t.Errorf("DeleteThread of a deleted thread: %v, want nil", err)
		}
	})
}

func TestConcurrentAppendsToANewThreadAllLand(t *testing.T) {
	const n = 16
	eachDB(t, func(t *testing.T, s *Store) {
		errs := make(chan error, n)
		for i := range n {
			go func() {
				_, err := s.AppendMessage(context.Background(), msg("new-thread", fmt.Sprintf("m%02d", i), baseTime))
				errs <- err
			}()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("AppendMessage: %v", err)
			}
		}
		got, err := s.Thread(context.Background(), "new-thread")
		if err != nil || len(got) != n {
			t.Errorf("Thread = %d messages, %v; want %d", len(got), err, n)
		}
		if c := countRows(t, s, "threads", ""); c != 1 {
			t.Errorf("%d thread rows, want 1", c)
		}
	})
}

// Thread lists in the order the store received the messages, whatever their Date headers say.
func TestThreadListsInOrderOfRecord(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		mustAppend(t, s, msg("t", "m-late", baseTime.Add(time.Hour)))
		mustAppend(t, s, msg("t", "m-early", baseTime))
		mustAppend(t, s, msg("t", "m-early-too", baseTime))
		got, err := s.Thread(context.Background(), "t")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, m := range got {
			ids = append(ids, m.MessageID)
		}
		if want := []string{"m-late", "m-early", "m-early-too"}; !slices.Equal(ids, want) {
			t.Errorf("Thread order = %v, want %v", ids, want)
		}
	})
}
