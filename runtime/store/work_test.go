package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// claimReply is ClaimReply returning the claimed seq, after checking that the mailbox it
// reports is the claimed message's.
func claimReply(s *Store, c ReplyClaim) (int64, bool, error) {
	w, ok, err := s.ClaimReply(context.Background(), c)
	if err != nil || !ok {
		return w.Seq, ok, err
	}
	m, err := s.messageWhere(context.Background(), "seq = ?", w.Seq)
	if err != nil {
		return 0, false, err
	}
	if m.Mailbox != w.Mailbox {
		return 0, false, fmt.Errorf("claimed seq %d of mailbox %q, reported %q", w.Seq, m.Mailbox, w.Mailbox)
	}
	return w.Seq, true, nil
}

// pending returns the pending reply work of every mailbox, failing t on an error.
func pending(t *testing.T, s *Store) []PendingReply {
	t.Helper()
	p, err := s.PendingReplies(context.Background(), "", 100)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPendingReplyWorkIsWrittenWithTheMessage(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		q1 := mustAppend(t, s, withMailbox(msg("support/t1", "q1@cust.example", baseTime), "support"))
		if got := pending(t, s); len(got) != 1 || got[0] != (PendingReply{Mailbox: "support", ThreadID: "support/t1", FirstSeq: q1, LastSeq: q1}) {
			t.Fatalf("after the first message: %+v", got)
		}
		// A reply of a run, a message not to answer and the persona's own sent mail add no work.
		reply := withMailbox(msg("support/t1", "r1@acme.example", baseTime.Add(time.Second)), "support")
		reply.Direction, reply.RunKey = history.Outbound, "run-1"
		mustAppend(t, s, reply)
		auto := withMailbox(msg("support/t1", "ooo@cust.example", baseTime.Add(2*time.Second)), "support")
		auto.NotToAnswer = "auto-submitted: auto-replied"
		mustAppend(t, s, auto)
		own := withMailbox(msg("support/t1", "sent@acme.example", baseTime.Add(3*time.Second)), "support")
		own.Direction = history.Outbound
		mustAppend(t, s, own)
		// A second copy of a message stores nothing and adds nothing.
		if _, _, dup, err := s.AppendMail(ctx, msg("support/t1", "q1@cust.example", baseTime).Message, "support", mail.MailRecord{ThreadStored: true}); err != nil || !dup {
			t.Fatalf("second copy: dup %v, %v", dup, err)
		}
		if got := pending(t, s); len(got) != 1 || got[0].LastSeq != q1 {
			t.Fatalf("after replies and unanswerable mail: %+v", got)
		}
		// A later answerable message raises the thread's newest; another thread has its own row.
		q2 := mustAppend(t, s, withMailbox(msg("support/t1", "q2@cust.example", baseTime.Add(4*time.Second)), "support"))
		o1 := mustAppend(t, s, withMailbox(msg("sales/t9", "q9@cust.example", baseTime.Add(5*time.Second)), "sales"))
		got := pending(t, s)
		want := []PendingReply{
			{Mailbox: "support", ThreadID: "support/t1", FirstSeq: q1, LastSeq: q2},
			{Mailbox: "sales", ThreadID: "sales/t9", FirstSeq: o1, LastSeq: o1},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("pending:\n got %+v\nwant %+v", got, want)
		}
		if err := s.DeleteThread(ctx, "support/t1"); err != nil {
			t.Fatal(err)
		}
		if got := pending(t, s); len(got) != 1 || got[0].ThreadID != "sales/t9" {
			t.Errorf("after DeleteThread: %+v", got)
		}
	})
}

func TestClaimReplyAnswersTheNewestOrEachMessageUnderALease(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		q1 := mustAppend(t, s, withMailbox(msg("support/t1", "q1@cust.example", baseTime), "support"))
		q2 := mustAppend(t, s, withMailbox(msg("support/t1", "q2@cust.example", baseTime.Add(time.Second)), "support"))
		e1 := mustAppend(t, s, withMailbox(msg("each/t2", "e1@cust.example", baseTime), "each"))
		e2 := mustAppend(t, s, withMailbox(msg("each/t2", "e2@cust.example", baseTime.Add(time.Second)), "each"))
		claim := ReplyClaim{Mailboxes: []string{"support", "each"}, EachMessage: []string{"each"}, Holder: "w1", LeaseFor: time.Minute}
		// Oldest message first: support's thread starts at q1 < e1.
		seq, ok, err := claimReply(s, claim)
		if err != nil || !ok || seq != q2 {
			t.Fatalf("first claim = %d, %v, %v; want support's newest %d", seq, ok, err, q2)
		}
		seq, ok, err = claimReply(s, claim)
		if err != nil || !ok || seq != e1 {
			t.Fatalf("second claim = %d, %v, %v; want each's oldest %d", seq, ok, err, e1)
		}
		if seq, ok, err := claimReply(s, claim); err != nil || ok {
			t.Fatalf("third claim = %d, %v, %v; want nothing while both are claimed", seq, ok, err)
		}
		got := pending(t, s)
		if len(got) != 2 || got[0].Holder != "w1" || got[0].ClaimSeq == 0 || !got[0].AvailableAt.Equal(clock.Now().Add(time.Minute).Truncate(time.Microsecond)) {
			t.Fatalf("claimed rows: %+v", got)
		}
		// The lease ends: another worker claims the thread again.
		clock.Advance(time.Minute)
		claim.Holder = "w2"
		seq, ok, err = claimReply(s, claim)
		if err != nil || !ok || seq != q2 {
			t.Fatalf("claim after the lease = %d, %v, %v; want %d", seq, ok, err, q2)
		}
		// w1's claim of support's thread is gone: its completion changes nothing.
		if done, err := s.CompleteReply(ctx, "support", "support/t1", q2, "w1"); err != nil || done {
			t.Errorf("completion by a worker whose claim ended = %v, %v", done, err)
		}
		if done, err := s.CompleteReply(ctx, "support", "support/t1", q2, "w2"); err != nil || !done {
			t.Errorf("completion = %v, %v", done, err)
		}
		// each's thread: w1's claim ended too; w2 answers e1, then the work moves on to e2.
		seq, ok, err = claimReply(s, claim)
		if err != nil || !ok || seq != e1 {
			t.Fatalf("claim of each's thread = %d, %v, %v", seq, ok, err)
		}
		if done, err := s.CompleteReply(ctx, "each", "each/t2", e1, "w2"); err != nil || !done {
			t.Fatalf("completion of e1 = %v, %v", done, err)
		}
		got = pending(t, s)
		if len(got) != 1 || got[0].FirstSeq != e2 || got[0].LastSeq != e2 || got[0].Holder != "" || !got[0].AvailableAt.IsZero() {
			t.Fatalf("after e1: %+v", got)
		}
		seq, ok, err = claimReply(s, claim)
		if err != nil || !ok || seq != e2 {
			t.Fatalf("claim of e2 = %d, %v, %v", seq, ok, err)
		}
		if done, err := s.CompleteReply(ctx, "each", "each/t2", e2, "w2"); err != nil || !done {
			t.Fatalf("completion of e2 = %v, %v", done, err)
		}
		if got := pending(t, s); len(got) != 0 {
			t.Errorf("left: %+v", got)
		}
		if done, err := s.CompleteReply(ctx, "each", "each/t2", e2, "w2"); err != nil || done {
			t.Errorf("completion again = %v, %v; want nothing to do", done, err)
		}
		_ = q1
	}, WithClock(clock.Now))
}

func TestCompleteReplyMovesOnWhenAMessageArrivedDuringTheRun(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		q1 := mustAppend(t, s, withMailbox(msg("support/t1", "q1@cust.example", baseTime), "support"))
		claim := ReplyClaim{Mailboxes: []string{"support"}, Holder: "w1"}
		if seq, ok, err := claimReply(s, claim); err != nil || !ok || seq != q1 {
			t.Fatalf("claim = %d, %v, %v", seq, ok, err)
		}
		// While the run works: the run's reply, an auto-reply, then the customer's next message.
		reply := withMailbox(msg("support/t1", "r1@acme.example", baseTime.Add(time.Second)), "support")
		reply.Direction, reply.RunKey = history.Outbound, "run-1"
		mustAppend(t, s, reply)
		auto := withMailbox(msg("support/t1", "ooo@cust.example", baseTime.Add(2*time.Second)), "support")
		auto.NotToAnswer = "auto-submitted: auto-replied"
		mustAppend(t, s, auto)
		q2 := mustAppend(t, s, withMailbox(msg("support/t1", "q2@cust.example", baseTime.Add(3*time.Second)), "support"))
		if seq, ok, err := claimReply(s, claim); err != nil || ok {
			t.Fatalf("claim while the thread's run works = %d, %v, %v; want nothing", seq, ok, err)
		}
		if done, err := s.CompleteReply(ctx, "support", "support/t1", q1, "w1"); err != nil || !done {
			t.Fatalf("completion = %v, %v", done, err)
		}
		got := pending(t, s)
		if len(got) != 1 || got[0].FirstSeq != q2 || got[0].LastSeq != q2 || got[0].Holder != "" {
			t.Fatalf("after the run: %+v", got)
		}
		if seq, ok, err := claimReply(s, claim); err != nil || !ok || seq != q2 {
			t.Fatalf("next claim = %d, %v, %v; want %d", seq, ok, err, q2)
		}
	})
}

func TestReleaseReplyRetriesAtItsTimeAndCountsFailures(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		q1 := mustAppend(t, s, withMailbox(msg("support/t1", "q1@cust.example", baseTime), "support"))
		claim := ReplyClaim{Mailboxes: []string{"support"}, Holder: "w1"}
		if _, ok, err := claimReply(s, claim); err != nil || !ok {
			t.Fatalf("claim: %v, %v", ok, err)
		}
		retry := clock.Now().Add(30 * time.Second)
		if ok, err := s.ReleaseReply(ctx, "support", "support/t1", "w1", retry, "anthropic: status 529 (transient)", true); err != nil || !ok {
			t.Fatalf("release = %v, %v", ok, err)
		}
		if ok, err := s.ReleaseReply(ctx, "support", "support/t1", "w1", retry, "again", true); err != nil || ok {
			t.Errorf("second release by the same holder = %v, %v; want false (no longer held)", ok, err)
		}
		got := pending(t, s)
		if len(got) != 1 || got[0].Attempts != 1 || got[0].LastError != "anthropic: status 529 (transient)" || !got[0].AvailableAt.Equal(retry) || got[0].Holder != "" {
			t.Fatalf("released: %+v", got)
		}
		if _, ok, err := claimReply(s, claim); err != nil || ok {
			t.Fatalf("claim before the retry time: %v, %v", ok, err)
		}
		clock.Advance(30 * time.Second)
		if seq, ok, err := claimReply(s, claim); err != nil || !ok || seq != q1 {
			t.Fatalf("claim at the retry time = %d, %v, %v", seq, ok, err)
		}
		// A graceful stop gives the claim back at once, without counting a failure.
		if ok, err := s.ReleaseReply(ctx, "support", "support/t1", "w1", time.Time{}, "", false); err != nil || !ok {
			t.Fatalf("release on stop = %v, %v", ok, err)
		}
		if got := pending(t, s); got[0].Attempts != 1 || got[0].LastError != "anthropic: status 529 (transient)" || !got[0].AvailableAt.IsZero() {
			t.Errorf("after the stop: %+v", got)
		}
	}, WithClock(clock.Now))
}

func TestClaimReplyRefusesBadArguments(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, c := range []ReplyClaim{{Holder: "w1"}, {Mailboxes: []string{"support"}}, {Mailboxes: []string{"support"}, Holder: string(make([]byte, 192))},
			{Mailboxes: make([]string, MaxClaimMailboxes+1), Holder: "w1"}} {
			if _, _, err := claimReply(s, c); !errors.Is(err, ErrInvalid) {
				t.Errorf("ClaimReply(%+v) = %v; want ErrInvalid", c, err)
			}
		}
		if _, err := s.PendingReplies(ctx, "", 0); !errors.Is(err, ErrInvalid) {
			t.Errorf("PendingReplies limit 0 = %v", err)
		}
		if _, _, err := s.ClaimSend(ctx, SendClaim{Holder: "w1"}); !errors.Is(err, ErrInvalid) {
			t.Errorf("ClaimSend without mailboxes = %v", err)
		}
	})
}

// Eight workers claim the work of 40 threads of two mailboxes at once, completing each claim:
// no thread is ever held by two workers, and every thread is answered exactly once.
func TestConcurrentClaimsHoldEachThreadOnce(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		const threads = 40
		for i := range threads {
			box := []string{"support", "sales"}[i%2]
			mustAppend(t, s, withMailbox(msg(fmt.Sprintf("%s/t%d", box, i), fmt.Sprintf("q%d@cust.example", i), baseTime), box))
		}
		var mu sync.Mutex
		held := map[int64]string{}
		answered := map[int64]int{}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				holder := fmt.Sprintf("w%d", w)
				for {
					seq, ok, err := claimReply(s, ReplyClaim{Mailboxes: []string{"support", "sales"}, Holder: holder})
					if err != nil {
						errs <- err
						return
					}
					if !ok {
						return
					}
					mu.Lock()
					if other, busy := held[seq]; busy {
						mu.Unlock()
						errs <- fmt.Errorf("seq %d claimed by %s and %s", seq, other, holder)
						return
					}
					held[seq] = holder
					answered[seq]++
					mu.Unlock()
					m, err := s.messageWhere(ctx, "seq = ?", seq) // the run's work
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					delete(held, seq)
					mu.Unlock()
					if done, err := s.CompleteReply(ctx, m.Mailbox, m.ThreadID, seq, holder); err != nil || !done {
						errs <- fmt.Errorf("complete %d: %v, %v", seq, done, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		checkAnsweredOnce(t, errs, answered, threads)
		if got := pending(t, s); len(got) != 0 {
			t.Errorf("left: %+v", got)
		}
	})
}

func TestSendWorkIsClaimedRetriedAndFailedForGood(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		mustAppend(t, s, withMailbox(msg("support/t1", "q1@cust.example", baseTime), "support"))
		reply := func(id, runKey string) int64 {
			m := withMailbox(msg("support/t1", id, baseTime.Add(time.Second)), "support")
			m.Direction, m.RunKey = history.Outbound, runKey
			return mustAppend(t, s, m)
		}
		r1, r2 := reply("r1@acme.example", "run-1"), reply("r2@acme.example", "run-2")
		claim := SendClaim{Mailboxes: []string{"support"}, Holder: "w1", LeaseFor: time.Minute}
		seq, ok, err := s.ClaimSend(ctx, claim)
		if err != nil || !ok || seq != r1 {
			t.Fatalf("claim = %d, %v, %v; want %d", seq, ok, err, r1)
		}
		// A transient failure: available again at its retry time.
		if ok, err := s.SendFailed(ctx, r1, "w1", clock.Now().Add(10*time.Second), "451 4.3.0 try again later"); err != nil || !ok {
			t.Fatalf("transient failure = %v, %v", ok, err)
		}
		if seq, ok, err := s.ClaimSend(ctx, claim); err != nil || !ok || seq != r2 {
			t.Fatalf("next claim = %d, %v, %v; want %d", seq, ok, err, r2)
		}
		if o, err := s.MarkSent(ctx, r2); err != nil || o != Stored {
			t.Fatalf("MarkSent = %v, %v", o, err)
		}
		if _, ok, err := s.ClaimSend(ctx, claim); err != nil || ok {
			t.Fatalf("claim before the retry: %v, %v", ok, err)
		}
		clock.Advance(10 * time.Second)
		if seq, ok, err := s.ClaimSend(ctx, claim); err != nil || !ok || seq != r1 {
			t.Fatalf("claim at the retry = %d, %v, %v", seq, ok, err)
		}
		if ok, err := s.SendFailed(ctx, r1, "w1", time.Time{}, "550 5.1.1 no such user"); err != nil || !ok {
			t.Fatalf("permanent failure = %v, %v", ok, err)
		}
		if _, ok, err := s.ClaimSend(ctx, claim); err != nil || ok {
			t.Fatalf("claim after the permanent failure: %v, %v", ok, err)
		}
		st, err := s.ReplyState(ctx, r1)
		if err != nil || st.Status != "failed" || st.Attempts != 2 || st.LastError != "550 5.1.1 no such user" || !st.FailedAt.Equal(clock.Now().Truncate(time.Microsecond)) {
			t.Errorf("r1 state = %+v, %v", st, err)
		}
		st, err = s.ReplyState(ctx, r2)
		if err != nil || st.Status != "sent" || st.Attempts != 1 {
			t.Errorf("r2 state = %+v, %v", st, err)
		}
		if _, err := s.ReplyState(ctx, 999999); !errors.Is(err, ErrMessageNotFound) {
			t.Errorf("state of no reply = %v", err)
		}
		if unsent, _ := s.UnsentReplies(ctx, "support", 10); len(unsent) != 1 || unsent[0].Seq != r1 {
			t.Errorf("UnsentReplies lists the failed reply as not sent: %+v", unsent)
		}
	}, WithClock(clock.Now))
}

// TestWorkClaimPlans pins the claims' plans on a store holding thousands of pending rows, half
// of them claimed: each claim reads the available-work index in its order (no sort, no scan)
// and never a claimed row; on MariaDB it reads one row to claim one, plus, when it claims for
// some mailboxes only, the due rows of the others that come first.
func TestWorkClaimPlans(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		const rows = 4000
		var mailboxes []string
		for i := range 40 {
			mailboxes = append(mailboxes, fmt.Sprintf("persona-%d", i))
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			at := notBefore
			holder := ""
			if i%2 == 0 { // claimed: available again only after its lease
				at, holder = clock.Now().Add(time.Hour), "w0"
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO pending_replies (mailbox, thread_id, first_seq, last_seq, available_at, holder)
				VALUES (?, ?, ?, ?, ?, ?)`, mailboxes[i%len(mailboxes)], fmt.Sprintf("t%d", i), i+1, i+1, s.dialect.timeArg(at), holder); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, s, withMailbox(msg("persona-0/x", "q@cust.example", baseTime), "persona-0"))
		for i := range 50 {
			m := withMailbox(msg("persona-0/x", fmt.Sprintf("r%d@acme.example", i), baseTime), "persona-0")
			m.Direction, m.RunKey = history.Outbound, fmt.Sprintf("run-%d", i)
			mustAppend(t, s, m)
		}
		if err := s.Optimize(ctx); err != nil {
			t.Fatal(err)
		}
		now := s.dialect.timeArg(clock.Now())
		until := s.dialect.timeArg(clock.Now().Add(time.Minute))
		for _, c := range []struct {
			label, table, index, query string
			args                       []any
			budget                     float64 // rows of the index read at most (MariaDB)
		}{
			{"claim reply", "pending_replies", indexPendingReplies, s.dialect.replyClaimQuery(1, len(mailboxes)),
				s.dialect.replyClaimArgs("w1", clock.Now().Add(time.Minute), clock.Now(), []string{"persona-3"}, mailboxes), 1},
			{"claim reply of two mailboxes", "pending_replies", indexPendingReplies, s.dialect.replyClaimQuery(0, 2),
				// Rows of the other 38 mailboxes that are due come first in the index: the claim
				// reads past them to the first of its own (here at most one per mailbox).
				s.dialect.replyClaimArgs("w1", clock.Now().Add(time.Minute), clock.Now(), nil, []string{"persona-7", "persona-8"}), 40},
			{"claim send", "mail_outbox", indexOutbox, s.dialect.sendClaimQuery(1), []any{"w1", until, now, "persona-0"}, 1},
			// Giving back a holder's claims reads the claimed rows, never the available ones.
			{"release a holder's reply claims", "pending_replies", indexPendingReplies, releaseQuery(s, "pending_replies", indexPendingReplies, clock.Now()),
				releaseArgs(s, "pending_replies", indexPendingReplies, clock.Now()), rows/2 + 50}, // the claimed half, as estimated
			{"release a holder's send claims", "mail_outbox", indexOutbox, releaseQuery(s, "mail_outbox", indexOutbox, clock.Now()),
				releaseArgs(s, "mail_outbox", indexOutbox, clock.Now()), 1},
		} {
			p := explain(t, s, c.query, c.args...)
			if p.Sorts || p.Temporary {
				t.Errorf("%s: the plan sorts or builds a temporary table\n%s", c.label, p.Raw)
			}
			found := false
			for _, st := range p.Steps {
				if st.Table != c.table {
					t.Errorf("%s: reads %s (%s)\n%s", c.label, st.Table, st.Detail, p.Raw)
					continue
				}
				if st.Access == "SCAN" || st.Access == "ALL" || st.Access == "index" {
					t.Errorf("%s: %s is scanned (%s)\n%s", c.label, st.Table, st.Detail, p.Raw)
				}
				if st.Index == c.index {
					found = true
					if st.Rows > c.budget {
						t.Errorf("%s: read %.0f rows of %s to claim one, want at most %.0f", c.label, st.Rows, c.index, c.budget)
					}
				}
			}
			if !found {
				t.Errorf("%s: no access through %s\n%s", c.label, c.index, p.Raw)
			}
		}
	}, WithClock(clock.Now))
}

func TestReadyNeedsEveryMigration(t *testing.T) {
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		t.Run(string(d), func(t *testing.T) {
			ctx := context.Background()
			s := openScratch(t, d)
			if err := s.Ready(ctx); !errors.Is(err, ErrNotMigrated) {
				t.Fatalf("Ready before Migrate = %v; want ErrNotMigrated", err)
			}
			if err := s.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			if err := s.Ready(ctx); err != nil {
				t.Fatalf("Ready after Migrate = %v", err)
			}
			if _, err := s.db.ExecContext(ctx, "DELETE FROM goose_db_version WHERE version_id = 50"); err != nil {
				t.Fatal(err)
			}
			if err := s.Ready(ctx); !errors.Is(err, ErrNotMigrated) || !strings.Contains(err.Error(), "00050_work.sql is not applied") {
				t.Errorf("Ready without 00050 = %v", err)
			}
		})
	}
}

func releaseQuery(s *Store, table, index string, now time.Time) string {
	q, _ := s.dialect.releaseHolderQuery(table, index, "w0", now)
	return q
}

func releaseArgs(s *Store, table, index string, now time.Time) []any {
	_, args := s.dialect.releaseHolderQuery(table, index, "w0", now)
	return args
}

// A worker restarting under its name gets back every claim its earlier process held — reply
// work and replies to send — and no other holder's, nor work waiting for its retry time.
func TestReleaseHolderGivesBackTheHoldersClaims(t *testing.T) {
	clock := storetest.NewClock(time.Date(2024, 5, 6, 8, 0, 0, 0, time.UTC))
	eachDB(t, func(t *testing.T, s *Store) {
		ctx := context.Background()
		for _, id := range []string{"a", "b", "c"} {
			mustAppend(t, s, withMailbox(msg("support/"+id, id+"@cust.example", baseTime), "support"))
		}
		claim := ReplyClaim{Mailboxes: []string{"support"}, Holder: "w1", LeaseFor: time.Hour}
		if _, ok, err := claimReply(s, claim); err != nil || !ok {
			t.Fatal(ok, err)
		}
		claim.Holder = "w2"
		if _, ok, err := claimReply(s, claim); err != nil || !ok {
			t.Fatal(ok, err)
		}
		// The third thread waits for its retry time, given back by w1 after a failure.
		claim.Holder = "w1"
		seq, ok, err := claimReply(s, claim)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		m, err := s.MessageBySeq(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ReleaseReply(ctx, "support", m.ThreadID, "w1", clock.Now().Add(time.Minute), "model down", true); err != nil {
			t.Fatal(err)
		}
		// Two replies to send: w1 claims one (its sending in flight), w2 the other.
		for i, holder := range []string{"w1", "w2"} {
			m := withMailbox(msg("support/a", fmt.Sprintf("r%d@acme.example", i), baseTime.Add(time.Second)), "support")
			m.Direction, m.RunKey = history.Outbound, fmt.Sprintf("run-%d", i)
			mustAppend(t, s, m)
			if _, ok, err := s.ClaimSend(ctx, SendClaim{Mailboxes: []string{"support"}, Holder: holder, LeaseFor: time.Hour}); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		if _, _, err := s.ReleaseHolder(ctx, ""); !errors.Is(err, ErrInvalid) {
			t.Errorf("ReleaseHolder of no holder = %v; want ErrInvalid", err)
		}
		replies, sends, err := s.ReleaseHolder(ctx, "w1")
		if err != nil || replies != 1 || sends != 1 {
			t.Fatalf("ReleaseHolder = %d, %d, %v; want 1 reply claim and 1 send claim", replies, sends, err)
		}
		// w1's reply to send is claimed first again; w2's stays claimed.
		seq, ok, err = s.ClaimSend(ctx, SendClaim{Mailboxes: []string{"support"}, Holder: "w3"})
		if err != nil || !ok {
			t.Fatalf("claim of the given-back reply = %d, %v, %v", seq, ok, err)
		}
		if st, err := s.ReplyState(ctx, seq); err != nil || st.Attempts != 2 {
			t.Errorf("the given-back reply: %+v, %v; want its second attempt", st, err)
		}
		if _, ok, err := s.ClaimSend(ctx, SendClaim{Mailboxes: []string{"support"}, Holder: "w3"}); err != nil || ok {
			t.Errorf("w2's reply was claimable (%v, %v)", ok, err)
		}
		var got []string
		for _, p := range pending(t, s) {
			got = append(got, fmt.Sprintf("%s holder=%q at=%s", p.ThreadID, p.Holder, p.AvailableAt.Format(time.TimeOnly)))
		}
		want := []string{`support/a holder="" at=00:00:00`, `support/c holder="" at=08:01:00`, `support/b holder="w2" at=09:00:00`}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("pending work:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}, WithClock(clock.Now))
}

// checkAnsweredOnce reports the workers' errors (errs, which it closes once they are done) and
// checks that answered has each of the threads answered exactly once.
func checkAnsweredOnce(t *testing.T, errs chan error, answered map[int64]int, threads int) {
	t.Helper()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if len(answered) != threads {
		t.Errorf("%d threads answered, want %d", len(answered), threads)
	}
	for seq, n := range answered {
		if n != 1 {
			t.Errorf("seq %d answered %d times, want 1", seq, n)
		}
	}
}
