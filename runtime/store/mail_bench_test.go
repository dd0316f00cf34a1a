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
	"github.com/personagen/personagen/runtime/mail"
)

// ingestCase is one kind of message mail.Ingest stores, with the round trips it may cost.
type ingestCase struct {
	name  string
	raw   func(i int) []byte // the i-th message of this kind (a fresh Message-ID)
	trips int64
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
	return []ingestCase{
		{"reply", reply, 2},
		{"new_thread", func(i int) []byte {
			return []byte(fmt.Sprintf("From: Lena <lena@cust.example>\r\nTo: support@acme.example\r\nSubject: question %d\r\n"+
				"Date: Mon, 03 Mar 2025 10:00:00 +0000\r\nMessage-ID: <new-%d@cust.example>\r\n\r\nA new question.\r\n", i, i))
		}, 3},
		{"duplicate", func(int) []byte { return reply(0) }, 4},
		{"new_thread_with_attachment", func(i int) []byte {
			return bytes.Replace(attached, []byte("<c3@brightline.io>"), []byte(fmt.Sprintf("<c3-%d@brightline.io>", i)), 1)
		}, 6},
	}
}

// ingestStore returns a migrated store of dialect d whose round trips are counted, holding the
// root message the replies answer and the message reply(0), so the duplicate case finds it.
func ingestStore(t testing.TB, d Dialect, in mail.Ingestion, cases []ingestCase) (*Store, *atomic.Int64) {
	t.Helper()
	dsn := scratchDSN(t, d)
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	cs, trips := countingStore(t, s, dsn)
	for _, raw := range [][]byte{
		[]byte("From: lena@cust.example\r\nTo: support@acme.example\r\nMessage-ID: <root@cust.example>\r\nDate: Mon, 03 Mar 2025 09:00:00 +0000\r\n\r\norder?\r\n"),
		cases[0].raw(0),
	} {
		if _, err := mail.Ingest(context.Background(), cs, bytes.NewReader(raw), in); err != nil {
			t.Fatal(err)
		}
	}
	return cs, trips
}

func ingestion() mail.Ingestion {
	support := &runtime.Persona{Name: "support-agent"}
	support.Mailbox.Address = "support@acme.example"
	return mail.Ingestion{Personas: []*runtime.Persona{support}, Arrived: time.Date(2025, 3, 7, 0, 0, 0, 0, time.UTC)}
}

// TestIngestRoundTrips pins the database round trips mail.Ingest costs per message and persona
// on both dialects: a reply that joins a thread 2 (the lookup, one INSERT); a message that starts
// a thread 3 (the lookup, the thread's row, the message); a second copy 4, writing nothing (the
// lookup, the INSERT that reports the stored id, and the two reads of the stored copy that say
// how it differs); a message with an attachment that starts a thread 6 (the lookup and one
// transaction: BEGIN, thread, message, attachments, COMMIT; 5 when it joins a thread).
func TestIngestRoundTrips(t *testing.T) {
	in := ingestion()
	cases := ingestCases(t)
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			s, trips := ingestStore(t, d, in, cases)
			for _, c := range cases {
				before := trips.Load()
				got, err := mail.Ingest(context.Background(), s, bytes.NewReader(c.raw(1)), in)
				if err != nil {
					t.Fatal(err)
				}
				if n := trips.Load() - before; n != c.trips {
					t.Errorf("%s: %d round trips, want %d", c.name, n, c.trips)
				}
				if dup := got.Deliveries[0].Duplicate; dup != (c.name == "duplicate") {
					t.Errorf("%s: duplicate %v", c.name, dup)
				}
			}
		})
	}
}

// BenchmarkIngest ingests messages through mail.Ingest into the store and reports the database
// round trips per message (target: at most 3 for a message without attachments).
func BenchmarkIngest(b *testing.B) {
	in := ingestion()
	cases := ingestCases(b)
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		for _, c := range cases {
			b.Run(string(d)+"/"+c.name, func(b *testing.B) {
				s, trips := ingestStore(b, d, in, cases)
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
