package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/store"
)

// step is what a scripted runner returns from one call.
type step struct {
	res     FireResult
	err     error
	retryIn time.Duration // sets res.RetryAt this long after the call
	panic   string
}

// scripted is a Runner that returns its steps in order (the last one again once they are used
// up) and notes when (on the test's clock) and with which attempt each call came.
type scripted struct {
	clock  *fakeClock
	steps  []step
	layout string // of the calls' times; "" is 15:04:05
	mu     sync.Mutex
	calls  []string
}

func (r *scripted) RunFire(ctx context.Context, f Fire) (FireResult, error) {
	r.mu.Lock()
	now := r.clock.Now()
	layout := r.layout
	if layout == "" {
		layout = "15:04:05"
	}
	r.calls = append(r.calls, fmt.Sprintf("%s attempt %d", now.UTC().Format(layout), f.Run.Attempt))
	st := r.steps[min(len(r.calls), len(r.steps))-1]
	r.mu.Unlock()
	if st.panic != "" {
		panic(st.panic)
	}
	if st.retryIn > 0 {
		st.res.RetryAt = now.Add(st.retryIn)
	}
	return st.res, st.err
}

// reports collects what WithResults hands the host, as lines.
type reports struct {
	mu    sync.Mutex
	lines []string
}

func (r *reports) add(rep Report) {
	line := "recorded " + string(rep.Recorded.Status)
	if rep.Recorded.Status == "" {
		line = "not recorded"
	}
	if rep.Released {
		line += ", given back"
	}
	if rep.Recorded.Reason != "" {
		line += " (" + rep.Recorded.Reason + ")"
	}
	if !rep.RetryAt.IsZero() {
		line += ", retry at " + rep.RetryAt.UTC().Format("15:04:05")
	}
	if rep.Result.Text != "" {
		line += ", text " + rep.Result.Text
	}
	if rep.Err != nil {
		line += ", error " + rep.Err.Error()
	}
	if u := rep.Recorded.Usage; u.InputTokens > 0 {
		line += fmt.Sprintf(", %d input tokens", u.InputTokens)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
}

// TestFireFailures: what the runner returns decides what is recorded, how often the runner is
// called, what is logged at Warn and above, and what the host's WithResults function gets. A
// transient failure is retried with backoff (or at the runner's RetryAt) while the fire is
// inside its catch-up window and before the next fire is due, and then fails with its reason;
// a permanent failure is final at once; both are logged with the persona, the responsibility
// and the fire.
func TestFireFailures(t *testing.T) {
	overloaded := errors.New("model: 529 overloaded")
	const daily = "daily=0 8 * * *@Europe/Berlin" // fires 06:00Z on 29 March 2026
	logKeys := []string{"persona", "responsibility", "fire", "attempt", "retry_at", "error", "reason"}
	fire := "fire=2026-03-29T06:00:00Z"
	dsns := map[store.Dialect]string{}
	for _, d := range dialects {
		dsns[d] = scratchDSN(t, d)
	}
	for i, tt := range []struct {
		name     string
		schedule string
		opts     []Option
		steps    []step
		trail    string
		calls    []string
		logs     []string
		reports  []string
	}{
		{"a success reaches the host with its text and usage", daily, nil,
			[]step{{res: FireResult{Text: "the digest", Finish: store.Finish{StopReason: "end_turn", Usage: chat.Usage{InputTokens: 40}}}}},
			"03-29T06:00Z succeeded", []string{"06:00:01 attempt 1"}, nil,
			[]string{"recorded succeeded, text the digest, 40 input tokens"}},
		{"a permanent failure is final and logged", daily, nil,
			[]step{{res: FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: "model: 401 invalid x-api-key"}}, err: errors.New("model: 401")}},
			"03-29T06:00Z failed (model: 401 invalid x-api-key)", []string{"06:00:01 attempt 1"},
			[]string{"ERROR schedule: a fire failed persona={p} responsibility=daily " + fire + " reason=model: 401 invalid x-api-key"},
			[]string{"recorded failed (model: 401 invalid x-api-key), error model: 401"}},
		{"a permanent failure without a reason has the error's", daily, nil,
			[]step{{res: FireResult{Finish: store.Finish{Status: store.RunFailed}}, err: errors.New("compose: the persona has no mailbox")}},
			"03-29T06:00Z failed (compose: the persona has no mailbox)", []string{"06:00:01 attempt 1"},
			[]string{"ERROR schedule: a fire failed persona={p} responsibility=daily " + fire + " reason=compose: the persona has no mailbox"},
			[]string{"recorded failed (compose: the persona has no mailbox), error compose: the persona has no mailbox"}},
		{"a transient failure is retried after the backoff", daily, nil,
			[]step{{err: overloaded}, {res: FireResult{Text: "the digest"}}},
			"03-29T06:00Z succeeded", []string{"06:00:01 attempt 1", "06:00:03 attempt 1"},
			[]string{"WARN schedule: a fire's attempt stopped; it is retried persona={p} responsibility=daily " + fire +
				" attempt=1 retry_at=2026-03-29T06:00:03Z error=model: 529 overloaded"},
			[]string{"not recorded, retry at 06:00:03, error model: 529 overloaded", "recorded succeeded, text the digest"}},
		{"a transient failure is retried at the runner's RetryAt", daily, nil,
			[]step{{err: errors.New("model: 429"), retryIn: 10 * time.Minute}, {}},
			"03-29T06:00Z succeeded", []string{"06:00:01 attempt 1", "06:10:01 attempt 1"},
			[]string{"WARN schedule: a fire's attempt stopped; it is retried persona={p} responsibility=daily " + fire +
				" attempt=1 retry_at=2026-03-29T06:10:01Z error=model: 429"},
			[]string{"not recorded, retry at 06:10:01, error model: 429", "recorded succeeded"}},
		{"a transient failure fails when the catch-up window ends", daily,
			[]Option{WithCatchUp(time.Minute), WithRetry(10*time.Second, 20*time.Second)},
			[]step{{err: overloaded}},
			"03-29T06:00Z failed (model: 529 overloaded (transient; given up after 4 attempts: the fire's catch-up window ends at 2026-03-29T06:01:00Z))",
			[]string{"06:00:01 attempt 1", "06:00:11 attempt 1", "06:00:31 attempt 1", "06:00:51 attempt 1"},
			[]string{
				"WARN schedule: a fire's attempt stopped; it is retried persona={p} responsibility=daily " + fire + " attempt=1 retry_at=2026-03-29T06:00:11Z error=model: 529 overloaded",
				"WARN schedule: a fire's attempt stopped; it is retried persona={p} responsibility=daily " + fire + " attempt=2 retry_at=2026-03-29T06:00:31Z error=model: 529 overloaded",
				"WARN schedule: a fire's attempt stopped; it is retried persona={p} responsibility=daily " + fire + " attempt=3 retry_at=2026-03-29T06:00:51Z error=model: 529 overloaded",
				"ERROR schedule: a fire failed persona={p} responsibility=daily " + fire +
					" reason=model: 529 overloaded (transient; given up after 4 attempts: the fire's catch-up window ends at 2026-03-29T06:01:00Z)",
			},
			[]string{"not recorded, retry at 06:00:11, error model: 529 overloaded", "not recorded, retry at 06:00:31, error model: 529 overloaded",
				"not recorded, retry at 06:00:51, error model: 529 overloaded",
				"recorded failed (model: 529 overloaded (transient; given up after 4 attempts: the fire's catch-up window ends at 2026-03-29T06:01:00Z)), error model: 529 overloaded"}},
		{"a transient failure is not retried past the next fire", "hourly=0 * * * *@UTC",
			[]Option{WithCatchUp(2 * time.Hour), WithRetry(20*time.Minute, 40*time.Minute)},
			[]step{{err: overloaded}},
			"03-29T06:00Z failed (model: 529 overloaded (transient; given up after 2 attempts: the responsibility's next fire is due at 2026-03-29T07:00:00Z))",
			[]string{"06:00:01 attempt 1", "06:20:01 attempt 1"},
			[]string{
				"WARN schedule: a fire's attempt stopped; it is retried persona={p} responsibility=hourly " + fire + " attempt=1 retry_at=2026-03-29T06:20:01Z error=model: 529 overloaded",
				"ERROR schedule: a fire failed persona={p} responsibility=hourly " + fire +
					" reason=model: 529 overloaded (transient; given up after 2 attempts: the responsibility's next fire is due at 2026-03-29T07:00:00Z)",
			},
			[]string{"not recorded, retry at 06:20:01, error model: 529 overloaded",
				"recorded failed (model: 529 overloaded (transient; given up after 2 attempts: the responsibility's next fire is due at 2026-03-29T07:00:00Z)), error model: 529 overloaded"}},
		{"a panic is a failure", daily, nil, []step{{panic: "boom"}},
			"03-29T06:00Z failed (the runner panicked: boom)", []string{"06:00:01 attempt 1"},
			[]string{"ERROR schedule: a fire failed persona={p} responsibility=daily " + fire + " reason=the runner panicked: boom"},
			[]string{"recorded failed (the runner panicked: boom), error the runner panicked: boom"}},
		{"skipped by the runner", daily, nil,
			[]step{{res: FireResult{Finish: store.Finish{Status: store.RunSkipped, Reason: "nothing new to digest"}}}},
			"03-29T06:00Z skipped (nothing new to digest)", []string{"06:00:01 attempt 1"}, nil,
			[]string{"recorded skipped (nothing new to digest)"}},
		{"a result the store refuses", daily, nil,
			[]step{{res: FireResult{Finish: store.Finish{StopReason: strings.Repeat("x", 300)}}}},
			"03-29T06:00Z failed (the run's result could not be stored: store: invalid value: stop reason has 300 characters (at most 191) (run \"fire:{p}/daily@2026-03-29T06:00:00Z\"))",
			[]string{"06:00:01 attempt 1"},
			[]string{"ERROR schedule: a fire failed persona={p} responsibility=daily " + fire +
				" reason=the run's result could not be stored: store: invalid value: stop reason has 300 characters (at most 191) (run \"fire:{p}/daily@2026-03-29T06:00:00Z\")"},
			[]string{"recorded failed (the run's result could not be stored: store: invalid value: stop reason has 300 characters (at most 191) (run \"fire:{p}/daily@2026-03-29T06:00:00Z\"))"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for _, d := range dialects {
				t.Run(string(d), func(t *testing.T) {
					dsn := dsns[d]
					pname := fmt.Sprintf("p%d", i)
					fill := func(lines []string) []string {
						var out []string
						for _, l := range lines {
							out = append(out, strings.ReplaceAll(l, "{p}", pname))
						}
						return out
					}
					start := utc(t, "2026-03-29T06:00:01Z")
					clock := newFakeClock(start)
					st := openStore(t, dsn, clock)
					runner := &scripted{clock: clock, steps: tt.steps}
					logs := newLogCapture(slog.LevelWarn)
					var got reports
					opts := append([]Option{WithLogger(slog.New(logs)), WithLease(24 * time.Hour), withoutJitter(),
						WithResults(got.add)}, tt.opts...)
					s := newScheduler(t, st, []*runtime.Persona{persona(pname, tt.schedule)}, runner, clock, opts...)
					clock.drive(t, start.Add(2*time.Hour), func() {
						if err := s.Tick(context.Background()); err != nil {
							t.Error(err)
						}
					})
					name, _, _ := strings.Cut(tt.schedule, "=")
					diffTrail(t, trailOf(t, st, pname, name), fill([]string{tt.trail}))
					if lines(runner.calls) != lines(tt.calls) {
						t.Errorf("runner calls:\n%s\nwant:\n%s", lines(runner.calls), lines(tt.calls))
					}
					if got := logs.lines(logKeys...); lines(got) != lines(fill(tt.logs)) {
						t.Errorf("logs:\n%s\nwant:\n%s", lines(got), lines(fill(tt.logs)))
					}
					if lines(got.lines) != lines(fill(tt.reports)) {
						t.Errorf("reports:\n%s\nwant:\n%s", lines(got.lines), lines(fill(tt.reports)))
					}
				})
			}
		})
	}
}

// TestStoppedWhileWaitingToRetry: a scheduler stopped while a fire waits for its retry gives
// the run back with that retry time, and is not called again; another scheduler on the store
// resumes the same run from the retry time, not before, as attempt 2. It is never recorded
// abandoned.
func TestStoppedWhileWaitingToRetry(t *testing.T) {
	start := utc(t, "2026-03-29T06:00:01Z")
	clock := newFakeClock(start)
	dsn := scratchDSN(t, store.DialectSQLite)
	st := openStore(t, dsn, clock)
	runner := &scripted{clock: clock, steps: []step{{err: errors.New("model: 529 overloaded")}, {}}}
	var got reports
	p := persona("p", "daily=0 8 * * *@Europe/Berlin")
	s := newScheduler(t, st, []*runtime.Persona{p}, runner, clock,
		WithLease(24*time.Hour), withoutJitter(), WithResults(got.add), WithHolder("first"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Tick(ctx); err != nil {
			t.Error(err)
		}
	}()
	for {
		if _, ok := clock.earliestWaiter(start.Add(time.Hour)); ok {
			break // the retry is waited for
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	diffTrail(t, trailOf(t, st, "p", "daily"), []string{"03-29T06:00Z running (scheduler stopped)"})
	key := RunKey("p", "daily", utc(t, "2026-03-29T06:00:00Z"))
	run, err := st.Run(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprintf("holder %q, attempt %d, class %s, retry at %s", run.Lease.Holder, run.Attempt, run.FailureClass,
		run.RetryAt.UTC().Format("15:04:05")), `holder "", attempt 1, class shutdown, retry at 06:00:03`; got != want {
		t.Errorf("the given-back run: %s, want %s", got, want)
	}
	want := []string{"not recorded, retry at 06:00:03, error model: 529 overloaded",
		"not recorded, given back, retry at 06:00:03, error context canceled"}
	if lines(got.lines) != lines(want) {
		t.Errorf("reports:\n%s\nwant:\n%s", lines(got.lines), lines(want))
	}

	second := newScheduler(t, openStore(t, dsn, clock), []*runtime.Persona{p}, runner, clock,
		WithLease(24*time.Hour), withoutJitter(), WithResults(got.add), WithHolder("second"))
	clock.Set(utc(t, "2026-03-29T06:00:02Z"))
	if err := second.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "daily"), []string{"03-29T06:00Z running (scheduler stopped)"})
	clock.Set(utc(t, "2026-03-29T06:00:03Z"))
	if err := second.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	diffTrail(t, trailOf(t, st, "p", "daily"), []string{"03-29T06:00Z succeeded"})
	if got, want := lines(runner.calls), "06:00:01 attempt 1\n06:00:03 attempt 2"; got != want {
		t.Errorf("runner calls:\n%s\nwant:\n%s", got, want)
	}
	want = append(want, "recorded succeeded")
	if lines(got.lines) != lines(want) {
		t.Errorf("reports:\n%s\nwant:\n%s", lines(got.lines), lines(want))
	}
}
