package store

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// scaleEnv, set to "full", makes BenchmarkReplayScale run the large sizes too (threads of
// 10,000 and 100,000 messages, 10,000 other threads); bench/run sets it. Without it (as in CI,
// which runs every benchmark once) the benchmark stops at 1,000 messages and 100 other threads.
const scaleEnv = "PERSONAGEN_BENCH_SCALE"

// scaleSizes returns the thread lengths and the counts of other threads BenchmarkReplayScale
// measures.
func scaleSizes() (lengths, others []int) {
	if os.Getenv(scaleEnv) == "full" {
		return []int{100, 1000, 10000, 100000}, []int{1, 100, 10000}
	}
	return []int{100, 1000}, []int{1, 100}
}

// scaleKeep is how many messages of a seeded thread follow its compaction's boundary: with the
// newest one being answered, 75 are selected, 50 replayed and 25 counted as omitted.
const scaleKeep = 76

// otherThreadLen is the length of each "other" thread of the database-size series.
const otherThreadLen = 10

// scaleDB is a seeded database that the -count repetitions of BenchmarkReplayScale share (the
// largest takes a while to write); scratch databases are dropped when the test binary ends.
type scaleDB struct {
	s      *Store
	dsn    string
	seeded map[string]*seededThread
}

var (
	scaleMu  sync.Mutex
	scaleDBs = map[string]*scaleDB{}
	// scaleCleanup runs when the test binary ends (TestMain), dropping scratch databases.
	scaleCleanup []func()
)

// TestMain drops the scratch databases the replay-scale benchmark shared between runs.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range scaleCleanup {
		f()
	}
	os.Exit(code)
}

// sharedScaleDB returns the database of dialect d seeded with threads, creating it on first use.
func sharedScaleDB(b *testing.B, d Dialect, name string, threads []scaleThread) *scaleDB {
	b.Helper()
	scaleMu.Lock()
	defer scaleMu.Unlock()
	key := string(d) + "/" + name
	if db, ok := scaleDBs[key]; ok {
		return db
	}
	// The scratch database must outlive this benchmark's cleanups, so it is made on a
	// benchmark-independent testing.TB that collects cleanups for TestMain.
	tb := &cleanupTB{TB: b}
	dsn := scratchDSN(tb, d)
	s, err := Open(context.Background(), dsn, WithOptimizeInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	scaleCleanup = append(scaleCleanup, func() { s.Close() })
	scaleCleanup = append(scaleCleanup, tb.cleanups...)
	if err := s.Migrate(context.Background()); err != nil {
		b.Fatal(err)
	}
	db := &scaleDB{s: s, dsn: dsn, seeded: seedScale(b, s, threads)}
	if d == DialectSQLite {
		// Move the seeded pages from the write-ahead log into the database file, as SQLite's
		// automatic checkpoints do over time: reads should not go through a log of 100 MB.
		if _, err := s.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
	}
	scaleDBs[key] = db
	return db
}

// settle waits until MariaDB has stopped writing back the pages the seeding dirtied (the count
// of dirty pages falls by less than 2 % in half a second; at most 30 s), so that no measured
// replay competes with the server flushing them. A SQLite store needs nothing: sharedScaleDB
// checkpointed it.
func settle(b *testing.B, s *Store) {
	b.Helper()
	if s.dialect != DialectMySQL {
		return
	}
	dirty := func() int {
		var name string
		var n int
		if err := s.db.QueryRowContext(context.Background(),
			"SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_pages_dirty'").Scan(&name, &n); err != nil {
			b.Fatal(err)
		}
		return n
	}
	prev := dirty()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		n := dirty()
		if n > prev*98/100 {
			return
		}
		prev = n
	}
}

// cleanupTB is a testing.TB whose Cleanup and TempDir outlive the test that made it: cleanups
// are collected (for TestMain to run) instead of run when the test ends.
type cleanupTB struct {
	testing.TB
	cleanups []func()
}

func (c *cleanupTB) Cleanup(f func()) { c.cleanups = append([]func(){f}, c.cleanups...) }

func (c *cleanupTB) TempDir() string {
	dir, err := os.MkdirTemp("", "personagen-scale-")
	if err != nil {
		c.Fatal(err)
	}
	c.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BenchmarkReplayScale measures replay of a 50-message window through the store as the
// thread grows (thread=N: threads of N messages, all in one database) and as the database
// grows around a 100-message thread (others=K: K other threads of 10 messages, interleaved with
// it). Every fifth message carries a tool round of three calls; bodies are about 760 bytes.
// "plain" is ThreadHistory alone (a persona without thread_summary: the window of the whole
// thread); "compacted" is ThreadSummary + ThreadHistory on the same thread, which has a
// completed compaction 76 messages before its end (the summary, the omitted count of 25 and
// the 50 messages after the boundary). The message answered is the thread's newest. The
// growth ratios (bench/cmd/benchtable) divide each size's time by the smallest size's.
// Set PERSONAGEN_BENCH_SCALE=full for the large sizes.
func BenchmarkReplayScale(b *testing.B) {
	lengths, others := scaleSizes()
	for _, d := range []Dialect{DialectSQLite, DialectMySQL} {
		b.Run(string(d), func(b *testing.B) {
			var threads []scaleThread
			for _, n := range lengths {
				threads = append(threads, scaleThread{id: fmt.Sprintf("thread-%d", n), n: n, keep: scaleKeep})
			}
			// Every database is seeded before any is measured, and the server left to settle,
			// so that no size is measured while the writes of another are still being flushed.
			lengthsDB := sharedScaleDB(b, d, "lengths-"+fmt.Sprint(lengths), threads)
			target := scaleThread{id: "target", n: 100, keep: scaleKeep}
			othersDBs := map[int]*scaleDB{}
			for _, k := range others {
				ts := []scaleThread{target}
				for i := range k {
					ts = append(ts, scaleThread{id: "other-" + itoa(i), n: otherThreadLen})
				}
				othersDBs[k] = sharedScaleDB(b, d, fmt.Sprintf("others-%d", k), ts)
			}
			settle(b, lengthsDB.s)
			for _, th := range threads {
				b.Run(fmt.Sprintf("thread=%d", th.n), func(b *testing.B) {
					benchReplayModes(b, lengthsDB, th)
				})
			}
			for _, k := range others {
				b.Run(fmt.Sprintf("others=%d", k), func(b *testing.B) {
					benchReplayModes(b, othersDBs[k], target)
				})
			}
		})
	}
}

// benchReplayModes runs the plain and compacted replay of th, reporting queries per replay
// and, measured on one more replay outside the timing, what the database read for it: on
// MariaDB rows/op, the rows its storage engine handed over (the Handler_read_* counters), on
// SQLite pages/op, the B-tree pages it fetched (page cache hits and misses). Unlike times,
// these do not depend on the machine's load.
func benchReplayModes(b *testing.B, db *scaleDB, th scaleThread) {
	cs, queries := countingStore(b, db.s, db.dsn)
	ms, reads, unit := readCountingStore(b, db.dsn)
	ctx := context.Background()
	// The message answered is the thread's newest, as the store holds it: the replay is the
	// window of what the store received before it.
	seqs := db.seeded[th.id].seqs
	inbound := &history.Message{ThreadID: th.id, MessageID: th.lastID(), Seq: seqs[len(seqs)-1]}
	for _, mode := range []string{"plain", "compacted"} {
		b.Run(mode, func(b *testing.B) {
			newChain := func(src *Store) *runtime.Chain {
				steps := []runtime.Step{{Kind: "thread_history", Resolver: &runtime.ThreadHistory{Source: src, Limit: 50}}}
				if mode == "compacted" {
					steps = append([]runtime.Step{{Kind: "thread_summary", Resolver: &runtime.ThreadSummary{Source: src}}}, steps...)
				}
				return runtime.NewChain(steps...)
			}
			chain := newChain(cs)
			var buf []chat.Message
			// Warm the connections and the database's caches first: the first replay of a
			// freshly opened store would otherwise weigh on whichever size runs first.
			for range 3 {
				if _, err := chain.Resolve(ctx, &runtime.Invocation{Inbound: inbound}, nil); err != nil {
					b.Fatal(err)
				}
			}
			q0 := queries.Load()
			b.ReportAllocs()
			for b.Loop() {
				// A fresh Invocation per request, as a run makes one: it caches the compaction.
				out, err := chain.Resolve(ctx, &runtime.Invocation{Inbound: inbound}, buf[:0])
				if err != nil {
					b.Fatal(err)
				}
				buf = out
			}
			b.ReportMetric(float64(queries.Load()-q0)/float64(b.N), "queries/op")
			checkScaleReplay(b, buf, mode == "compacted")

			mchain := newChain(ms)
			before := reads()
			if _, err := mchain.Resolve(ctx, &runtime.Invocation{Inbound: inbound}, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(reads()-before, unit)
		})
	}
}

// readCountingStore opens a Store of one connection on dsn's database and returns it with a
// func reading that connection's cumulative read counter (see benchReplayModes) and its unit.
// The counter's own cost (a status query on MariaDB) is subtracted.
func readCountingStore(b *testing.B, dsn string) (*Store, func() float64, string) {
	b.Helper()
	s, err := Open(context.Background(), dsn, WithOptimizeInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	s.db.SetMaxOpenConns(1)
	ctx := context.Background()
	if s.dialect == DialectSQLite {
		return s, func() float64 {
			conn, err := s.db.Conn(ctx)
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			var pages int
			err = conn.Raw(func(dc any) error {
				st, ok := dc.(sqlite.DBStatus)
				if !ok {
					return fmt.Errorf("driver connection %T has no DBStatus", dc)
				}
				hit, _, err := st.Status(sqlite.DBStatusCacheHit, false)
				if err != nil {
					return err
				}
				miss, _, err := st.Status(sqlite.DBStatusCacheMiss, false)
				pages = hit + miss
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			return float64(pages)
		}, "pages/op"
	}
	read := func() float64 {
		var n float64
		if err := s.db.GetContext(ctx, &n, `SELECT SUM(VARIABLE_VALUE) FROM information_schema.SESSION_STATUS
			WHERE VARIABLE_NAME IN ('HANDLER_READ_FIRST', 'HANDLER_READ_KEY', 'HANDLER_READ_LAST', 'HANDLER_READ_NEXT',
			'HANDLER_READ_PREV', 'HANDLER_READ_RND', 'HANDLER_READ_RND_NEXT')`); err != nil {
			b.Fatal(err)
		}
		return n
	}
	a := read()
	overhead := read() - a
	return s, func() float64 { return read() - overhead }, "rows/op"
}

// checkScaleReplay fails b unless out is the replay of a 50-message window (after the summary
// and the note of 25 omitted messages when compacted): 50 turns, each round as one assistant
// message of three calls and three tool messages.
func checkScaleReplay(b *testing.B, out []chat.Message, compacted bool) {
	b.Helper()
	turns, calls, tools := 0, 0, 0
	for _, m := range out {
		switch {
		case len(m.ToolCalls) > 0:
			calls += len(m.ToolCalls)
		case m.Role == chat.RoleTool:
			tools++
		default:
			turns++
		}
	}
	want := 50
	if compacted {
		want += 2 // the summary and the omitted note
		if !strings.Contains(out[1].Text, "25") {
			b.Errorf("compacted replay: second message %q should say 25 messages were omitted", out[1].Text)
		}
	}
	if turns != want || calls != tools || calls%3 != 0 || calls == 0 {
		b.Fatalf("replay has %d turns (want %d), %d calls, %d tool messages", turns, want, calls, tools)
	}
}
