package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/store/storetest"
)

func TestMySQLPoolIsBoundedByDefaultAndByWithMaxOpenConns(t *testing.T) {
	dsn := storetest.MySQL(t)
	for _, c := range []struct {
		name string
		opts []Option
		want int
	}{
		{"default", nil, DefaultMaxOpenConns},
		{"WithMaxOpenConns(5)", []Option{WithMaxOpenConns(5)}, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Open(context.Background(), dsn, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.DB().Stats().MaxOpenConnections; got != c.want {
				t.Errorf("MaxOpenConnections = %d, want %d", got, c.want)
			}
		})
	}
}

func TestWithMaxOpenConnsBelowTwoIsRefused(t *testing.T) {
	for _, dsn := range []string{"root@tcp(127.0.0.1:1)/d", "sqlite:" + filepath.Join(t.TempDir(), "s.db")} {
		for _, n := range []int{1, 0, -3} {
			s, err := Open(context.Background(), dsn, WithMaxOpenConns(n))
			if err == nil {
				s.Close()
			}
			want := fmt.Sprintf("store: invalid value: max open connections %d (want at least 2: Migrate holds a lock on one connection while it migrates on another)", n)
			if !errors.Is(err, ErrInvalid) || err.Error() != want {
				t.Errorf("Open(%q, WithMaxOpenConns(%d)) error = %v\nwant %s", dsn, n, err, want)
			}
		}
	}
}

func TestSQLiteFilePoolIgnoresWithMaxOpenConns(t *testing.T) {
	s, err := Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "s.db"), WithMaxOpenConns(3))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.DB().Stats().MaxOpenConnections; got != 0 {
		t.Errorf("MaxOpenConnections = %d, want 0 (unbounded)", got)
	}
}

// TestManyRunsShareAPoolOfTwo: 24 workers claim, start, record, finish and complete 60 replies
// through a pool of two connections, which Migrate needs too. A call that held one connection
// while it waited for another would deadlock here (two such calls each holding one) and fail at
// the deadline instead.
func TestManyRunsShareAPoolOfTwo(t *testing.T) {
	s := openMigrated(t, storetest.MySQL(t), WithMaxOpenConns(2))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const threads, workers = 60, 24
	for i := range threads {
		mustAppend(t, s, withMailbox(msg(fmt.Sprintf("support/t%d", i), fmt.Sprintf("q%d@cust.example", i), baseTime), "support"))
	}
	var mu sync.Mutex
	answered := map[int64]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			holder := fmt.Sprintf("w%d", w)
			if err := answerAll(ctx, s, holder, func(seq int64) {
				mu.Lock()
				answered[seq]++
				mu.Unlock()
			}); err != nil {
				errs <- fmt.Errorf("%s: %w", holder, err)
			}
		})
	}
	wg.Wait()
	checkAnsweredOnce(t, errs, answered, threads)
	if n := countRows(t, s, "runs", "status = 'succeeded'"); n != threads {
		t.Errorf("%d succeeded runs, want %d", n, threads)
	}
	if n := countRows(t, s, "tool_uses", ""); n != threads*2 {
		t.Errorf("%d tool uses, want %d", n, threads*2)
	}
	if st := s.DB().Stats(); st.MaxOpenConnections != 2 || st.OpenConnections > 2 {
		t.Errorf("pool stats: max %d, open %d; want max 2, open at most 2", st.MaxOpenConnections, st.OpenConnections)
	}
}

// answerAll claims reply work as holder until none is left, and answers each claim as the
// service does: a run started, a round of two tool calls recorded, the run finished and the
// work completed. It calls answered with each claimed seq.
func answerAll(ctx context.Context, s *Store, holder string, answered func(seq int64)) error {
	for {
		w, ok, err := s.ClaimReply(ctx, ReplyClaim{Mailboxes: []string{"support"}, Holder: holder})
		if err != nil || !ok {
			return err
		}
		answered(w.Seq)
		m, err := s.messageWhere(ctx, "seq = ?", w.Seq)
		if err != nil {
			return err
		}
		key := fmt.Sprintf("support/%s/%d", m.ThreadID, w.Seq)
		if _, out, err := s.StartRun(ctx, NewRun{Key: key, Kind: RunReply, Persona: "support", ThreadID: m.ThreadID,
			MessageSeq: w.Seq, Holder: holder}); err != nil || out != Stored {
			return fmt.Errorf("start %s: %v, %v", key, out, err)
		}
		if out, err := s.RecordRound(ctx, testRound(Owner{OwnerMessage, w.Seq}, key, 0, 2)); err != nil || out != Stored {
			return fmt.Errorf("record a round of %s: %v, %v", key, out, err)
		}
		if out, err := s.FinishRun(ctx, key, holder, Finish{Status: RunSucceeded}); err != nil || out != Stored {
			return fmt.Errorf("finish %s: %v, %v", key, out, err)
		}
		if done, err := s.CompleteReply(ctx, w.Mailbox, m.ThreadID, w.Seq, holder); err != nil || !done {
			return fmt.Errorf("complete %d: %v, %v", w.Seq, done, err)
		}
	}
}
