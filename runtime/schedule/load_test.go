package schedule

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// The load tests run four copies of this test binary as separate OS processes (replicas) on one
// database, each with its scheduler's Start loop on the real clock, and one of them with a local
// clock 30 seconds ahead. The load is loadPersonas: 50 personas firing every minute, every two
// minutes and every 5 seconds, ten of them also every second (about 21 fires a second); each run
// works up to 200 ms and records a model turn. When the replicas stopped, every fire due while
// all four ran (after a warm-up of 5 seconds) must have run exactly once, on time or later
// (never before its instant), and the trail must hold none of them skipped, failed or
// abandoned. The test is timing-bound: on a machine whose CPUs are saturated by other work, runs
// can take longer than the second between two fires and be skipped as overlap for real (the
// test tells those from a finished run mistaken for a running one).
//
// In `go test` each database gets a loadShort run of load; PERSONAGEN_SOAK=1 runs loadSoak
// (3 minutes) instead, the full load test.

// Environment of a load replica process (set only in one).
const (
	loadChildEnv  = "PERSONAGEN_LOAD_CHILD_DSN"
	loadHolderEnv = "PERSONAGEN_LOAD_CHILD_HOLDER"
	loadSkewEnv   = "PERSONAGEN_LOAD_CHILD_SKEW" // a time.Duration: how far the local clock is ahead
	soakEnv       = "PERSONAGEN_SOAK"
)

// The load's durations: how long the four replicas run together.
const (
	loadShort = 20 * time.Second
	loadSoak  = 3 * time.Minute
)

// loadSkew is how far ahead the skewed replica's local clock is: half the default lease.
const loadSkew = 30 * time.Second

// loadPersonas is the load: 50 personas with a responsibility every minute, every two minutes
// and every 5 seconds; the first ten also every second.
func loadPersonas() []*runtime.Persona {
	var ps []*runtime.Persona
	for i := range 50 {
		resps := []string{"minute=* * * * *@UTC", "two=*/2 * * * *@Europe/Berlin", "five=@every 5s@UTC"}
		if i < 10 {
			resps = append(resps, "second=@every 1s@UTC")
		}
		ps = append(ps, persona(fmt.Sprintf("load-%02d", i), resps...))
	}
	return ps
}

// TestLoadReplicaChild is one replica process; it only runs under the load tests. It starts its
// scheduler on "start" and stops it on "stop", and reports every runner call as
// "ran KEY ATTEMPT UNIX-NANOS" (the real time of the call).
func TestLoadReplicaChild(t *testing.T) {
	dsn := os.Getenv(loadChildEnv)
	if dsn == "" {
		t.Skip("a replica process of the load tests")
	}
	var outMu sync.Mutex
	say := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf("load: "+format+"\n", a...)
	}
	skew, err := time.ParseDuration(os.Getenv(loadSkewEnv))
	if err != nil {
		say("error skew: %v", err)
		return
	}
	ctx := context.Background()
	st, err := store.Open(ctx, dsn, loadStoreOptions(skew)...)
	if err != nil {
		say("error %v", err)
		return
	}
	defer st.Close()
	runner := loadRunner(st, func(key string, attempt int) {
		say("ran %s %d %d", key, attempt, time.Now().UnixNano())
	})
	s, err := New(st, loadPersonas(), runner, WithHolder(os.Getenv(loadHolderEnv)), WithLogger(quietLogger))
	if err != nil {
		say("error %v", err)
		return
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "start":
			if err := s.Start(ctx); err != nil {
				say("error %v", err)
				return
			}
			m, _ := st.Clock()
			say("clock: local clock %v ahead; measured offset %v, error %v", skew, m.Offset, m.Error)
			say("started")
		case "stop":
			stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
			err := s.Stop(stopCtx)
			cancel()
			if err != nil {
				say("error %v", err)
				return
			}
			say("stopped")
		}
	}
}

// loadRunner is the load's runner: each run works 0 to 200 ms, records its answer as a model
// turn (a write, as a real run's are), then succeeds.
func loadRunner(st *store.Store, ran func(key string, attempt int)) Runner {
	return RunnerFunc(func(ctx context.Context, f Fire) (FireResult, error) {
		ran(f.Run.Key, f.Run.Attempt)
		select {
		case <-time.After(rand.N(200 * time.Millisecond)):
		case <-ctx.Done():
			return FireResult{}, ctx.Err()
		}
		if _, err := st.StartTurn(ctx, f.Run.Lease.Holder, store.Turn{RunID: f.Run.ID, Text: "done", StopReason: "end_turn",
			Usage: chat.Usage{InputTokens: 100, OutputTokens: 10}}); err != nil {
			return FireResult{}, err
		}
		return FireResult{Finish: store.Finish{StopReason: "end_turn", Usage: chat.Usage{InputTokens: 100, OutputTokens: 10}},
			Text: "done"}, nil
	})
}

// loadStoreOptions makes a replica whose local clock is skew ahead; its scheduler follows the
// store's clock (the default), which corrects it.
func loadStoreOptions(skew time.Duration) []store.Option {
	if skew == 0 {
		return nil
	}
	return []store.Option{store.WithLocalClock(func() time.Time { return time.Now().Add(skew) })}
}

// loadChild is a load replica process as the parent sees it.
type loadChild struct {
	name  string
	cmd   *exec.Cmd
	lines chan string
	in    *os.File
}

// TestLoadSQLite and TestLoadMySQL: four replica processes on one database run every fire of
// the load exactly once, never early, none skipped as overlap or missed, though one replica's
// clock is 30 seconds ahead.
func TestLoadSQLite(t *testing.T) { testLoad(t, store.DialectSQLite) }
func TestLoadMySQL(t *testing.T)  { testLoad(t, store.DialectMySQL) }

func testLoad(t *testing.T, d store.Dialect) {
	if os.Getenv(loadChildEnv) != "" || os.Getenv(childEnv) != "" {
		t.Skip("inside a replica process")
	}
	duration := loadShort
	if os.Getenv(soakEnv) == "1" {
		duration = loadSoak
	}
	dsn := scratchDSN(t, d)
	var readers sync.WaitGroup
	t.Cleanup(readers.Wait) // after the children are killed (cleanups run last first)
	var cs []*loadChild
	for i := range 4 {
		skew := time.Duration(0)
		if i == 3 {
			skew = loadSkew
		}
		cs = append(cs, startLoadChild(t, dsn, "replica-"+strconv.Itoa(i), skew))
	}
	var mu sync.Mutex
	ran := map[string][]loadCall{}
	marks := map[string]chan struct{}{} // "replica started", "replica stopped"
	for _, c := range cs {
		for _, m := range []string{"started", "stopped"} {
			marks[c.name+" "+m] = make(chan struct{})
		}
	}
	for _, c := range cs {
		readers.Go(func() {
			for line := range c.lines {
				switch {
				case strings.HasPrefix(line, "error "):
					t.Errorf("%s: %s", c.name, line)
				case strings.HasPrefix(line, "clock:"):
					t.Logf("%s: %s", c.name, line)
				case strings.HasPrefix(line, "ran "):
					f := strings.Fields(line)
					attempt, _ := strconv.Atoi(f[2])
					nanos, _ := strconv.ParseInt(f[3], 10, 64)
					mu.Lock()
					ran[f[1]] = append(ran[f[1]], loadCall{replica: c.name, attempt: attempt, at: time.Unix(0, nanos)})
					mu.Unlock()
				case line == "started" || line == "stopped":
					close(marks[c.name+" "+line])
				}
			}
		})
	}
	await := func(mark string) {
		t.Helper()
		for _, c := range cs {
			select {
			case <-marks[c.name+" "+mark]:
			case <-time.After(time.Minute):
				t.Fatalf("%s: not %s within a minute", c.name, mark)
			}
		}
	}
	for _, c := range cs {
		fmt.Fprintln(c.in, "start")
	}
	await("started")
	from := time.Now()
	time.Sleep(duration)
	through := time.Now()
	for _, c := range cs {
		fmt.Fprintln(c.in, "stop")
	}
	await("stopped")
	mu.Lock()
	defer mu.Unlock()
	checkLoad(t, dsn, from, through, ran)
}

// loadCall is one runner call a replica reported.
type loadCall struct {
	replica string
	attempt int
	at      time.Time
}

// The checked window of a load test: from warmUp after all four replicas started (a fresh
// fleet's first passes catch up the latest fire of every responsibility at once, 160 runs
// within a second, whose writes hold up the first seconds' runs) until margin before they were
// told to stop.
const (
	warmUp = 5 * time.Second
	margin = 2 * time.Second
)

// checkLoad checks the fires due in the window: each ran exactly once, not before its instant,
// and is recorded succeeded; the trail holds no fire of the window skipped, failed or
// abandoned. Over the whole trail, no fire is skipped as overlap unless the run before it was
// running at its instant.
func checkLoad(t *testing.T, dsn string, from, through time.Time, ran map[string][]loadCall) {
	t.Helper()
	st := openStore(t, dsn, SystemClock())
	runs, err := st.Runs(context.Background(), store.RunQuery{Kind: store.RunScheduled})
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]store.Run{}
	statuses := map[string]int{}
	for _, r := range runs {
		byKey[r.Key] = r
		statuses[string(r.Status)+" "+r.Reason]++
	}
	t.Logf("%d runs stored: %v", len(runs), statuses)
	var fires, missing, twice, early, notSucceeded int
	var late []time.Duration
	var problems []string
	note := func(format string, a ...any) {
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, a...))
		}
	}
	for _, p := range loadPersonas() {
		for _, r := range p.Responsibilities {
			c := MustParse(r.Schedule, r.Timezone)
			for f := range c.Fires(from.Add(warmUp), through.Add(-margin)) {
				fires++
				key := RunKey(p.Name, r.Name, f)
				calls := ran[key]
				run, stored := byKey[key]
				switch {
				case !stored:
					missing++
					note("%s: no run stored", key)
				case run.Status != store.RunSucceeded:
					notSucceeded++
					note("%s: %s (%s)", key, run.Status, run.Reason)
					if prevAt, ok := c.Prev(f.Add(-time.Nanosecond)); ok {
						prev := byKey[RunKey(p.Name, r.Name, prevAt)]
						note("  the fire before: %s (%s) started %s, finished %s, by %s, attempt %d, ran %v", prev.Status, prev.Reason,
							prev.StartedAt.Format("15:04:05.000000"), prev.FinishedAt.Format("15:04:05.000000"), prev.Lease.Holder,
							prev.Attempt, ran[prev.Key])
					}
				}
				if len(calls) != 1 {
					twice++
					note("%s: ran %d times %v", key, len(calls), calls)
				}
				for _, call := range calls {
					if call.at.Before(f) {
						early++
						note("%s: ran %v early on %s", key, f.Sub(call.at), call.replica)
					}
				}
				if len(calls) > 0 {
					late = append(late, calls[0].at.Sub(f))
				}
			}
		}
	}
	// Over the whole trail, startup included: a fire skipped as overlap had a previous run that
	// was running at its instant.
	byResp := map[string][]store.Run{}
	for _, r := range runs {
		byResp[r.Persona+"/"+r.Responsibility] = append(byResp[r.Persona+"/"+r.Responsibility], r)
	}
	falseOverlaps := 0
	for _, trail := range byResp {
		slices.SortFunc(trail, func(a, b store.Run) int { return a.FireAt.Compare(b.FireAt) })
		var prev *store.Run
		for i, r := range trail {
			if r.Status == store.RunSkipped && r.Reason == ReasonOverlap &&
				(prev == nil || prev.StartedAt.After(r.FireAt) || !prev.FinishedAt.After(r.FireAt)) {
				falseOverlaps++
				if prev != nil {
					note("%s: skipped as overlap, but the run before (%s) ran from %s to %s", r.Key, prev.Key,
						prev.StartedAt.Format("15:04:05.000000"), prev.FinishedAt.Format("15:04:05.000000"))
				}
			}
			if r.Status != store.RunSkipped {
				prev = &trail[i]
			}
		}
	}
	if falseOverlaps > 0 {
		t.Errorf("%d fires skipped as overlap whose previous run was not running at their instant", falseOverlaps)
	}
	byReplica := map[string]int{}
	for _, calls := range ran {
		for _, c := range calls {
			byReplica[c.replica]++
		}
	}
	t.Logf("runner calls by replica: %v", byReplica)
	for i := range 4 {
		if name := "replica-" + strconv.Itoa(i); byReplica[name] == 0 {
			t.Errorf("%s ran no fire", name)
		}
	}
	slices.Sort(late)
	if n := len(late); n > 0 {
		t.Logf("%d fires from %s to %s; lateness of the runner call: median %v, 99th percentile %v, max %v",
			fires, from.Format(time.TimeOnly), through.Format(time.TimeOnly), late[n/2], late[n*99/100], late[n-1])
	}
	if missing+twice+early+notSucceeded > 0 {
		t.Errorf("%d fires: %d without a run, %d not succeeded, %d not run exactly once, %d run early; first problems:\n%s",
			fires, missing, notSucceeded, twice, early, strings.Join(problems, "\n"))
	}
}

func startLoadChild(t *testing.T, dsn, name string, skew time.Duration) *loadChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadReplicaChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadChildEnv+"="+dsn, loadHolderEnv+"="+name, loadSkewEnv+"="+skew.String())
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = r
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	c := &loadChild{name: name, cmd: cmd, in: w, lines: make(chan string, 1<<16)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "load: "); ok {
				c.lines <- line
			}
		}
	}()
	t.Cleanup(func() {
		w.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}
