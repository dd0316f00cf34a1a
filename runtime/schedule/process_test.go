package schedule

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// The replica-process tests run four copies of this test binary as separate OS processes on
// one SQLite file. The parent drives them in lockstep over their stdin ("phase NAME", "hold
// KEY", "tick TIME") and reads what they did from their stdout ("ran KEY ATTEMPT", "started
// KEY", "ticked", "error ..."), so the simulated clock is the same in every process and the
// test is deterministic.

// childEnv names the DSN a child replica opens; set only in a child.
const childEnv = "PERSONAGEN_SCHEDULE_CHILD_DSN"

// processPersonas are the personas of each phase of the process test.
func processPersonas(phase string) []*runtime.Persona {
	if day, ok := strings.CutPrefix(phase, "day-"); ok {
		return []*runtime.Persona{dayPersona(day)}
	}
	return []*runtime.Persona{persona("p-"+phase, "hourly=0 * * * *@UTC")}
}

// TestReplicaProcessChild is one replica process; it only runs under TestReplicaProcesses.
func TestReplicaProcessChild(t *testing.T) {
	dsn := os.Getenv(childEnv)
	if dsn == "" {
		t.Skip("a replica process of TestReplicaProcesses")
	}
	var outMu sync.Mutex
	say := func(format string, a ...any) {
		outMu.Lock()
		defer outMu.Unlock()
		fmt.Printf("sched: "+format+"\n", a...)
	}
	clock := newFakeClock(time.Time{})
	st, err := store.Open(context.Background(), dsn, store.WithClock(clock.Now))
	if err != nil {
		say("error %v", err)
		return
	}
	defer st.Close()
	var holdMu sync.Mutex
	hold := map[string]bool{}
	runner := RunnerFunc(func(ctx context.Context, f Fire) (FireResult, error) {
		say("ran %s %d", f.Run.Key, f.Run.Attempt)
		holdMu.Lock()
		held := hold[f.Run.Key] && f.Run.Attempt == 1
		holdMu.Unlock()
		if held {
			say("started %s", f.Run.Key)
			<-ctx.Done() // until the parent kills this process
		}
		return FireResult{Finish: store.Finish{StopReason: "end_turn"}}, nil
	})
	var s *Scheduler
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "phase":
			s, err = New(st, processPersonas(arg), runner, WithClock(clock), WithLogger(quietLogger),
				WithHolder(os.Getenv("PERSONAGEN_SCHEDULE_CHILD_HOLDER")+"/"+arg), WithLease(10*time.Minute))
			if err != nil {
				say("error %v", err)
				return
			}
		case "hold":
			holdMu.Lock()
			hold[arg] = true
			holdMu.Unlock()
		case "tick":
			at, err := time.Parse(time.RFC3339Nano, arg)
			if err != nil {
				say("error %v", err)
				return
			}
			clock.Set(at)
			if err := s.Tick(context.Background()); err != nil {
				say("error %v", strings.ReplaceAll(err.Error(), "\n", "; "))
				continue
			}
		}
		say("ticked")
	}
}

// child is a replica process as the parent sees it.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // its "sched: " lines, without the prefix; closed at exit
}

func startChild(t *testing.T, dsn, name string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestReplicaProcessChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dsn, "PERSONAGEN_SCHEDULE_CHILD_HOLDER="+name)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 1024)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "sched: "); ok {
				c.lines <- line
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return c
}

func (c *child) send(t *testing.T, line string) {
	t.Helper()
	if _, err := fmt.Fprintln(c.stdin, line); err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
}

// await reads c's lines up to the one that starts with until, adding the runs it reports to
// ran; it fails on an error line, an early exit, or ten seconds of silence.
func (c *child) await(t *testing.T, until string, ran *runLog) string {
	t.Helper()
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("%s exited", c.name)
			}
			switch {
			case strings.HasPrefix(line, "error "):
				t.Fatalf("%s: %s", c.name, line)
			case strings.HasPrefix(line, "ran "):
				ran.add(c.name, strings.TrimPrefix(line, "ran "))
			}
			if strings.HasPrefix(line, until) {
				return line
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no %q within 10s", c.name, until)
		}
	}
}

// runLog collects the "ran KEY ATTEMPT" lines of every process.
type runLog struct {
	mu  sync.Mutex
	ran map[string][]string // key -> "process attempt", in order
}

func (l *runLog) add(process, keyAttempt string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	key, attempt, _ := strings.Cut(keyAttempt, " ")
	l.ran[key] = append(l.ran[key], process+" "+attempt)
}

// tickAll has every child in cs tick at the same simulated time, all at once.
func tickAll(t *testing.T, cs []*child, at time.Time, ran *runLog) {
	t.Helper()
	for _, c := range cs {
		c.send(t, "tick "+at.Format(time.RFC3339Nano))
	}
	for _, c := range cs {
		c.await(t, "ticked", ran)
	}
}

// TestReplicaProcesses: four OS processes on one SQLite file run every fire of the two DST days
// exactly once, and when the process running a fire is killed, another takes it over after the
// lease.
func TestReplicaProcesses(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("inside a replica process")
	}
	dsn := scratchDSN(t, store.DialectSQLite)
	var cs []*child
	for i := range 4 {
		cs = append(cs, startChild(t, dsn, "process-"+strconv.Itoa(i)))
	}
	ran := &runLog{ran: map[string][]string{}}
	st := openStore(t, dsn, SystemClock())
	for _, day := range simulatedDays[:2] {
		phase := "day-" + day
		for _, c := range cs {
			c.send(t, "phase "+phase)
			c.await(t, "ticked", ran)
		}
		from, through := dayWindow(t, day)
		p := processPersonas(phase)[0]
		var want []string
		steps := []time.Time{from}
		for _, r := range p.Responsibilities {
			c := MustParse(r.Schedule, r.Timezone)
			if prev, _ := c.Prev(from); from.Sub(prev) <= DefaultCatchUp {
				want = append(want, RunKey(p.Name, r.Name, prev))
			}
			for f := range c.Fires(from, through) {
				want = append(want, RunKey(p.Name, r.Name, f))
				steps = append(steps, f.Add(time.Second))
			}
		}
		slices.SortFunc(steps, func(a, b time.Time) int { return a.Compare(b) })
		for _, at := range slices.Compact(steps) {
			tickAll(t, cs, at, ran)
		}
		ran.mu.Lock()
		for _, key := range want {
			if got := ran.ran[key]; len(got) != 1 {
				t.Errorf("%s ran %v, want once", key, got)
			}
		}
		ran.mu.Unlock()
		runs, err := st.Runs(context.Background(), store.RunQuery{Persona: p.Name})
		if err != nil {
			t.Fatal(err)
		}
		succeeded := 0
		for _, r := range runs {
			if r.Status == store.RunSucceeded {
				succeeded++
			}
		}
		if len(runs) != len(want) || succeeded != len(want) {
			t.Errorf("%s: %d runs stored, %d succeeded, want %d succeeded", day, len(runs), succeeded, len(want))
		}
	}

	// Kill the process running a fire; a survivor takes it over once the lease expired.
	for _, c := range cs {
		c.send(t, "phase kill")
		c.await(t, "ticked", ran)
	}
	key := RunKey("p-kill", "hourly", utc(t, "2026-11-02T08:00:00Z"))
	for _, c := range cs {
		c.send(t, "hold "+key)
		c.await(t, "ticked", ran)
	}
	for _, c := range cs {
		c.send(t, "tick 2026-11-02T08:00:01Z")
	}
	var survivors []*child
	for _, c := range cs {
		if line := c.await(t, "", ran); strings.HasPrefix(line, "ran ") {
			if c.await(t, "started ", ran) != "started "+key {
				t.Fatalf("%s started another run", c.name)
			}
			if err := c.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			c.cmd.Wait()
			continue
		} else if line != "ticked" {
			t.Fatalf("%s: %s", c.name, line)
		}
		survivors = append(survivors, c)
	}
	if len(survivors) != 3 {
		t.Fatalf("%d survivors, want 3", len(survivors))
	}
	tickAll(t, survivors, utc(t, "2026-11-02T08:05:00Z"), ran) // the lease is live
	tickAll(t, survivors, utc(t, "2026-11-02T08:10:02Z"), ran) // it expired at 08:10:01
	ran.mu.Lock()
	got := ran.ran[key]
	ran.mu.Unlock()
	if len(got) != 2 || !strings.HasSuffix(got[0], " 1") || !strings.HasSuffix(got[1], " 2") || strings.Fields(got[0])[0] == strings.Fields(got[1])[0] {
		t.Errorf("%s ran %v, want attempt 1 on the killed process and attempt 2 on a survivor", key, got)
	}
	run, err := st.Run(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunSucceeded || run.Attempt != 2 {
		t.Errorf("the killed process's run is %s, attempt %d; want succeeded, attempt 2", run.Status, run.Attempt)
	}
}
