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
	"github.com/personagen/personagen/runtime/mail"
)

// fourByte holds characters outside the Basic Multilingual Plane: emoji, a flag sequence, CJK
// extension B, and a mathematical letter. utf8 (3-byte) columns would mangle every one.
const fourByte = "😀 🇩🇪 𠀋𡈽 𝒳 👩‍👩‍👧"

var baseTime = time.Date(2024, 3, 1, 9, 30, 0, 0, time.UTC)

func msg(thread, id string, sent time.Time) Message {
	return Message{Message: history.Message{
		ThreadID: thread, MessageID: id, Direction: history.Inbound,
		From: "ana@example.com", To: []string{"agent@example.com"}, Subject: "Re: " + id,
		Date: sent, Text: "body of " + id,
	}}
}

func mustAppend(t testing.TB, s *Store, m Message) int64 {
	t.Helper()
	a, err := s.AppendMessage(context.Background(), m)
	if err != nil {
		t.Fatalf("AppendMessage(%s): %v", m.MessageID, err)
	}
	if a.Outcome != Stored {
		t.Fatalf("AppendMessage(%s) = %+v, want stored", m.MessageID, a)
	}
	return a.Seq
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
		in := Message{Message: history.Message{
			ThreadID: "thread-" + fourByte, MessageID: "<" + fourByte + "@example.com>",
			InReplyTo: "<parent-" + fourByte + "@example.com>", References: []string{"<root@x>", "<parent-" + fourByte + "@example.com>"},
			Direction: history.Outbound,
			From:      fourByte + " <bot@example.com>",
			To:        []string{"𠀋 <a@example.com>", "b@example.com"},
			Cc:        []string{"😀@example.com"},
			ReplyTo:   []string{"Replies " + fourByte + " <replies@example.com>"},
			Subject:   "Subject " + fourByte,
			Date:      baseTime,
			Text:      strings.Repeat(fourByte, 100),
			HTML:      "<p>" + fourByte + "</p>",
			Attachments: []history.Attachment{
				{ID: "att-1", Filename: fourByte + ".pdf", ContentType: "application/pdf", Size: 1234},
				{ID: "att-2", Filename: "b.png", ContentType: "image/png", Size: 0, Data: []byte("not stored")},
			},
		}, Mailbox: "bot@example.com", RunKey: "run-" + fourByte, NotToAnswer: "own address " + fourByte,
			Problems: []string{"Cc: " + fourByte + " is not an address"}}
		seq := mustAppend(t, s, in)
		got, err := s.Thread(context.Background(), in.ThreadID)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 {
			t.Fatalf("Thread returned %d messages, want 1", len(got))
		}
		m := got[0]
		want := in.Message
		want.Seq, want.Attachments = seq, storedAttachments(in.Attachments)
		if !equalStored(m, want) {
			t.Errorf("Thread()[0] =\n%+v\nwant\n%+v", m, want)
		}
		got1, err := s.Message(context.Background(), in.Mailbox, in.MessageID)
		if err != nil || !equalStored(got1.Message, want) || got1.Mailbox != in.Mailbox || got1.RunKey != in.RunKey ||
			got1.NotToAnswer != in.NotToAnswer || !slices.Equal(got1.Problems, in.Problems) {
			t.Errorf("Message() = %+v, %v\nwant %+v", got1, err, in)
		}
	})
}

// storedAttachments is the metadata of atts as the store returns it: Data nil.
func storedAttachments(atts []history.Attachment) []history.Attachment {
	var out []history.Attachment
	for _, a := range atts {
		out = append(out, history.Attachment{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size})
	}
	return out
}

func equalStored(a, b history.Message) bool {
	if a.Seq != b.Seq || a.ThreadID != b.ThreadID || a.MessageID != b.MessageID || a.InReplyTo != b.InReplyTo ||
		!slices.Equal(a.References, b.References) || a.Direction != b.Direction || a.From != b.From ||
		!slices.Equal(a.ReplyTo, b.ReplyTo) || !a.Date.Equal(b.Date) || a.Date.Location() != time.UTC || a.Subject != b.Subject ||
		a.Text != b.Text || a.HTML != b.HTML || strings.Join(a.To, "\x00") != strings.Join(b.To, "\x00") ||
		strings.Join(a.Cc, "\x00") != strings.Join(b.Cc, "\x00") || len(a.Attachments) != len(b.Attachments) {
		return false
	}
	for i := range a.Attachments {
		x, y := a.Attachments[i], b.Attachments[i]
		if x.ID != y.ID || x.Filename != y.Filename || x.ContentType != y.ContentType || x.Size != y.Size || x.Data != nil {
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

func TestAppendOfAStoredMessageIDReturnsItsSeq(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		first := msg("t1", "m1", baseTime.Add(123456789*time.Nanosecond))
		first.Cc = []string{"b@example.com"}
		first.Attachments = []history.Attachment{{ID: "a", Filename: "f", ContentType: "text/plain", Size: 1}}
		seq := mustAppend(t, s, first)

		again, err := s.AppendMessage(ctx, first)
		if want := (Appended{Seq: seq, Outcome: AlreadyStored}); err != nil || !equalAppended(again, want) {
			t.Errorf("identical retry = %+v, %v; want %+v", again, err, want)
		}
		// A second copy of one email: another thread, footer and Cc; the first copy stays.
		dup := first
		dup.ThreadID, dup.Text, dup.Cc, dup.Attachments = "t2", first.Text+"\n-- list footer", nil, nil
		got, err := s.AppendMessage(ctx, dup)
		want := Appended{Seq: seq, Outcome: AlreadyStored, Differs: []string{"thread id", "cc", "text body", "attachments"}}
		if err != nil || !equalAppended(got, want) {
			t.Errorf("differing copy = %+v, %v; want %+v", got, err, want)
		}
		if n := countRows(t, s, "messages", "thread_id = ?", "t2"); n != 0 {
			t.Errorf("thread t2 created by the second copy (%d rows)", n)
		}
		if n := countRows(t, s, "messages", ""); n != 1 {
			t.Errorf("%d messages stored, want 1", n)
		}
		m, err := s.Message(ctx, "", "m1")
		if err != nil || m.ThreadID != "t1" || m.Seq != seq || m.Text != first.Text || len(m.Attachments) != 1 ||
			!slices.Equal(m.Cc, first.Cc) {
			t.Errorf("Message(m1) = %+v, %v; want the first copy in t1", m, err)
		}
		if _, err := s.Message(ctx, "", "nope"); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("Message(unknown) error = %v, want ErrMessageNotFound", err)
		}
	})
}

func equalAppended(a, b Appended) bool {
	return a.Seq == b.Seq && a.Outcome == b.Outcome && slices.Equal(a.Differs, b.Differs)
}

func TestAppendMessageRejectsInvalidValues(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	att := func(edit func(*history.Attachment)) func(*Message) {
		return func(m *Message) {
			a := history.Attachment{ID: "a", Filename: "f", ContentType: "x/y", Size: 1}
			edit(&a)
			m.Attachments = []history.Attachment{a}
		}
	}
	cases := []struct {
		name string
		edit func(*Message)
		want string // the part of the error that names the field and the limit
	}{
		{"empty thread id", func(m *Message) { m.ThreadID = "" }, "thread id is empty"},
		{"thread id over 191 characters", func(m *Message) { m.ThreadID = strings.Repeat("😀", 192) }, "thread id has 192 characters (at most 191)"},
		{"empty message id", func(m *Message) { m.MessageID = "" }, "message id is empty"},
		{"message id over 255 characters", func(m *Message) { m.MessageID = long(256) }, "message id has 256 characters (at most 255)"},
		{"message id ending in a space", func(m *Message) { m.MessageID = "m1 " }, `message id "m1 " ends with a space`},
		{"thread id ending in a space", func(m *Message) { m.ThreadID = "t " }, `thread id "t " ends with a space`},
		{"unknown direction", func(m *Message) { m.Direction = "sideways" }, `direction "sideways"`},
		{"zero sent_at", func(m *Message) { m.Date = time.Time{} }, "date 0001-01-01"},
		{"sent_at before year 1000", func(m *Message) { m.Date = time.Date(999, 12, 31, 0, 0, 0, 0, time.UTC) }, "date 0999-12-31"},
		{"invalid UTF-8 body", func(m *Message) { m.Text = "ok \xff not ok" }, "text body is not valid UTF-8"},
		{"invalid UTF-8 recipient", func(m *Message) { m.To = []string{"\xc3"} }, "to[0] is not valid UTF-8"},
		{"70,000-byte subject", func(m *Message) { m.Subject = long(70000) }, "subject has 70000 bytes (at most 16384)"},
		{"70,000-byte sender", func(m *Message) { m.From = long(70000) }, "from has 70000 bytes (at most 998)"},
		{"over-long cc entry", func(m *Message) { m.Cc = []string{"a@b", long(999)} }, "cc[1] has 999 bytes (at most 998)"},
		{"too many recipients", func(m *Message) { m.To = make([]string, MaxAddresses+1) }, "to has 201 entries (at most 200)"},
		{"17 MiB body", func(m *Message) { m.Text = long(17 << 20) }, "text body has 17825792 bytes (at most 2097152)"},
		{"over-long HTML body", func(m *Message) { m.HTML = long(MaxBodyBytes + 1) }, "html body has 2097153 bytes (at most 2097152)"},
		{"70,000-byte filename", att(func(a *history.Attachment) { a.Filename = long(70000) }), "attachment[0] filename has 70000 bytes (at most 998)"},
		{"over-long attachment id", att(func(a *history.Attachment) { a.ID = long(999) }), "attachment[0] id has 999 bytes (at most 998)"},
		{"over-long content type", att(func(a *history.Attachment) { a.ContentType = long(256) }), "attachment[0] content type has 256 characters (at most 255)"},
		{"negative attachment size", att(func(a *history.Attachment) { a.Size = -1 }), "attachment[0] size -1 bytes is negative"},
		{"too many attachments", func(m *Message) { m.Attachments = make([]history.Attachment, MaxAttachments+1) }, "501 attachments (at most 500)"},
		{"over-long mailbox", func(m *Message) { m.Mailbox = long(192) }, "mailbox has 192 characters (at most 191)"},
		{"mailbox ending in a space", func(m *Message) { m.Mailbox = "a@b " }, `mailbox "a@b " ends with a space`},
		{"over-long in reply to", func(m *Message) { m.InReplyTo = long(256) }, "in reply to has 256 characters (at most 255)"},
		{"too many references", func(m *Message) { m.References = make([]string, MaxReferences+1) }, "references has 501 entries (at most 500)"},
		{"over-long reference", func(m *Message) { m.References = []string{"<a>", long(256)} }, "references[1] has 256 characters (at most 255)"},
		{"run key ending in a space", func(m *Message) { m.RunKey = "run " }, `run key "run " ends with a space`},
		{"over-long not-to-answer reason", func(m *Message) { m.NotToAnswer = long(999) }, "not to answer has 999 bytes (at most 998)"},
		{"too many problems", func(m *Message) { m.Problems = make([]string, MaxProblems+1) }, "problems has 101 entries (at most 100)"},
	}
	errs := map[Dialect][]string{}
	eachDB(t, func(t *testing.T, s *Store) {
		for _, c := range cases {
			m := msg("t", "m-"+c.name, baseTime)
			c.edit(&m)
			_, err := s.AppendMessage(context.Background(), m)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error = %.200v; want ErrInvalid saying %q", c.name, err, c.want)
			}
			errs[s.Dialect()] = append(errs[s.Dialect()], fmt.Sprint(err))
		}
		if n := countRows(t, s, "messages", ""); n != 0 {
			t.Errorf("%d messages stored, want 0", n)
		}
	})
	if sq, my := errs[DialectSQLite], errs[DialectMySQL]; len(my) > 0 && !slices.Equal(sq, my) {
		t.Errorf("the dialects refuse differently:\nsqlite %.300q\nmysql  %.300q", sq, my)
	}
}

// The largest message the limits allow is stored and read back byte for byte on both dialects,
// even when every byte of it needs the most escaping (a NUL in a list entry or an attachment's
// metadata is 6 bytes of JSON and 7 in the SQL text; a quote in a body 2), so no value within
// the limits meets a column size or MariaDB's 16 MiB max_allowed_packet: its INSERT would be
// larger, so its attachments follow in an UPDATE of the same transaction.
func TestLargestAllowedMessageRoundTrips(t *testing.T) {
	m := largestMessage("t", "largest")
	if !newMessageRow(DialectMySQL, m).split {
		t.Error("the largest message is written as one statement, over MariaDB's 16 MiB max_allowed_packet")
	}
	eachDB(t, func(t *testing.T, s *Store) {
		seq := mustAppend(t, s, m)
		got, err := s.Message(context.Background(), m.Mailbox, "largest")
		if err != nil {
			t.Fatal(err)
		}
		if got.Seq != seq || got.From != m.From || got.Subject != m.Subject || got.Text != m.Text || got.HTML != m.HTML ||
			!slices.Equal(got.To, m.To) || !slices.Equal(got.Cc, m.Cc) || !slices.Equal(got.ReplyTo, m.ReplyTo) ||
			got.InReplyTo != m.InReplyTo || !slices.Equal(got.References, m.References) ||
			!slices.Equal(got.Problems, m.Problems) || got.NotToAnswer != m.NotToAnswer || got.RunKey != m.RunKey ||
			!sameAttachments(got.Attachments, m.Attachments) {
			t.Error("the largest allowed message did not round-trip byte for byte")
		}
		if a, err := s.AppendMessage(context.Background(), m); err != nil || a.Outcome != AlreadyStored || a.Differs != nil {
			t.Errorf("the largest message again = %+v, %.200v; want already stored, identical", a, err)
		}
	})
}

// largestMessage returns the largest message the limits allow, every byte of it as costly to
// escape as can be (NULs in lists and attachment ids, quotes and backslashes in the bodies).
func largestMessage(thread, id string) Message {
	escaped := func(n int) string { return strings.Repeat("'\\\"\n\x00", n/5+1)[:n] }
	nuls := strings.Repeat("\x00", MaxAddressBytes)
	m := msg(thread, id, baseTime)
	m.From = nuls
	m.Subject = strings.Repeat("😀", MaxSubjectBytes/4)
	m.Text = strings.Repeat("'", MaxBodyBytes)
	m.HTML = strings.Repeat("\\", MaxBodyBytes)
	m.To, m.Cc, m.ReplyTo = make([]string, MaxAddresses), make([]string, MaxAddresses), make([]string, MaxAddresses)
	for i := range MaxAddresses {
		m.To[i], m.Cc[i], m.ReplyTo[i] = nuls, nuls, nuls
	}
	m.InReplyTo = strings.Repeat("\x00", MaxMessageIDChars)
	m.References = make([]string, MaxReferences)
	for i := range m.References {
		m.References[i] = m.InReplyTo
	}
	m.Problems = make([]string, MaxProblems)
	for i := range m.Problems {
		m.Problems[i] = nuls
	}
	m.NotToAnswer = nuls
	m.Mailbox, m.RunKey = strings.Repeat("😀", MaxNameChars), strings.Repeat("😀", MaxNameChars)
	for i := range MaxAttachments {
		m.Attachments = append(m.Attachments, history.Attachment{ID: strings.Repeat("\x00", MaxAttachmentIDBytes),
			Filename: escaped(MaxFilenameBytes), ContentType: strings.Repeat("😀", MaxContentTypeChars), Size: int64(i)})
	}
	return m
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
				if _, err := s.RecordRound(ctx, testRound(Owner{OwnerMessage, seq}, "run-"+thread, 0, 2)); err != nil {
					t.Fatal(err)
				}
			}
			startReply(t, s, "support-agent", thread, keepSeq)
		}
		run := startScheduled(t, s, "support-agent", "daily-digest")
		if _, err := s.RecordRound(ctx, testRound(Owner{OwnerRun, run.ID}, "sched", 0, 2)); err != nil {
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
			"compactions": "thread_id = ?",
			"runs":        "thread_id = ?",
			"messages":    "thread_id = ?",
			"tool_uses":   "thread_id = ?",
		} {
			if n := countRows(t, s, table, where, "doomed"); n != 0 {
				t.Errorf("%s: %d rows of the deleted thread remain", table, n)
			}
			if n := countRows(t, s, table, where, "kept"); n == 0 {
				t.Errorf("%s: the other thread's rows were deleted too", table)
			}
		}
		if n := countRows(t, s, "messages", "attachments IS NOT NULL"); n != 3 {
			t.Errorf("%d messages with attachments left, want the kept thread's 3", n)
		}
		if n := countRows(t, s, "tool_uses", "owner_type = 'run'"); n != 2 {
			t.Errorf("scheduled run tool uses = %d, want 2 kept", n)
		}
		if n := countRows(t, s, "runs", "kind = 'scheduled'"); n != 1 {
			t.Errorf("scheduled runs = %d, want 1 kept", n)
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
		if c := countRows(t, s, "messages", "thread_start = ?", "new-thread"); c != 1 {
			t.Errorf("%d first rows of the thread, want 1", c)
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

func TestMessageIDsAreUniquePerMailbox(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		a, b := msg("support/t", "<m1@x>", baseTime), msg("sales/t", "<m1@x>", baseTime)
		a.Mailbox, b.Mailbox = "support@acme.test", "sales@acme.test"
		seqA, seqB := mustAppend(t, s, a), mustAppend(t, s, b)
		if seqA == seqB {
			t.Fatalf("one email delivered to two mailboxes has one seq %d, want two copies", seqA)
		}
		if got, err := s.AppendMessage(ctx, a); err != nil || got.Seq != seqA || got.Outcome != AlreadyStored {
			t.Errorf("second delivery to the first mailbox = %+v, %v; want seq %d already stored", got, err, seqA)
		}
		if got, err := s.Message(ctx, "sales@acme.test", "<m1@x>"); err != nil || got.Seq != seqB || got.ThreadID != "sales/t" {
			t.Errorf("Message(sales) = %+v, %v; want seq %d in sales/t", got, err, seqB)
		}
		if _, err := s.Message(ctx, "", "<m1@x>"); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("Message(default mailbox) error = %v, want ErrMessageNotFound", err)
		}
	})
}

func TestARunHasAtMostOneReply(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		reply := msg("t", "<r1@x>", baseTime)
		reply.Direction, reply.RunKey = history.Outbound, "run-1"
		mustAppend(t, s, reply)
		other := reply
		other.MessageID = "<r2@x>"
		if _, err := s.AppendMessage(ctx, other); !errors.Is(err, ErrConflict) {
			t.Errorf("a second reply of run-1 error = %v, want ErrConflict", err)
		}
		if n := countRows(t, s, "messages", ""); n != 1 {
			t.Errorf("%d messages stored, want the first reply only", n)
		}
		if got, err := s.AppendMessage(ctx, reply); err != nil || got.Outcome != AlreadyStored {
			t.Errorf("the reply again = %+v, %v; want already stored", got, err)
		}
	})
}

func TestThreadOfFindsTheFirstStoredReference(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		seqs := map[string]int64{}
		for _, m := range []struct{ mailbox, thread, id string }{
			{"a", "a/t1", "<m1@x>"}, {"a", "a/t2", "<m2@x>"}, {"b", "b/t3", "<m3@x>"},
		} {
			mm := msg(m.thread, m.id, baseTime)
			mm.Mailbox = m.mailbox
			seqs[m.id] = mustAppend(t, s, mm)
		}
		cases := []struct {
			mailbox    string
			ids        []string
			newThread  string
			thread, id string
		}{
			{"a", []string{"<unknown@x>", "<m2@x>", "<m1@x>"}, "", "a/t2", "<m2@x>"},
			{"a", []string{"<m1@x>", "<m2@x>"}, "a/t9", "a/t1", "<m1@x>"}, // a stored id wins over the new thread
			{"b", []string{"<m1@x>", "<m2@x>"}, "", "", ""},
			{"a", nil, "", "", ""},
			{"a", []string{"<unknown@x>"}, "a/t2", "a/t2", ""}, // none stored, but the thread it would start is
			{"a", []string{"<unknown@x>"}, "a/t9", "", ""},
			{"a", nil, "a/t1", "a/t1", ""},
		}
		for _, c := range cases {
			f, err := s.ThreadOf(ctx, c.mailbox, mail.ThreadQuery{IDs: c.ids, NewThread: c.newThread})
			if err != nil || f != (mail.ThreadFound{ThreadID: c.thread, MessageID: c.id, Seq: seqs[c.id]}) {
				t.Errorf("ThreadOf(%q, %q, %q) = %+v, %v; want %q, %q, %d", c.mailbox, c.ids, c.newThread, f, err,
					c.thread, c.id, seqs[c.id])
			}
		}
		// A stored outbound message answering the first id is reported (the lowest seq of two);
		// an inbound one, or one of another mailbox, is not.
		for _, r := range []struct {
			mailbox, id string
			dir         history.Direction
		}{{"a", "<in@x>", history.Inbound}, {"b", "<other-box@x>", history.Outbound}, {"a", "<r1@x>", history.Outbound}, {"a", "<r2@x>", history.Outbound}} {
			mm := msg("a/t1", r.id, baseTime)
			mm.Mailbox, mm.Direction, mm.InReplyTo = r.mailbox, r.dir, "<q@x>"
			if r.mailbox == "b" {
				mm.ThreadID = "b/t3"
			}
			mustAppend(t, s, mm)
		}
		if f, err := s.ThreadOf(ctx, "a", mail.ThreadQuery{IDs: []string{"<q@x>", "<m1@x>"}, NewThread: "a/t7"}); err != nil || f.ThreadID != "a/t1" || f.MessageID != "<m1@x>" || f.ReplyID != "<r1@x>" {
			t.Errorf("ThreadOf of an answered message = %+v, %v; want a/t1, <m1@x>, reply <r1@x>", f, err)
		}
		if f, err := s.ThreadOf(ctx, "b", mail.ThreadQuery{IDs: []string{"<q2@x>"}}); err != nil || f.ReplyID != "" {
			t.Errorf("ThreadOf of an unanswered message = %+v, %v; want no reply", f, err)
		}
		if _, err := s.ThreadOf(ctx, "a", mail.ThreadQuery{IDs: make([]string, MaxReferences+3)}); !errors.Is(err, ErrInvalid) {
			t.Errorf("ThreadOf(too many ids) error = %v, want ErrInvalid", err)
		}
		if _, err := s.ThreadOf(ctx, "a", mail.ThreadQuery{SubjectKey: strings.Repeat("k", MaxSubjectKeyChars+1)}); !errors.Is(err, ErrInvalid) {
			t.Errorf("ThreadOf(too long a subject key) error = %v, want ErrInvalid", err)
		}
	})
}

// AppendMail is AppendMessage in the shape runtime/mail's Ingest asks of its store: a second
// delivery returns the stored seq and thread, flagged as a duplicate.
func TestAppendMailReportsTheStoredThreadOfADuplicate(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		m := msg("p/t1", "<m@x>", baseTime).Message
		seq, thread, dup, err := s.AppendMail(ctx, m, "p@acme.test", mail.MailRecord{NotToAnswer: "auto-submitted: auto-replied", Problems: []string{"cc: bad address"}})
		if err != nil || thread != "p/t1" || dup {
			t.Fatalf("AppendMail = %d, %q, %t, %v", seq, thread, dup, err)
		}
		m.ThreadID = "p/t2" // threaded elsewhere the second time
		seq2, thread2, dup, err := s.AppendMail(ctx, m, "p@acme.test", mail.MailRecord{NotToAnswer: "auto-submitted: auto-replied", Problems: []string{"cc: bad address"}})
		if err != nil || seq2 != seq || thread2 != "p/t1" || !dup {
			t.Errorf("second AppendMail = %d, %q, %t, %v; want %d in p/t1, duplicate", seq2, thread2, dup, err, seq)
		}
		got, err := s.Message(ctx, "p@acme.test", "<m@x>")
		if err != nil || got.NotToAnswer != "auto-submitted: auto-replied" || !slices.Equal(got.Problems, []string{"cc: bad address"}) {
			t.Errorf("stored mail = %+v, %v", got, err)
		}
	})
}
