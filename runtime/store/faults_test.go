package store

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"modernc.org/sqlite"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
)

// cutter decides which statement loses its acknowledgement: armed with a statement prefix, it
// fires once, on the next statement that starts with it (whitespace collapsed), after the
// database executed (and committed) it.
type cutter struct {
	mu     sync.Mutex
	prefix string
	fired  int
}

func (c *cutter) arm(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefix = prefix
}

// hit reports whether stmt is the armed one, and disarms.
func (c *cutter) hit(stmt string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.prefix == "" || !strings.HasPrefix(strings.Join(strings.Fields(stmt), " "), c.prefix) {
		return false
	}
	c.prefix = ""
	c.fired++
	return true
}

func (c *cutter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

// commitCutProxy is a TCP proxy in front of the MySQL server that cuts a connection right after
// the server answered the statement the cutter picks (a COMMIT, or a statement that commits on
// its own): the server has committed, the client never hears so.
type commitCutProxy struct {
	ln     net.Listener
	target string
	cut    *cutter
}

func newCommitCutProxy(t *testing.T, target string, cut *cutter) *commitCutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitCutProxy{ln: ln, target: target, cut: cut}
	go p.serve()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *commitCutProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		go p.relay(client, server)
	}
}

// relay forwards one connection. Client packets are read whole (3-byte length, sequence id,
// payload); a COM_QUERY (0x03) the cutter picks arms the connection before it is forwarded, and
// the server's answer to it is dropped with both sides closed.
func (p *commitCutProxy) relay(client, server net.Conn) {
	var armed atomic.Bool
	closeBoth := func() { client.Close(); server.Close() }
	go func() {
		defer closeBoth()
		buf := make([]byte, 64<<10)
		for {
			n, err := server.Read(buf)
			if armed.Load() {
				return // the answer to the cut statement: never delivered
			}
			if n > 0 {
				if _, werr := client.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	defer closeBoth()
	r := bufio.NewReaderSize(client, 64<<10)
	header := make([]byte, 4)
	for first := true; ; first = false {
		if _, err := io.ReadFull(r, header); err != nil {
			return
		}
		n := int(header[0]) | int(header[1])<<8 | int(header[2])<<16
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return
		}
		// The first packet is the handshake response, not a command.
		if !first && n > 0 && payload[0] == 0x03 && p.cut.hit(string(payload[1:])) {
			armed.Store(true)
		}
		if _, err := server.Write(append(header, payload...)); err != nil {
			return
		}
	}
}

// errAckLost is what the SQLite fault layer returns for a statement or commit it let through:
// the work is done, the caller is told it failed, as when a connection breaks after the commit.
var errAckLost = errors.New("connection lost after the commit (injected)")

// ackLossConnector wraps the SQLite driver: a commit, or a statement outside a transaction,
// that the cutter picks runs to completion and then returns errAckLost.
type ackLossConnector struct {
	dsn string
	cut *cutter
}

func (c ackLossConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := (&sqlite.Driver{}).Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &ackLossConn{Conn: conn, cut: c.cut}, nil
}

func (c ackLossConnector) Driver() driver.Driver { return &sqlite.Driver{} }

type ackLossConn struct {
	driver.Conn
	cut  *cutter
	inTx bool
}

func (c *ackLossConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.inTx = true
	return ackLossTx{Tx: tx, conn: c}, nil
}

func (c *ackLossConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	if err == nil && !c.inTx && c.cut.hit(query) {
		return nil, errAckLost
	}
	return r, err
}

func (c *ackLossConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *ackLossConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

type ackLossTx struct {
	driver.Tx
	conn *ackLossConn
}

func (t ackLossTx) Commit() error {
	t.conn.inTx = false
	err := t.Tx.Commit()
	if err == nil && t.conn.cut.hit("COMMIT") {
		return errAckLost
	}
	return err
}

func (t ackLossTx) Rollback() error {
	t.conn.inTx = false
	return t.Tx.Rollback()
}

// eachFaultyDB runs f on SQLite and MySQL with two stores on one fresh migrated database:
// faulty, whose acknowledgements the cutter can drop (the SQLite driver wrapper, or the TCP
// proxy in front of MySQL), and direct, which reads what was really stored.
func eachFaultyDB(t *testing.T, f func(t *testing.T, faulty, direct *Store, cut *cutter), opts ...Option) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			dsn := migratedDSN(t, d)
			direct, err := Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { direct.Close() })
			if err := direct.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			cut := &cutter{}
			var faulty *Store
			if d == DialectSQLite {
				p, err := parseDSN(dsn)
				if err != nil {
					t.Fatal(err)
				}
				db := sqlx.NewDb(sql.OpenDB(ackLossConnector{dsn: p.sqlite, cut: cut}), "sqlite")
				if faulty, err = OpenDB(db, opts...); err != nil {
					t.Fatal(err)
				}
			} else {
				cfg, err := mysql.ParseDSN(dsn)
				if err != nil {
					t.Fatal(err)
				}
				proxy := newCommitCutProxy(t, cfg.Addr, cut)
				cfg.Addr = proxy.ln.Addr().String()
				// The driver logs every cut connection (with the logger set when the store
				// parses its DSN); the test expects them.
				mysql.SetLogger(log.New(io.Discard, "", 0))
				faulty, err = Open(context.Background(), cfg.FormatDSN(), opts...)
				mysql.SetLogger(log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime|log.Lshortfile))
				if err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(func() { faulty.Close() })
			f(t, faulty, direct, cut)
		})
	}
}

// Every write API, with the acknowledgement of its commit lost (the database committed, the
// caller got an error), retried with the same key: exactly one stored copy, and the retry
// reports a definite outcome with the stored key. Three rounds of every write, on SQLite and on
// MariaDB through the COMMIT-cut proxy.
func TestEveryWriteRetriedAfterALostCommitIsStoredOnce(t *testing.T) {
	clock := newTestClock()
	const rounds = 3
	eachFaultyDB(t, func(t *testing.T, s, direct *Store, cut *cutter) {
		ctx := context.Background()
		cuts := 0
		// lose arms the cutter for prefix, runs first (which must fail because the cut fired),
		// and checks that the write is stored nonetheless.
		lose := func(what, prefix string, first func() error, stored func() bool) {
			t.Helper()
			before := cut.count()
			cut.arm(prefix)
			err := first()
			cut.arm("")
			if cut.count() != before+1 {
				t.Fatalf("%s: the cut on %q never fired (err %v)", what, prefix, err)
			}
			cuts++
			if err == nil {
				t.Fatalf("%s: succeeded although its acknowledgement was cut", what)
			}
			if !stored() {
				t.Fatalf("%s: not stored after the cut (%v): the cut came before the commit", what, err)
			}
		}
		count := func(table, where string, args ...any) int { return countRows(t, direct, table, where, args...) }
		for i := range rounds {
			thread := fmt.Sprintf("t%d", i)
			m := msg(thread, thread+"-in", baseTime)
			m.Attachments = []history.Attachment{{ID: "a", Filename: "f.pdf", ContentType: "application/pdf", Size: 9}}

			// AppendMessage (on SQLite one INSERT that commits on its own, after the append to a
			// stored thread found none; on MySQL a transaction that looks for the thread's first
			// row, finds none and starts the thread): the retry returns the stored seq, already
			// stored, identical.
			newThread := startInsert(s.dialect)
			if s.dialect == DialectMySQL {
				newThread = "COMMIT"
			}
			lose("AppendMessage", newThread, func() error { _, err := s.AppendMessage(ctx, m); return err },
				func() bool { return count("messages", "message_id = ?", m.MessageID) == 1 })
			stored, err := direct.Message(ctx, "", m.MessageID)
			if err != nil {
				t.Fatal(err)
			}
			a, err := s.AppendMessage(ctx, m)
			if err != nil || a.Seq != stored.Seq || a.Outcome != AlreadyStored || a.Differs != nil {
				t.Fatalf("retried AppendMessage = %+v, %v; want seq %d already stored, no differences", a, err, stored.Seq)
			}
			seq := a.Seq
			for j := range 2 { // the thread's later messages, so compaction has older boundaries
				mustAppend(t, direct, msg(thread, fmt.Sprintf("%s-%d", thread, j), baseTime))
			}

			// RecordRound: already stored.
			round := testRound(Owner{OwnerMessage, seq}, "run-"+thread, 0, 3)
			lose("RecordRound", "COMMIT", func() error { _, err := s.RecordRound(ctx, round); return err },
				func() bool { return count("tool_uses", "owner_id = ?", seq) == 3 })
			if out, err := s.RecordRound(ctx, round); err != nil || out != AlreadyStored {
				t.Fatalf("retried RecordRound = %v, %v; want already stored", out, err)
			}

			// StartRun (one INSERT that commits alone): the retry gets the run, still ours.
			nr := NewRun{Key: "reply-" + thread, Kind: RunReply, Persona: "p", ThreadID: thread, MessageSeq: seq,
				Holder: "w1", LeaseFor: time.Minute}
			lose("StartRun", "INSERT INTO runs", func() error { _, _, err := s.StartRun(ctx, nr); return err },
				func() bool { return count("runs", "run_key = ?", nr.Key) == 1 })
			run, out, err := s.StartRun(ctx, nr)
			if err != nil || out != AlreadyStored || run.Lease.Holder != "w1" || run.Status != RunRunning || run.Attempt != 1 {
				t.Fatalf("retried StartRun = %+v, %v, %v; want our running run, already stored", run, out, err)
			}

			// RenewLease.
			clock.Advance(10 * time.Second)
			lose("RenewLease", "UPDATE runs SET lease_expires_at", func() error {
				_, err := s.RenewLease(ctx, nr.Key, "w1", time.Minute)
				return err
			}, func() bool { r, _ := direct.Run(ctx, nr.Key); return r.Lease.Expires.After(run.Lease.Expires) })
			if l, err := s.RenewLease(ctx, nr.Key, "w1", time.Minute); err != nil || l.Holder != "w1" {
				t.Fatalf("retried RenewLease = %+v, %v", l, err)
			}

			// FinishRun: already stored.
			fin := Finish{Status: RunSucceeded, StopReason: "end_turn", Usage: chat.Usage{InputTokens: 10, OutputTokens: 2}}
			lose("FinishRun", "UPDATE runs SET status", func() error { _, err := s.FinishRun(ctx, nr.Key, "w1", fin); return err },
				func() bool { r, _ := direct.Run(ctx, nr.Key); return r.Status == RunSucceeded })
			if out, err := s.FinishRun(ctx, nr.Key, "w1", fin); err != nil || out != AlreadyStored {
				t.Fatalf("retried FinishRun = %v, %v; want already stored", out, err)
			}

			// TakeOverRun of an expired lease: the retry gets the run, taken over once (attempt 2).
			sched := NewRun{Key: "sched-" + thread, Kind: RunScheduled, Persona: "p", Responsibility: "digest",
				FireAt: fireAt.Add(time.Duration(i) * time.Hour), Holder: "w1", LeaseFor: time.Minute}
			if _, _, err := s.StartRun(ctx, sched); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Minute)
			lose("TakeOverRun", "UPDATE runs SET faults = faults + CASE WHEN lease_holder = '' THEN 0 ELSE 1 END, lease_holder", func() error {
				_, err := s.TakeOverRun(ctx, sched.Key, "w2", time.Minute)
				return err
			}, func() bool { r, _ := direct.Run(ctx, sched.Key); return r.Lease.Holder == "w2" })
			if r, err := s.TakeOverRun(ctx, sched.Key, "w2", time.Minute); err != nil || r.Lease.Holder != "w2" || r.Attempt != 2 {
				t.Fatalf("retried TakeOverRun = %+v, %v; want w2's, attempt 2", r, err)
			}

			// AbandonRun once the taker's lease expired too.
			clock.Advance(2 * time.Minute)
			lose("AbandonRun", "UPDATE runs SET status = 'abandoned'", func() error {
				_, err := s.AbandonRun(ctx, sched.Key, "lease expired")
				return err
			}, func() bool { r, _ := direct.Run(ctx, sched.Key); return r.Status == RunAbandoned })
			if out, err := s.AbandonRun(ctx, sched.Key, "lease expired"); err != nil || out != AlreadyStored {
				t.Fatalf("retried AbandonRun = %v, %v; want already stored", out, err)
			}

			// A skipped fire (StartRun with status skipped).
			skip := NewRun{Key: "skip-" + thread, Kind: RunScheduled, Persona: "p", Responsibility: "digest",
				FireAt: fireAt.Add(time.Duration(i)*time.Hour + time.Minute), Status: RunSkipped, Reason: "overlap"}
			lose("StartRun skipped", "INSERT INTO runs", func() error { _, _, err := s.StartRun(ctx, skip); return err },
				func() bool { return count("runs", "run_key = ?", skip.Key) == 1 })
			if r, out, err := s.StartRun(ctx, skip); err != nil || out != AlreadyStored || r.Status != RunSkipped {
				t.Fatalf("retried skipped StartRun = %+v, %v, %v", r, out, err)
			}

			// Compact, its claim cut: the claim is released, the retry completes.
			seqs := threadSeqs(t, direct, thread)
			lose("Compact claim", "INSERT INTO compactions", func() error {
				_, err := s.Compact(ctx, thread, seqs[0], fixedSummary(nil))
				return err
			}, func() bool { return true })
			if p, c := compactionCount(t, direct, thread); p != 0 || c != 0 {
				t.Fatalf("after the cut claim: %d pending, %d completed; want the claim released", p, c)
			}
			if res, err := s.Compact(ctx, thread, seqs[0], fixedSummary(nil)); err != nil || res.Outcome != CompactCompleted {
				t.Fatalf("retried Compact = %+v, %v; want completed", res, err)
			}
			// Compact, its completion cut: stored; the retry says already completed.
			lose("Compact complete", "UPDATE compactions SET status = 'completed'", func() error {
				_, err := s.Compact(ctx, thread, seqs[1], fixedSummary(nil))
				return err
			}, func() bool { _, c := compactionCount(t, direct, thread); return c == 2 })
			if res, err := s.Compact(ctx, thread, seqs[1], fixedSummary(nil)); err != nil || res.Outcome != CompactAlreadyDone {
				t.Fatalf("retried Compact = %+v, %v; want already completed", res, err)
			}

			// Exactly one copy of everything this round wrote.
			for table, where := range map[string]string{
				"messages":    "thread_id = ?",
				"attachments": "thread_id = ? AND attachments IS NOT NULL",
				"tool_uses":   "thread_id = ?",
				"runs":        "thread_id = ?",
				"compactions": "thread_id = ?",
			} {
				want := map[string]int{"messages": 3, "attachments": 1, "tool_uses": 3, "runs": 1, "compactions": 2}[table]
				if table == "attachments" {
					table = "messages" // a column of the message's row
				}
				if n := count(table, where, thread); n != want {
					t.Errorf("round %d: %d %s rows, want %d", i, n, table, want)
				}
			}
		}
		if n := countRows(t, direct, "runs", "kind = 'scheduled'"); n != 2*rounds {
			t.Errorf("%d scheduled runs, want %d", n, 2*rounds)
		}

		// DeleteThread, cut: deleted; the retry is a no-op.
		lose("DeleteThread", "COMMIT", func() error { return s.DeleteThread(ctx, "t0") },
			func() bool { return countRows(t, direct, "messages", "thread_id = 't0'") == 0 })
		if err := s.DeleteThread(ctx, "t0"); err != nil {
			t.Fatalf("retried DeleteThread: %v", err)
		}
		t.Logf("%d acknowledgements cut, every retry definite, one copy of each write", cuts)
		if want := rounds*10 + 1; cuts != want {
			t.Errorf("%d cuts, want %d", cuts, want)
		}
	}, WithClock(clock.Now))
}

// startInsert and joinInsert are the statements that write a message that starts a thread and
// one that joins a stored thread, as the fault layers see their text (whitespace collapsed):
// with '?' placeholders on SQLite, the values interpolated on MySQL.
func startInsert(d Dialect) string {
	p := strings.Join(strings.Fields("INSERT INTO messages ("+messageInsertColumns+") VALUES ("), " ")
	if d == DialectSQLite {
		return p + "?"
	}
	return p + "'"
}

func joinInsert() string {
	return strings.Join(strings.Fields("INSERT INTO messages ("+messageInsertColumns+") VALUES ((SELECT"), " ")
}

// joinWrite is the statement that commits an append to a stored thread: on SQLite the join
// INSERT itself, on MySQL the COMMIT of the transaction that locks the thread's first row first.
func joinWrite(d Dialect) string {
	if d == DialectSQLite {
		return joinInsert()
	}
	return "COMMIT"
}

// Ingestion through mail.Ingest, each of its writes with its acknowledgement lost (the database
// committed, the caller got an error), then retried: the message is stored once, whole (its
// attachments with it), and the retry reports it as the duplicate it is, with the stored seq and
// thread. The writes: the INSERT that starts a thread, the write that joins one (each a single
// statement that commits on its own, so there is nothing between two writes to interrupt; on
// MySQL the join is a transaction, its COMMIT cut), and
// the two transactions of the write path — an outbound reply with its outbox entry, and a message
// too large for one statement, whose attachments follow in an UPDATE — with their COMMIT cut.
func TestIngestRetriedAfterALostCommitIsStoredOnce(t *testing.T) {
	attached, err := os.ReadFile("../../examples/mail/05-customer-attachment.eml")
	if err != nil {
		t.Fatal(err)
	}
	in := ingestion()
	eachFaultyDB(t, func(t *testing.T, s, direct *Store, cut *cutter) {
		ctx := context.Background()
		// lose arms the cutter for prefix, ingests raw through the faulty store (which must fail:
		// the cut fired), checks that the message is stored once with its attachments, ingests it
		// again and checks the retry says duplicate with the stored seq and thread.
		lose := func(what, prefix string, raw []byte, wantAtts int) history.Message {
			t.Helper()
			before := cut.count()
			cut.arm(prefix)
			_, err := mail.Ingest(ctx, s, bytes.NewReader(raw), in)
			cut.arm("")
			if cut.count() != before+1 {
				t.Fatalf("%s: the cut on %q never fired (err %v)", what, prefix, err)
			}
			if err == nil {
				t.Fatalf("%s: succeeded although its acknowledgement was cut", what)
			}
			parsed, err := (&mail.Parser{}).Parse(bytes.NewReader(raw), in.Arrived)
			if err != nil {
				t.Fatal(err)
			}
			id := parsed.MessageID
			if n := countRows(t, direct, "messages", "message_id = ?", id); n != 1 {
				t.Fatalf("%s: %d rows after the cut, want 1 (the cut came after the commit)", what, n)
			}
			stored, err := direct.Message(ctx, "support-agent", id)
			if err != nil || len(stored.Attachments) != wantAtts {
				t.Fatalf("%s: stored %d attachments, %v; want %d", what, len(stored.Attachments), err, wantAtts)
			}
			got, err := mail.Ingest(ctx, s, bytes.NewReader(raw), in)
			if err != nil || len(got.Deliveries) != 1 {
				t.Fatalf("%s: retry: %+v, %v", what, got, err)
			}
			d := got.Deliveries[0]
			if !d.Duplicate || d.Message.Seq != stored.Seq || d.Message.ThreadID != stored.ThreadID {
				t.Fatalf("%s: retry = duplicate %v, seq %d, thread %s; want duplicate, %d, %s", what, d.Duplicate,
					d.Message.Seq, d.Message.ThreadID, stored.Seq, stored.ThreadID)
			}
			if n := countRows(t, direct, "messages", "message_id = ?", id); n != 1 {
				t.Fatalf("%s: %d rows after the retry, want 1", what, n)
			}
			return stored.Message
		}

		root := lose("new thread with an attachment", startInsert(s.dialect), attached, 1)
		if n := countRows(t, direct, "messages", "thread_start = ?", root.ThreadID); n != 1 {
			t.Fatalf("the new thread has %d first rows, want 1", n)
		}
		reply := bytes.Replace(attached, []byte("Message-ID: <c3@brightline.io>"), []byte("Message-ID: <c4@brightline.io>"), 1)
		reply = bytes.Replace(reply, []byte("In-Reply-To: <s2@acme.example>"), []byte("In-Reply-To: <c3@brightline.io>"), 1)
		reply = bytes.Replace(reply, []byte("References: <c1@brightline.io> <s1@acme.example> <c2@brightline.io>\r\n <s2@acme.example>"),
			[]byte("References: <c3@brightline.io>"), 1)
		if joined := lose("reply with an attachment", joinWrite(s.dialect), reply, 1); joined.ThreadID != root.ThreadID {
			t.Fatalf("the reply went to thread %s, want %s", joined.ThreadID, root.ThreadID)
		}
		plain := []byte("From: Lena <lena@cust.example>\r\nTo: support@acme.example\r\nSubject: Re: x\r\n" +
			"Date: Thu, 06 Mar 2025 16:00:00 +0100\r\nMessage-ID: <c5@brightline.io>\r\nIn-Reply-To: <c4@brightline.io>\r\n\r\nAnd?\r\n")
		lose("reply", joinWrite(s.dialect), plain, 0)

		// The persona's reply with its outbox entry: one transaction, its COMMIT cut.
		out := msg(root.ThreadID, "r1@acme.example", baseTime)
		out.Mailbox, out.Direction, out.RunKey = "support-agent", history.Outbound, "run-1"
		before := cut.count()
		cut.arm("COMMIT")
		_, err := s.AppendMessage(ctx, out)
		cut.arm("")
		if cut.count() != before+1 || err == nil {
			t.Fatalf("outbound reply: cut fired %d times, err %v", cut.count()-before, err)
		}
		if a, err := s.AppendMessage(ctx, out); err != nil || a.Outcome != AlreadyStored || a.Differs != nil {
			t.Fatalf("retried outbound reply = %+v, %v; want already stored, identical", a, err)
		}
		if n := countRows(t, direct, "mail_outbox", "message_seq IN (SELECT seq FROM messages WHERE run_key = 'run-1')"); n != 1 {
			t.Fatalf("%d outbox entries for the reply, want 1", n)
		}

		// A message too large for one statement: INSERT and UPDATE in one transaction.
		big := largestMessage(root.ThreadID, "big@brightline.io")
		big.Mailbox, big.RunKey = "support-agent", ""
		if !newMessageRow(s.dialect, big).split {
			t.Fatal("the largest message fits one statement; the split path goes untested")
		}
		before = cut.count()
		cut.arm("COMMIT")
		_, err = s.AppendMessage(ctx, big)
		cut.arm("")
		if cut.count() != before+1 || err == nil {
			t.Fatalf("large message: cut fired %d times, err %v", cut.count()-before, err)
		}
		if a, err := s.AppendMessage(ctx, big); err != nil || a.Outcome != AlreadyStored || a.Differs != nil {
			t.Fatalf("retried large message = %+v, %.200v; want already stored, identical", a, err)
		}
		if n := countRows(t, direct, "messages", "message_id = 'big@brightline.io'"); n != 1 {
			t.Fatalf("%d copies of the large message, want 1", n)
		}
		if n := countRows(t, direct, "messages", "thread_id = ?", root.ThreadID); n != 5 {
			t.Errorf("the thread holds %d messages, want 5", n)
		}
	})
}
