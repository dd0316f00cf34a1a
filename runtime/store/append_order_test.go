package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/personagen/personagen/runtime/mail"
)

// Appends to one thread become visible in seq order: a reader that sees a message of the thread
// sees every earlier one. An append write-locks the thread's first row (before the seq is handed
// out: on MySQL in a statement of its own, see writeMessage) and holds the lock to its commit, so
// seqs, which the database hands out at the insert, are committed in the order they were handed
// out. Without that, a run answering message n
// could miss an earlier message still committing, and its retry would replay differently.
// Four writers append to one thread (and one to another, so the thread's seqs have gaps) while
// a reader keeps reading the thread's seqs, in one statement and as a run does (its newest seq,
// then the thread up to it); every read must be a prefix of the final list.
func TestAppendsToOneThreadBecomeVisibleInSeqOrder(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		appendsInSeqOrder(t, s, func(ctx context.Context, m Message) error {
			_, err := s.AppendMessage(ctx, m)
			return err
		})
	})
}

// The same for AppendMail, mail's ingestion path, into a thread it knows is stored.
func TestAppendMailToAStoredThreadBecomesVisibleInSeqOrder(t *testing.T) {
	eachDB(t, func(t *testing.T, s *Store) {
		for _, th := range []string{"t", "other"} {
			mustAppend(t, s, msg(th, th+"-first", h0))
		}
		appendsInSeqOrder(t, s, func(ctx context.Context, m Message) error {
			_, _, _, err := s.AppendMail(ctx, m.Message, m.Mailbox, mail.MailRecord{ThreadStored: true})
			return err
		})
	})
}

// appendsInSeqOrder runs four writers appending to thread "t" with add (and one to "other")
// while a reader keeps reading t's seqs, and fails t unless every read is a prefix of the final
// list.
func appendsInSeqOrder(t *testing.T, s *Store, add func(context.Context, Message) error) {
	{
		ctx := context.Background()
		const writers, per = 4, 40
		var wg sync.WaitGroup
		errs := make(chan error, writers+1)
		for w := range writers + 1 {
			thread := "t"
			if w == writers {
				thread = "other"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range per {
					if err := add(ctx, msg(thread, fmt.Sprintf("%s-%d-%d", thread, w, i), h0)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		writing := make(chan struct{})
		done := make(chan struct{})
		var reads [][]int64
		go func() {
			defer close(done)
			for {
				select {
				case <-writing:
					return
				default:
				}
				// One statement reading the whole thread, then the way a reply run reads it: the
				// newest seq (its view), then the thread up to that seq in a later statement.
				var seqs []int64
				if err := s.DB().SelectContext(ctx, &seqs, s.dialect.rebind(`SELECT seq FROM messages WHERE thread_id = ? ORDER BY seq`), "t"); err != nil {
					errs <- err
					return
				}
				reads = append(reads, seqs)
				var newest sql.NullInt64
				if err := s.DB().GetContext(ctx, &newest, s.dialect.rebind(`SELECT MAX(seq) FROM messages WHERE thread_id = ?`), "t"); err != nil {
					errs <- err
					return
				}
				seqs = nil
				if err := s.DB().SelectContext(ctx, &seqs, s.dialect.rebind(`SELECT seq FROM messages WHERE thread_id = ? AND seq <= ? ORDER BY seq`), "t", newest.Int64); err != nil {
					errs <- err
					return
				}
				reads = append(reads, seqs)
			}
		}()
		wg.Wait()
		close(writing)
		<-done
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var final []int64
		if err := s.DB().SelectContext(ctx, &final, s.dialect.rebind(`SELECT seq FROM messages WHERE thread_id = ? ORDER BY seq`), "t"); err != nil {
			t.Fatal(err)
		}
		if extra := len(final) - writers*per; extra != 0 && extra != 1 { // 1: the thread's first message
			t.Fatalf("thread holds %d messages, want %d", len(final), writers*per)
		}
		gaps := 0
		for _, r := range reads {
			if !slices.Equal(r, final[:min(len(r), len(final))]) {
				gaps++
			}
		}
		if gaps > 0 {
			t.Errorf("%d of %d reads saw a later message of the thread without an earlier one", gaps, len(reads))
		}
		t.Logf("%d reads", len(reads))
	}
}
