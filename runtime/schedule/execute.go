package schedule

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime/store"
)

// launch starts the claimed run in its own goroutine; retries of a transient failure are
// counted from the instant from (the fire's, or a RunAgain request's).
func (s *Scheduler) launch(runCtx context.Context, j *job, run store.Run, from time.Time) *activeRun {
	ctx, cancel := context.WithCancelCause(runCtx)
	a := &activeRun{
		fire: Fire{Persona: j.persona, Responsibility: j.resp, At: run.FireAt.UTC(), Run: run},
		ctx:  ctx, cancel: cancel, done: make(chan struct{}),
	}
	a.retryUntil, a.why = s.retryWindow(j, from)
	s.mu.Lock()
	s.active[run.Key] = a
	s.mu.Unlock()
	s.runs.Add(1)
	go s.execute(a)
	return a
}

// retryWindow returns until when a run counted from the instant from is retried, and why it
// ends then: the catch-up window after from, or the responsibility's next fire after from when
// that comes first (the later fire matters more than a late retry of this one).
func (s *Scheduler) retryWindow(j *job, from time.Time) (time.Time, string) {
	until := from.Add(s.catchUp)
	why := "the fire's catch-up window ends at " + until.UTC().Format(time.RFC3339Nano)
	if next, ok := j.cron.Next(from); ok && next.Before(until) {
		until, why = next, "the responsibility's next fire is due at "+next.UTC().Format(time.RFC3339Nano)
	}
	return until, why
}

// execute runs a's fire through the runner, renewing its lease meanwhile, retries a transient
// failure while its retry window lasts, and records the end; a run cut off because the
// scheduler stops (a's context cancelled, not for a lost lease) is given back instead.
func (s *Scheduler) execute(a *activeRun) {
	defer func() {
		s.mu.Lock()
		delete(s.active, a.fire.Run.Key)
		s.mu.Unlock()
		a.cancel(nil)
		close(a.done)
		s.runs.Done()
		s.signalWake()
	}()
	renewed := make(chan struct{})
	go s.renew(a, renewed)
	stopRenewing := sync.OnceFunc(func() { close(renewed) })
	defer stopRenewing()
	for attempt := 1; ; attempt++ {
		res, err := s.call(a)
		rep := Report{Fire: a.fire, Result: res, Err: err}
		if s.leaseLost(a, err) {
			s.report(a, rep)
			return
		}
		if errors.Is(err, store.ErrWaiting) {
			// The runner paused the run for approval and recorded it so, releasing the lease:
			// there is nothing to finish. Whoever resumes it after the decision (runtime/service)
			// finishes it.
			s.log.Info("schedule: a run waits for approval", s.fireAttrs(a, "error", err)...)
			s.report(a, rep)
			return
		}
		f, final := s.outcome(res, err)
		if !final && a.ctx.Err() != nil {
			// Cut off because the scheduler stops: given back for any scheduler to resume.
			stopRenewing()
			rep.Released = s.release(a, res.Finish.Fault, time.Time{})
			s.report(a, rep)
			return
		}
		if !final {
			retryAt := s.retryAt(attempt, res.RetryAt)
			if retryAt.Before(a.retryUntil) {
				s.log.Warn("schedule: a fire's attempt stopped; it is retried", s.fireAttrs(a, "attempt", attempt,
					"retry_at", retryAt, "error", err)...)
				rep.RetryAt = retryAt
				s.report(a, rep)
				select {
				case <-s.clock.After(retryAt.Sub(s.clock.Now())):
					continue
				case <-a.ctx.Done():
				}
				rep = Report{Fire: a.fire, Result: res, Err: context.Cause(a.ctx)}
				if s.leaseLost(a, err) {
					s.report(a, rep)
					return
				}
				// Stopped while waiting for the retry: given back, to be resumed from retryAt.
				stopRenewing()
				rep.Released, rep.RetryAt = s.release(a, res.Finish.Fault, retryAt), retryAt
				s.report(a, rep)
				return
			}
			f = res.Finish
			f.Status = store.RunFailed
			f.Reason = fmt.Sprintf("%v (transient; given up after %s: %s)", err, plural(attempt, "attempt"), a.why)
		}
		stopRenewing()
		rep.Recorded = s.finish(a, f)
		s.logEnd(a, rep.Recorded)
		s.report(a, rep)
		return
	}
}

// leaseLost reports (and logs) whether a's run was cancelled because its lease was lost:
// another replica carries it on, and its result is dropped.
func (s *Scheduler) leaseLost(a *activeRun, err error) bool {
	if !errors.Is(context.Cause(a.ctx), errLeaseLost) {
		return false
	}
	s.log.Warn("schedule: a run lost its lease and was taken over; its result is dropped",
		"run", a.fire.Run.Key, "holder", s.holder, "error", err)
	return true
}

// outcome turns what the runner returned into the state to record, or says (final false) that
// the attempt stopped before the run ended: transiently, or cut off by its cancelled context.
func (s *Scheduler) outcome(res FireResult, err error) (store.Finish, bool) {
	f := res.Finish
	switch {
	case f.Status != "":
		if f.Reason == "" && err != nil && f.Status != store.RunSucceeded {
			f.Reason = err.Error()
		}
		return f, true
	case err == nil:
		f.Status = store.RunSucceeded
		return f, true
	}
	return f, false
}

// retryAt returns when to retry after the attempt-th attempt stopped transiently: the backoff
// from now, or hint (the runner's RetryAt) when that is later.
func (s *Scheduler) retryAt(attempt int, hint time.Time) time.Time {
	d := s.retryInitial
	for range attempt - 1 {
		if d >= s.retryMax {
			break
		}
		d *= 2
	}
	at := s.clock.Now().Add(s.jitter(min(d, s.retryMax)))
	if hint.After(at) {
		return hint
	}
	return at
}

// jitter spreads a wait d over [d/2, 3d/2), so that replicas retrying together do not stay in
// step.
func jitter(d time.Duration) time.Duration { return d/2 + rand.N(d) }

// call runs the runner, turning a panic into a failure.
func (s *Scheduler) call(a *activeRun) (res FireResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the runner panicked: %v", p)
			res = FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: err.Error()}}
		}
	}()
	return s.runner.RunFire(a.ctx, a.fire)
}

// report keeps rep as a's last report and hands it to the host's WithResults function.
func (s *Scheduler) report(a *activeRun, rep Report) {
	a.report = rep
	if s.results != nil {
		s.results(rep)
	}
}

// fireAttrs are the log attributes that name a's fire, then more.
func (s *Scheduler) fireAttrs(a *activeRun, more ...any) []any {
	return append([]any{"persona", a.fire.Persona.Name, "responsibility", a.fire.Responsibility.Name,
		"fire", a.fire.At, "run", a.fire.Run.Key, "holder", s.holder}, more...)
}

// logEnd logs a run's recorded end: a failure at Error, an abandoned run at Warn, the rest at
// Debug.
func (s *Scheduler) logEnd(a *activeRun, f store.Finish) {
	switch f.Status {
	case store.RunFailed:
		s.log.Error("schedule: a fire failed", s.fireAttrs(a, "reason", f.Reason)...)
	case store.RunAbandoned:
		s.log.Warn("schedule: a fire was abandoned", s.fireAttrs(a, "reason", f.Reason)...)
	case "":
	default:
		s.log.Debug("schedule: a fire ended", s.fireAttrs(a, "status", f.Status, "reason", f.Reason)...)
	}
}

// renew renews a's lease a third into each lease (so a renewal that comes late, after a
// stall, comes at once) until done closes; a renewal that fails is retried every tenth of a
// lease, and a lease that was lost (taken over or abandoned by another replica) cancels the run.
func (s *Scheduler) renew(a *activeRun, done <-chan struct{}) {
	next := a.fire.Run.Lease.Expires.Add(-2 * s.lease / 3)
	for {
		select {
		case <-done:
			return
		case <-a.ctx.Done():
			return
		case <-s.clock.After(next.Sub(s.clock.Now())):
		}
		lease, err := s.store.RenewLease(a.ctx, a.fire.Run.Key, s.holder, s.lease)
		switch {
		case err == nil:
			s.log.Debug("schedule: renewed a run's lease", "run", a.fire.Run.Key, "holder", s.holder, "until", lease.Expires)
			next = lease.Expires.Add(-2 * s.lease / 3)
		case errors.Is(err, store.ErrLeaseLost), errors.Is(err, store.ErrRunFinished):
			s.log.Warn("schedule: a run's lease was lost; cancelling it", "run", a.fire.Run.Key, "holder", s.holder, "error", err)
			a.cancel(errLeaseLost)
			return
		default:
			if a.ctx.Err() == nil {
				s.log.Warn("schedule: renewing a run's lease failed; retrying", "run", a.fire.Run.Key, "error", err)
			}
			next = s.clock.Now().Add(s.lease / 10)
		}
	}
}

// finish records a's end f, retrying store errors a few times, and returns what it recorded
// (Status "" when it could not). A result the store refuses (ErrInvalid: say a stop reason that
// is too long) is recorded as a failure saying so.
func (s *Scheduler) finish(a *activeRun, f store.Finish) store.Finish {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	key := a.fire.Run.Key
	refused := false
	for attempt := 1; ; attempt++ {
		_, err := s.store.FinishRun(ctx, key, s.holder, f)
		switch {
		case err == nil:
			return f
		case errors.Is(err, store.ErrInvalid) && !refused:
			f, refused = store.Finish{Status: store.RunFailed, Reason: fmt.Sprintf("the run's result could not be stored: %v", err)}, true
			continue
		case errors.Is(err, store.ErrRunFinished), errors.Is(err, store.ErrLeaseLost):
			s.log.Info("schedule: a run was already settled elsewhere", "run", key, "status", f.Status, "error", err)
			return store.Finish{}
		case attempt == 3 || ctx.Err() != nil:
			s.log.Error("schedule: recording a run's end failed; its lease will expire and it will be abandoned",
				"run", key, "status", f.Status, "error", err)
			return store.Finish{}
		}
		storeBackoff(ctx, attempt)
	}
}

// release gives a's run back because the scheduler stops, in one statement (store.StopRun):
// the run stays running with reason ReasonStopped, class store.FailureShutdown and its lease
// released, so that the next pass of any scheduler with its responsibility resumes it (see
// sweep); retryAt, when not zero, is the retry the run was waiting for, before which it is not
// resumed, and fault counts the attempt that stopped as a fault. Store errors are retried a few
// times. It reports whether the run was given back; one that was not (its lease lost, the run
// finished or already given back, or the store unreachable) is left to its lease.
func (s *Scheduler) release(a *activeRun, fault bool, retryAt time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), finishTimeout)
	defer cancel()
	key := a.fire.Run.Key
	st := store.Stop{Reason: ReasonStopped, Class: store.FailureShutdown, Fault: fault}
	if d := retryAt.Sub(s.clock.Now()); !retryAt.IsZero() && d > 0 {
		st.RetryAfter = d
	}
	for attempt := 1; ; attempt++ {
		out, err := s.store.StopRun(ctx, key, s.holder, st)
		switch {
		case err == nil && out == store.Stored:
			s.log.Info("schedule: the scheduler stops; a fire's run is given back for another scheduler to resume",
				s.fireAttrs(a, "retry_at", retryAt)...)
			return true
		case err == nil:
			return false // given back already (Stop did, for a runner that outlasted its grace)
		case errors.Is(err, store.ErrRunFinished), errors.Is(err, store.ErrLeaseLost):
			s.log.Info("schedule: a run was already settled elsewhere", "run", key, "error", err)
			return false
		case attempt == 3 || ctx.Err() != nil:
			s.log.Error("schedule: giving a run back failed; another replica takes it over once its lease expires",
				"run", key, "error", err)
			return false
		}
		storeBackoff(ctx, attempt)
	}
}

// storeBackoff waits before the attempt+1-th try of a store write: attempt times 200 ms, or
// until ctx is done.
func storeBackoff(ctx context.Context, attempt int) {
	select {
	case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
	case <-ctx.Done():
	}
}

// plural returns "1 attempt", "2 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
