package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/store"
)

// errCrash is what a crash injected by a test hook aborts an attempt with.
var errCrash = errors.New("injected crash")

// baseline is an uninterrupted run: the points it passed, the requests it sent, its reply and
// its rounds.
type baseline struct {
	points   []string
	requests map[int][]byte // by the number of rounds in the request
	reply    string
	rounds   []store.Round
	usage    agentUsage
}

type agentUsage struct{ in, out, cache int64 }

func runBaseline(t *testing.T, d *db) baseline {
	t.Helper()
	ctx := context.Background()
	st := d.open(t)
	in := seed(t, st)
	m := &model{}
	r := runner(st, m, "w0")
	var b baseline
	var mu sync.Mutex // tool points are passed from the tools' goroutines
	agent.SetHook(r, func(point string) error {
		mu.Lock()
		defer mu.Unlock()
		b.points = append(b.points, point)
		return nil
	})
	res, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, newToolbox().tools()), Message: in})
	if err != nil {
		t.Fatal(err)
	}
	b.requests = map[int][]byte{}
	for _, req := range m.sent() {
		b.requests[roundsIn(t, req)] = req
	}
	b.reply = res.Text
	b.rounds, err = st.Rounds(ctx, store.Owner{Type: store.OwnerMessage, ID: in.Seq}, res.Run.Key)
	if err != nil {
		t.Fatal(err)
	}
	b.usage = agentUsage{res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CacheReadTokens}
	return b
}

// roundsIn counts the tool rounds of an encoded request.
func roundsIn(t testing.TB, req []byte) int {
	var r struct {
		Messages []struct {
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(req, &r); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range r.Messages {
		if len(m.ToolCalls) > 0 {
			n++
		}
	}
	return n
}

// inDoubt rewrites an expected text (a request or the reply) as it reads when the act call of
// each turn in turns has an unknown outcome.
func inDoubt(s []byte, turns []int) []byte {
	for _, k := range turns {
		id := callID(k, "act")
		text, _ := json.Marshal(agent.InDoubtText("act"))
		s = bytes.ReplaceAll(s, []byte(`{"role":"tool","text":"done: `+id+`","tool_call_id":"`+id+`"}`),
			[]byte(`{"role":"tool","text":`+string(text)+`,"tool_call_id":"`+id+`","is_error":true}`))
		s = bytes.ReplaceAll(s, []byte("done: "+id), []byte(agent.InDoubtText("act")))
	}
	return s
}

// crashCase is one injected crash: where, and how.
type crashCase struct {
	point string // a hook point, or "mid-tool:<turn>": inside the act call of that turn
	mode  string // "panic" (the attempt dies at once), "cancel" (its ctx ends), "kill" (its store closes)
}

// TestCrashAnywhereResumesToTheSameRun cuts a reply run of three rounds of three parallel calls
// (two idempotent tools and one that is not) at every point it passes — after each model call,
// after recording each call as started, after each tool, after each round is recorded, after the
// reply and after finishing — and inside the non-idempotent tool, by a panic, a cancelled
// context or a closed database connection, then resumes it with another worker once the lease
// expired. The resumed run must end as the uninterrupted one: the same reply, the same rounds,
// one reply in the thread, the same usage, every request it sends byte-identical to the
// uninterrupted run's with the same rounds, and each call of the non-idempotent tool run exactly
// once — or, where the crash cut it off, reported to the model as in doubt and never run again.
func TestCrashAnywhereResumesToTheSameRun(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		base := runBaseline(t, d)
		if len(base.points) != 4+4+rounds*3+rounds+2 {
			t.Fatalf("baseline passed %d points: %v", len(base.points), base.points)
		}
		modes := []string{"panic", "cancel", "kill"}
		var cases []crashCase
		i := 0
		for _, p := range base.points {
			if d.name == "sqlite" || testing.Short() == false && os.Getenv("AGENT_CRASH_ALL") != "" {
				for _, m := range modes {
					cases = append(cases, crashCase{p, m})
				}
				continue
			}
			// MariaDB: every point, the modes in turn, so CI stays fast.
			cases = append(cases, crashCase{p, modes[i%len(modes)]})
			i++
		}
		for k := range rounds {
			cases = append(cases, crashCase{fmt.Sprintf("mid-tool:%d", k), "cancel"}, crashCase{fmt.Sprintf("mid-tool:%d", k), "kill"})
		}
		for _, c := range cases {
			t.Run(c.point+"/"+c.mode, func(t *testing.T) {
				crashAndResume(t, newDB(t, d.name), base, c)
			})
		}
	})
}

func crashAndResume(t *testing.T, d *db, base baseline, c crashCase) {
	ctx := context.Background()
	st1 := d.open(t)
	in := seed(t, st1)
	box := newToolbox()
	m1 := &model{}
	r1 := runner(st1, m1, "w1")
	ctx1, cancel1 := context.WithCancel(ctx)
	defer cancel1()
	crash := func() error {
		switch c.mode {
		case "cancel":
			cancel1()
		case "kill":
			st1.Close()
		}
		return nil
	}
	if turn, ok := strings.CutPrefix(c.point, "mid-tool:"); ok {
		box.during = func(ctx context.Context, id string) error {
			if id != "t"+turn+"-act" {
				return nil
			}
			crash()
			if c.mode == "cancel" {
				<-ctx.Done()
				return ctx.Err()
			}
			return nil // the store is gone: the outcome cannot be recorded
		}
	}
	agent.SetHook(r1, func(point string) error {
		if point != c.point {
			return nil
		}
		if c.mode == "panic" {
			if strings.HasPrefix(point, "tool:") {
				return errCrash // a tool goroutine: the attempt aborts when the round's tools returned
			}
			panic(errCrash)
		}
		return crash()
	})
	p1 := persona(st1, box.tools())
	func() {
		defer func() {
			if v := recover(); v != nil && v != errCrash {
				panic(v)
			}
		}()
		r1.Reply(ctx1, agent.Inbound{Persona: p1, Message: in})
	}()

	// Another worker, on a new connection, once the first one's lease expired.
	d.clock.Advance(2 * time.Minute)
	st2 := d.open(t)
	box.during = nil
	m2 := &model{}
	res, err := runner(st2, m2, "w2").Reply(ctx, agent.Inbound{Persona: persona(st2, box.tools()), Message: in})
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.Run.Status != store.RunSucceeded {
		t.Fatalf("resumed run is %s", res.Run.Status)
	}
	stored, err := st2.Rounds(ctx, store.Owner{Type: store.OwnerMessage, ID: in.Seq}, res.Run.Key)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != rounds {
		t.Fatalf("%d rounds stored, want %d", len(stored), rounds)
	}

	// Which act calls ended in doubt, and may they?
	var doubted []int
	for k, rd := range stored {
		if rd.Results[2].Content == agent.InDoubtText("act") {
			doubted = append(doubted, k)
		}
	}
	if !slices.Equal(doubted, allowedInDoubt(c, doubted)) {
		t.Errorf("act in doubt in turns %v, which a crash at %s (%s) cannot cut off", doubted, c.point, c.mode)
	}
	if res.InDoubt != len(doubted) && !res.AlreadyFinished {
		t.Errorf("Result.InDoubt = %d, want %d", res.InDoubt, len(doubted))
	}
	for k := range rounds {
		n := box.ran("act", callID(k, "act"))
		switch {
		case slices.Contains(doubted, k) && n > 1, !slices.Contains(doubted, k) && n != 1:
			t.Errorf("act of turn %d ran %d times (in doubt: %t)", k, n, slices.Contains(doubted, k))
		}
	}
	for k, rd := range stored {
		want := base.rounds[k]
		if slices.Contains(doubted, k) {
			want.Results = slices.Clone(want.Results)
			want.Results[2] = store.Result{Content: agent.InDoubtText("act")}
		}
		if d := diffRound(rd, want); d != "" {
			t.Errorf("round %d: %s", k, d)
		}
	}
	if want := string(inDoubt([]byte(base.reply), doubted)); res.Text != want {
		t.Errorf("reply = %q\nwant    %q", res.Text, want)
	}
	thread, err := st2.Thread(ctx, threadID)
	if err != nil || len(thread) != 4 || thread[3].Text != res.Text {
		t.Errorf("thread has %d messages (%v), want the 3 seeded and one reply", len(thread), err)
	}
	if u := (agentUsage{res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CacheReadTokens}); u != base.usage {
		t.Errorf("usage = %+v, want %+v", u, base.usage)
	}
	for _, req := range m2.sent() {
		n := roundsIn(t, req)
		if want := inDoubt(base.requests[n], doubted); !bytes.Equal(req, want) {
			t.Errorf("request with %d rounds after resume differs from the uninterrupted run's:\n got %s\nwant %s", n, req, want)
		}
	}
}

// allowedInDoubt returns the turns of doubted whose act call the crash c may have cut off: the
// turn it hit while the turn's tools were started but not all settled.
func allowedInDoubt(c crashCase, doubted []int) []int {
	var turn int
	switch {
	case strings.HasPrefix(c.point, "mid-tool:"), strings.HasPrefix(c.point, "started:"):
		fmt.Sscanf(c.point[strings.IndexByte(c.point, ':')+1:], "%d", &turn)
	case strings.HasPrefix(c.point, "tool:") && c.mode != "panic":
		// A cancel or a closed store while the round's tools run may catch act before it started or
		// before its outcome was recorded.
		fmt.Sscanf(c.point, "tool:%d:", &turn)
	default:
		return nil
	}
	if slices.Contains(doubted, turn) {
		return []int{turn}
	}
	return nil
}

func diffRound(got, want store.Round) string {
	switch {
	case got.Text != want.Text:
		return fmt.Sprintf("text %q, want %q", got.Text, want.Text)
	case len(got.Calls) != len(want.Calls):
		return fmt.Sprintf("%d calls, want %d", len(got.Calls), len(want.Calls))
	}
	for i := range got.Calls {
		g, w := got.Calls[i], want.Calls[i]
		if g.ID != w.ID || g.Name != w.Name || string(g.Input) != string(w.Input) {
			return fmt.Sprintf("call %d = %s %s %s, want %s %s %s", i, g.ID, g.Name, g.Input, w.ID, w.Name, w.Input)
		}
		if got.Results[i] != want.Results[i] {
			return fmt.Sprintf("result %d = %+v, want %+v", i, got.Results[i], want.Results[i])
		}
	}
	return ""
}

// TestEightRunnersRaceOnOneMessage delivers one message to eight workers at once, each with its
// own connection: one run, one reply, each non-idempotent call run once. Then the same after
// the first worker died mid-run: of eight workers racing to take the run over, one resumes it.
func TestEightRunnersRaceOnOneMessage(t *testing.T) {
	eachDB(t, func(t *testing.T, d *db) {
		for _, dies := range []bool{false, true} {
			t.Run(fmt.Sprintf("first_dies=%t", dies), func(t *testing.T) {
				d := newDB(t, d.name)
				ctx := context.Background()
				st := d.open(t)
				in := seed(t, st)
				box := newToolbox()
				m := &model{}
				if dies {
					r := runner(st, m, "w-dead")
					agent.SetHook(r, func(point string) error {
						if point == "started:1" {
							return errCrash
						}
						return nil
					})
					if _, err := r.Reply(ctx, agent.Inbound{Persona: persona(st, box.tools()), Message: in}); !errors.Is(err, errCrash) {
						t.Fatalf("first worker: %v", err)
					}
					d.clock.Advance(2 * time.Minute)
				}
				var wg sync.WaitGroup
				results := make([]*agent.Result, 8)
				errs := make([]error, 8)
				for i := range 8 {
					s := d.open(t)
					wg.Add(1)
					go func() {
						defer wg.Done()
						results[i], errs[i] = runner(s, m, fmt.Sprintf("w%d", i)).Reply(ctx, agent.Inbound{Persona: persona(s, box.tools()), Message: in})
					}()
				}
				wg.Wait()
				worked := 0
				for i := range 8 {
					switch {
					case errs[i] == nil && !results[i].AlreadyFinished:
						worked++
					case errs[i] == nil:
					case errors.Is(errs[i], store.ErrLeaseHeld):
					default:
						t.Errorf("worker %d: %v", i, errs[i])
					}
				}
				if worked != 1 {
					t.Errorf("%d workers ran the run, want 1", worked)
				}
				runs, err := st.Runs(ctx, store.RunQuery{ThreadID: threadID})
				if err != nil || len(runs) != 1 || runs[0].Status != store.RunSucceeded {
					t.Errorf("runs = %+v, %v", runs, err)
				}
				thread, _ := st.Thread(ctx, threadID)
				if len(thread) != 4 {
					t.Errorf("thread has %d messages, want one reply", len(thread))
				}
				for k := range rounds {
					n := box.ran("act", callID(k, "act"))
					if n > 1 || (n == 0 && !(dies && k == 1)) {
						t.Errorf("act of turn %d ran %d times", k, n)
					}
				}
			})
		}
	})
}
