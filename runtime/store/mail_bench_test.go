package store

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// ingestCase is one kind of message mail.Ingest stores, with the round trips it costs and the
// statements it writes.
type ingestCase struct {
	name   string
	raw    func(i int) []byte // the i-th message of this kind (a fresh Message-ID)
	trips  int64              // database round trips, BEGIN and COMMIT included
	writes int                // statements that write (one per persona, none for a second copy)
	joined bool               // the message joins the root's thread
	in     mail.Ingestion     // ingestion(), unless set
}

func ingestCases(t testing.TB) []ingestCase {
	attached, err := os.ReadFile("../../examples/mail/05-customer-attachment.eml")
	if err != nil {
		t.Fatal(err)
	}
	reply := func(i int) []byte {
		return []byte(fmt.Sprintf("From: Lena <lena@cust.example>\r\nTo: support@acme.example\r\nSubject: Re: order\r\n"+
			"Date: Mon, 03 Mar 2025 10:00:00 +0000\r\nMessage-ID: <reply-%d@cust.example>\r\nIn-Reply-To: <root@cust.example>\r\n"+
			"References: <root@cust.example>\r\n\r\nThanks, one more question %d.\r\n", i, i))
	}
	orphan := func(i int) []byte {
		return []byte(fmt.Sprintf("From: Lena <lena@cust.example>\r\nTo: support@acme.example\r\nSubject: Re: lost\r\n"+
			"Date: Mon, 03 Mar 2025 10:00:00 +0000\r\nMessage-ID: <orphan-%d@cust.example>\r\nIn-Reply-To: <lost@cust.example>\r\n"+
			"References: <lost@cust.example>\r\n\r\nDid you get my first mail?\r\n", i))
	}
	withAttachment := func(kind string, i int) []byte {
		return bytes.Replace(attached, []byte("<c3@brightline.io>"), []byte(fmt.Sprintf("<c3-%s-%d@brightline.io>", kind, i)), 1)
	}
	both := ingestion()
	research := &runtime.Persona{Name: "research-agent"}
	research.Mailbox.Address = "research@acme.example"
	both.Personas = append(both.Personas, research)
	sent := ingestion()
	sent.Sent = true // the host's copy of what the persona sent
	return []ingestCase{
		{name: "reply", raw: reply, trips: 2, writes: 1, joined: true},
		{name: "new_thread", raw: func(i int) []byte {
			return []byte(fmt.Sprintf("From: Lena <lena@cust.example>\r\nTo: support@acme.example\r\nSubject: question %d\r\n"+
				"Date: Mon, 03 Mar 2025 10:00:00 +0000\r\nMessage-ID: <new-%d@cust.example>\r\n\r\nA new question.\r\n", i, i))
		}, trips: 2, writes: 1},
		{name: "duplicate", raw: func(int) []byte { return reply(0) }, trips: 1},
		// A reply whose parent the mailbox never got joins the thread an earlier reply to the
		// same parent started (ingestStore stores one): the lookup finds the thread's first row.
		{name: "reply_to_unknown_parent", raw: func(i int) []byte { return orphan(i) }, trips: 2, writes: 1, joined: true},
		{name: "reply_with_attachment", raw: func(i int) []byte {
			b := withAttachment("reply", i)
			b = bytes.Replace(b, []byte("In-Reply-To: <s2@acme.example>"), []byte("In-Reply-To: <root@cust.example>"), 1)
			return bytes.Replace(b, []byte("References: <c1@brightline.io> <s1@acme.example> <c2@brightline.io>\r\n <s2@acme.example>"),
				[]byte("References: <root@cust.example>"), 1)
		}, trips: 2, writes: 1, joined: true},
		{name: "new_thread_with_attachment", raw: func(i int) []byte { // its root is new too
			return bytes.ReplaceAll(withAttachment("new", i), []byte("<c1@brightline.io>"), []byte(fmt.Sprintf("<c1-%d@brightline.io>", i)))
		}, trips: 2, writes: 1},
		{name: "own_sent_mail", raw: func(i int) []byte {
			return []byte(fmt.Sprintf("From: support@acme.example\r\nTo: Lena <lena@cust.example>\r\nSubject: Re: order\r\n"+
				"Date: Mon, 03 Mar 2025 10:05:00 +0000\r\nMessage-ID: <sent-%d@acme.example>\r\nIn-Reply-To: <root@cust.example>\r\n"+
				"References: <root@cust.example>\r\n\r\nWe are on it.\r\n", i))
		}, trips: 2, writes: 1, joined: true, in: sent},
		// Routed to two personas: each persona's copy costs what one persona's does.
		{name: "two_personas_new_thread", raw: func(i int) []byte {
			return []byte(fmt.Sprintf("From: Lena <lena@cust.example>\r\nTo: support@acme.example, research@acme.example\r\n"+
				"Subject: both %d\r\nDate: Mon, 03 Mar 2025 10:00:00 +0000\r\nMessage-ID: <both-%d@cust.example>\r\n\r\nFor you both.\r\n", i, i))
		}, trips: 4, writes: 2, in: both},
	}
}

// ingestStore returns a migrated store of dialect d whose round trips are counted and whose
// statements are recorded, holding the root message the replies answer, the message reply(0)
// (so the duplicate case finds it) and the first reply to an unknown parent.
func ingestStore(t testing.TB, d Dialect, in mail.Ingestion, cases []ingestCase) (*Store, *atomic.Int64, *storetest.QueryLog) {
	t.Helper()
	dsn := scratchDSN(t, d)
	openMigrated(t, dsn) // the schema; this store stays open until the test ends
	cs, trips, log := loggingStore(t, dsn)
	for _, raw := range [][]byte{
		[]byte("From: lena@cust.example\r\nTo: support@acme.example\r\nMessage-ID: <root@cust.example>\r\nDate: Mon, 03 Mar 2025 09:00:00 +0000\r\n\r\norder?\r\n"),
		cases[0].raw(0),
		[]byte("From: Lena <lena@cust.example>\r\nTo: support@acme.example\r\nMessage-ID: <orphan-0@cust.example>\r\n" +
			"In-Reply-To: <lost@cust.example>\r\nDate: Mon, 03 Mar 2025 09:30:00 +0000\r\n\r\nhello?\r\n"),
	} {
		if _, err := mail.Ingest(context.Background(), cs, bytes.NewReader(raw), in); err != nil {
			t.Fatal(err)
		}
	}
	return cs, trips, log
}

func ingestion() mail.Ingestion {
	support := &runtime.Persona{Name: "support-agent"}
	support.Mailbox.Address = "support@acme.example"
	return mail.Ingestion{Personas: []*runtime.Persona{support}, Arrived: time.Date(2025, 3, 7, 0, 0, 0, 0, time.UTC)}
}

// TestIngestRoundTrips pins the database round trips mail.Ingest costs per message and persona
// on both dialects: 2 for every message it stores (the lookup of the message's own id and the
// ids it references, then one INSERT that commits on its own), whether it joins a thread or
// starts one (on MySQL a join costs 5: the lookup, then BEGIN, the locking read of the thread's
// first row, the INSERT and COMMIT, so that seqs commit in order), with attachments or without, inbound or the persona's own sent mail; 1 for a
// second copy (the lookup finds it; nothing is written); per persona when routed to several. A
// reply to a message the mailbox never got joins the thread an earlier reply to it started, at
// the same cost (the lookup reads that thread's first row too).
// Each stored message is exactly one write statement (or one transaction), so there is no point
// between two writes where a crash could leave half of it.
func TestIngestRoundTrips(t *testing.T) {
	cases := ingestCases(t)
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			s, trips, log := ingestStore(t, d, ingestion(), cases)
			for _, c := range cases {
				in := c.in
				if in.Personas == nil {
					in = ingestion()
				}
				log.TakeExecs()
				before := trips.Load()
				got, err := mail.Ingest(context.Background(), s, bytes.NewReader(c.raw(1)), in)
				if err != nil {
					t.Fatal(err)
				}
				// On MySQL a join is a transaction (see writeMessage): BEGIN, the locking read of the
				// thread's first row, the INSERT, COMMIT.
				wantTrips, writes, tx := c.trips, c.writes, d == DialectMySQL && c.joined
				if tx {
					wantTrips, writes = wantTrips+3, writes+2
				}
				if n := trips.Load() - before; n != wantTrips {
					t.Errorf("%s: %d round trips, want %d", c.name, n, wantTrips)
				}
				if execs := log.TakeExecs(); len(execs) != writes || tx && (execs[0] != "BEGIN" || execs[len(execs)-1] != "COMMIT") {
					t.Errorf("%s: %d statements %.80q, want %d writes (in a transaction: %v)", c.name, len(execs), execs, writes, tx)
				}
				if len(got.Deliveries) != len(in.Personas) {
					t.Fatalf("%s: %d deliveries", c.name, len(got.Deliveries))
				}
				for _, dl := range got.Deliveries {
					if dl.Duplicate != (c.name == "duplicate") || dl.Joined != c.joined || dl.Message.Seq == 0 {
						t.Errorf("%s: duplicate %v, joined %v, seq %d", c.name, dl.Duplicate, dl.Joined, dl.Message.Seq)
					}
					if c.name == "own_sent_mail" && dl.Message.Direction != history.Outbound {
						t.Errorf("%s: stored as %s", c.name, dl.Message.Direction)
					}
					stored, err := s.Message(context.Background(), dl.Persona.Name, dl.Message.MessageID)
					if err != nil || stored.Seq != dl.Message.Seq || stored.ThreadID != dl.Message.ThreadID ||
						!sameAttachments(stored.Attachments, dl.Message.Attachments) {
						t.Errorf("%s: stored %+v, %v; delivered seq %d thread %s", c.name, stored, err, dl.Message.Seq, dl.Message.ThreadID)
					}
				}
			}
		})
	}
}

// BenchmarkIngest ingests messages through mail.Ingest into the store and reports the database
// round trips per message (target: at most 3 per message and persona).
func BenchmarkIngest(b *testing.B) {
	cases := ingestCases(b)
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		for _, c := range cases {
			b.Run(string(d)+"/"+c.name, func(b *testing.B) {
				in := c.in
				if in.Personas == nil {
					in = ingestion()
				}
				s, trips, _ := ingestStore(b, d, in, cases)
				ctx := context.Background()
				raws := make([][]byte, b.N)
				for i := range raws {
					raws[i] = c.raw(i + 1)
				}
				b.ReportAllocs()
				b.ResetTimer()
				before := trips.Load()
				for i := range b.N {
					if _, err := mail.Ingest(ctx, s, bytes.NewReader(raws[i]), in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(trips.Load()-before)/float64(b.N), "roundtrips/op")
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}
