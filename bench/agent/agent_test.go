package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/personagen/personagen/bench/internal/cputime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/store"
	"github.com/personagen/personagen/runtime/store/storetest"
)

// kinds are the databases every test and benchmark runs on.
var kinds = []string{"sqlite", "mysql"}

// openStore opens a store whose round trips trips counts on a fresh database of kind
// ("sqlite": a file; "mysql": a scratch database from storetest.MySQL, which skips tb when
// MySQL is unreachable, or fails it under CI=true), closed when tb ends.
func openStore(tb testing.TB, kind string, trips *Trips) *store.Store {
	tb.Helper()
	dsn := "sqlite:" + filepath.Join(tb.TempDir(), "bench.db")
	if kind == "mysql" {
		dsn = storetest.MySQL(tb)
	}
	st, err := OpenStore(context.Background(), dsn, trips)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// side is one way of answering a message, set up once per store (tools and agents built once,
// as a host does).
type side struct {
	name string
	// setup returns the side's answer func over st and tools; trips, when set, lets the
	// personagen model mark the round trips at each call.
	setup func(ctx context.Context, st *store.Store, tools *Tools, trips *Trips) (answer, error)
}

// answer answers a stored message; prepare, when set, runs before the timed part (the resumed
// side's interrupted first attempt).
type answer struct {
	prepare func(ctx context.Context, in store.Message) error
	run     func(ctx context.Context, in store.Message) (string, error)
}

var sides = []side{
	{name: "personagen", setup: func(ctx context.Context, st *store.Store, tools *Tools, trips *Trips) (answer, error) {
		p := NewPersona(st, tools)
		return answer{run: func(ctx context.Context, in store.Message) (string, error) {
			res, err := Runner(st, &Model{Thread: in.ThreadID, FailAt: -1, Trips: trips}).Reply(ctx, agent.Inbound{Persona: p, Message: in})
			if err != nil {
				return "", err
			}
			return res.Text, nil
		}}, nil
	}},
	{name: "personagen_resumed", setup: func(ctx context.Context, st *store.Store, tools *Tools, trips *Trips) (answer, error) {
		p := NewPersona(st, tools)
		return answer{
			// The first attempt records two rounds, then the model fails: the run stays running.
			prepare: func(ctx context.Context, in store.Message) error {
				_, err := Runner(st, &Model{Thread: in.ThreadID, FailAt: 2}).Reply(ctx, agent.Inbound{Persona: p, Message: in})
				if !errors.Is(err, ErrModelDown) {
					return fmt.Errorf("the first attempt: %v, want the model's failure", err)
				}
				return nil
			},
			run: func(ctx context.Context, in store.Message) (string, error) {
				res, err := Runner(st, &Model{Thread: in.ThreadID, FailAt: -1, Trips: trips}).Reply(ctx, agent.Inbound{Persona: p, Message: in})
				if err != nil {
					return "", err
				}
				if res.Replayed != 2 {
					return "", fmt.Errorf("resumed with %d rounds replayed, want 2", res.Replayed)
				}
				return res.Text, nil
			}}, nil
	}},
	einoSide("eino", false),
	langChainGoSide("langchaingo", false),
	einoSide("eino_messages", true),
	langChainGoSide("langchaingo_messages", true),
}

// einoSide is eino's ReAct agent, recording each message one INSERT when perMessage is set,
// each round with RecordRound otherwise.
func einoSide(name string, perMessage bool) side {
	return side{name: name, setup: func(ctx context.Context, st *store.Store, tools *Tools, _ *Trips) (answer, error) {
		run, err := NewEino(ctx, st, tools, perMessage)
		return answer{run: run}, err
	}}
}

// langChainGoSide is langchaingo's agent executor, recording as einoSide does.
func langChainGoSide(name string, perMessage bool) side {
	return side{name: name, setup: func(ctx context.Context, st *store.Store, tools *Tools, _ *Trips) (answer, error) {
		return answer{run: func(ctx context.Context, in store.Message) (string, error) {
			return LangChainGo(ctx, st, tools, in, perMessage)
		}}, nil
	}}
}

// wantAnswer is the answer of a run of thread: every round's results, in call order.
func wantAnswer(thread string) string {
	var results []string
	tools := NewTools()
	for n := range Rounds {
		for _, name := range names {
			r, _ := tools.Run(name, Query(thread, n, name))
			results = append(results, r)
		}
	}
	return Answer(results)
}

// Every side answers with the same text, records the same three rounds and one reply, and runs
// each call of act once.
func TestSidesAgree(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			trips := &Trips{}
			st := openStore(t, kind, trips)
			for _, s := range sides {
				t.Run(s.name, func(t *testing.T) {
					thread := "agree-" + s.name
					in, err := Seed(ctx, st, thread)
					if err != nil {
						t.Fatal(err)
					}
					tools := NewTools()
					a, err := s.setup(ctx, st, tools, nil)
					if err != nil {
						t.Fatal(err)
					}
					if a.prepare != nil {
						if err := a.prepare(ctx, in); err != nil {
							t.Fatal(err)
						}
					}
					text, err := a.run(ctx, in)
					if err != nil {
						t.Fatal(err)
					}
					if want := wantAnswer(thread); text != want {
						t.Errorf("answer = %q\nwant     %q", text, want)
					}
					for n := range Rounds {
						if got := tools.Ran("act", Query(thread, n, "act")); got != 1 {
							t.Errorf("act of round %d ran %d times", n, got)
						}
					}
					msgs, err := st.Thread(ctx, thread)
					if err != nil || len(msgs) != 4 || msgs[3].Text != text {
						t.Errorf("thread: %d messages, %v; want the 3 seeded and the reply", len(msgs), err)
					}
					var key string
					switch s.name {
					case "eino", "langchaingo":
						key = s.name + ":" + in.MessageID
					case "eino_messages", "langchaingo_messages":
						// One row per message: eino's model message per round, langchaingo's per call,
						// each tool result, and the answer.
						want := map[string]int{"eino_messages": Rounds*(1+Calls) + 1, "langchaingo_messages": Rounds*Calls*2 + 1}[s.name]
						var n int
						err := st.DB().GetContext(ctx, &n, st.DB().Rebind("SELECT COUNT(*) FROM bench_messages WHERE run_id = ?"),
							strings.TrimSuffix(s.name, "_messages")+":"+in.MessageID)
						if err != nil || n != want {
							t.Errorf("%d messages recorded, %v; want %d", n, err, want)
						}
						return
					default:
						key = agent.ReplyKey(Persona, in.Mailbox, in.MessageID)
					}
					rounds, err := st.Rounds(ctx, store.Owner{Type: store.OwnerMessage, ID: in.Seq}, key)
					if err != nil || len(rounds) != Rounds {
						t.Fatalf("%d rounds recorded, %v; want %d", len(rounds), err, Rounds)
					}
					for n, r := range rounds {
						if len(r.Calls) != Calls || r.Calls[2].ID != CallID(n, "act") {
							t.Errorf("round %d = %+v", n, r.Calls)
						}
					}
				})
			}
		})
	}
}

// TestRoundTripBudget counts the database round trips of a personagen reply run, phase by
// phase (the fake model marks the count at each of its calls), and holds them to the budget:
// per model turn at most 2 beyond RecordRound's 3.
func TestRoundTripBudget(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			trips := &Trips{}
			st := openStore(t, kind, trips)
			for _, resumed := range []bool{false, true} {
				thread := fmt.Sprintf("budget-%t", resumed)
				in, err := Seed(ctx, st, thread)
				if err != nil {
					t.Fatal(err)
				}
				tools := NewTools()
				if resumed {
					a, _ := sides[1].setup(ctx, st, tools, nil)
					if err := a.prepare(ctx, in); err != nil {
						t.Fatal(err)
					}
				}
				m := &Model{Thread: thread, FailAt: -1, Trips: trips}
				start := trips.Load()
				if _, err := Runner(st, m).Reply(ctx, agent.Inbound{Persona: NewPersona(st, tools), Message: in}); err != nil {
					t.Fatal(err)
				}
				end := trips.Load()
				marks := append([]int64{start}, append(m.Marks, end)...)
				var phases []string
				for i := 1; i < len(marks); i++ {
					phases = append(phases, fmt.Sprint(marks[i]-marks[i-1]))
				}
				t.Logf("%s resumed=%t: %d round trips; before the first model call, between calls..., after the last: %s",
					kind, resumed, end-start, strings.Join(phases, " "))
				// the stored message read 1 + start 2 + history 2; per tool turn 5; the final answer 1 + the reply 4 + finishing 1.
				// Resumed: the stopped run resumed (+2: its compare-and-swap, then its read), the reply looked up (+1), its approvals read (+1), rounds (+1) and model
				// calls (+2), then the third turn and the end. On MySQL the reply's transaction also
				// write-locks the thread's first row before its INSERT (+1).
				last := "6"
				if kind == "mysql" {
					last = "7"
				}
				want := "5 5 5 5 " + last
				if resumed {
					want = "13 5 " + last
				}
				if got := strings.Join(phases, " "); got != want {
					t.Errorf("round trips by phase = %s, want %s", got, want)
				}
				for i := 1; i < len(marks)-2; i++ {
					if n := marks[i+1] - marks[i]; n > 3+2 {
						t.Errorf("model turn %d cost %d round trips, more than RecordRound's 3 + 2", i, n)
					}
				}
			}
		})
	}
}

// threads numbers the benchmarks' threads: every run answers a message of its own (the
// benchmark framework runs the loop more than once).
var threads atomic.Int64

// BenchmarkReplyRun answers one message with a reply run of 3 rounds × 3 parallel calls (two
// idempotent tools, one that is not), on SQLite and MariaDB: personagen's runner, the same run
// resumed after its model failed in round 3 (the timed part is the resumed attempt), and eino's
// ReAct agent and langchaingo's agent executor with equivalent fake models and the same
// persistence step (the thread read from the store, each round recorded with RecordRound, the
// reply appended). It reports the database round trips per run.
func BenchmarkReplyRun(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			trips := &Trips{}
			st := openStore(b, kind, trips)
			stamp := time.Now().UnixNano()
			for _, s := range sides {
				b.Run(s.name, func(b *testing.B) {
					a, err := s.setup(ctx, st, NewTools(), nil)
					if err != nil {
						b.Fatal(err)
					}
					b.ReportAllocs()
					var total int64
					cpu0, cpuOK := cputime.Process()
					var cpuOut time.Duration // CPU spent outside the timed part
					for i := 0; i < b.N; i++ {
						b.StopTimer()
						c0, _ := cputime.Process()
						thread := fmt.Sprintf("%s-%d-%d", s.name, stamp, threads.Add(1))
						in, err := Seed(ctx, st, thread)
						if err != nil {
							b.Fatal(err)
						}
						if a.prepare != nil {
							if err := a.prepare(ctx, in); err != nil {
								b.Fatal(err)
							}
						}
						before := trips.Load()
						c1, _ := cputime.Process()
						cpuOut += c1 - c0
						b.StartTimer()
						_, err = a.run(ctx, in)
						b.StopTimer()
						if err != nil {
							b.Fatal(err)
						}
						total += trips.Load() - before
						b.StartTimer()
					}
					b.ReportMetric(float64(total)/float64(b.N), "roundtrips/op")
					if cpu1, ok := cputime.Process(); ok && cpuOK {
						b.ReportMetric(float64(cpu1-cpu0-cpuOut)/float64(b.N), "cpu-ns/op")
					}
				})
			}
		})
	}
}
