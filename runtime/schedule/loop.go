package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Tick makes one pass and waits for the runs it started: it abandons or takes over the runs of
// dead replicas (expired leases), then, for every responsibility, claims the latest due fire,
// running it when this replica's claim wins, and finally records the fires before it that were
// missed or overlapped (see the package documentation). A host driven by an external cron calls
// Tick every minute or so. Concurrent Ticks of one Scheduler (and its Start loop) make their
// passes one at a time; only their runs overlap. Tick returns when its runs have ended,
// transient failures' retries included (each retry starts before the fire's catch-up window
// ends and before the next fire is due). When ctx is cancelled, the runs Tick started are
// cancelled and given back unless they finish first, as at Stop's deadline.
//
// Tick carries on past a failing responsibility and returns the errors it met, joined (store
// errors; the fires concerned are retried on the next Tick); every fire it settled is recorded.
func (s *Scheduler) Tick(ctx context.Context) error {
	var started []*activeRun
	var errs []error
	for {
		runs, more, err := s.tick(ctx, ctx)
		started = append(started, runs...)
		errs = append(errs, err)
		// A backlog too long to record before the next fire came due is recorded in passes
		// that claim the due fires first.
		if !more || err != nil || ctx.Err() != nil {
			break
		}
	}
	s.await(ctx, started)
	return errors.Join(errs...)
}

// Start runs the scheduler in the background until Stop, or until ctx is done: it ticks when
// the next fire is due, at least every half lease (and every minute) to sweep for dead
// replicas' runs, when one of its runs ended, and every 250 ms while a due fire waits for the
// record of its responsibility's previous run; after a pass that met an error it waits a second
// before the next. Runs started by the loop get contexts derived from ctx (one cut off by ctx's
// end is given back, as at Stop's deadline). Errors of a pass are logged and retried on the
// next. Start returns an error when the scheduler is already started.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loop != nil {
		return errors.New("schedule: the scheduler is already started")
	}
	l := &loop{stop: make(chan struct{}), exited: make(chan struct{})}
	s.loop = l
	go s.run(ctx, l)
	return nil
}

func (s *Scheduler) run(ctx context.Context, l *loop) {
	defer close(l.exited)
	for {
		wait := time.Duration(0)
		if _, _, err := s.tick(ctx, ctx); err != nil {
			s.log.Warn("schedule: pass failed; retrying on the next", "holder", s.holder, "error", err)
			wait = retryDelay
		}
		select {
		case <-l.stop:
			return
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-s.clock.After(max(wait, s.nextWake())):
		}
	}
}

// signalWake wakes the Start loop (a run ended).
func (s *Scheduler) signalWake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// nextWake returns how long the loop may sleep: until the earliest next fire, at most half a
// lease (the sweep for dead replicas' runs) and a minute (so that a clock that jumps is
// noticed); pendingPoll while a fire's claim waits; nothing while a backlog is left.
func (s *Scheduler) nextWake() time.Duration {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	now := s.clock.Now()
	wait := min(s.lease/2, time.Minute)
	for _, j := range s.jobs {
		if !j.loaded {
			continue // its trail could not be read: retried at the sweep
		}
		if len(j.backlog) > 0 {
			return 0
		}
		if !j.pending.IsZero() {
			wait = min(wait, pendingPoll)
		}
		if next, ok := j.cron.Next(j.settledThrough()); ok {
			wait = min(wait, max(next.Sub(now), 0))
		}
	}
	return wait
}

// Stop stops the loop that Start began and waits for the runs in progress to finish, a run
// waiting for the retry of a transient failure included. When ctx is done first, it cancels
// them and gives back the ones that do not end: each stays running, resumable, with reason
// ReasonStopped, class store.FailureShutdown and its lease released (store.StopRun) — a run
// waiting for a retry keeps that retry time as the run's RetryAt — so that the next pass of any
// scheduler that has its responsibility resumes the same run (same run key, Fire.Run.Attempt
// one more) at once instead of after the lease, as long as it was given back at most the
// catch-up window ago (see the package documentation). The Runner's own result still counts
// when it returns one that ends the run. A runner that has not returned a second after the
// cancellation has its run given back by Stop itself. A stop thus leaves no run of this
// replica holding a lease; Stop then returns ctx's error, wrapped. Stop without Start returns
// an error.
func (s *Scheduler) Stop(ctx context.Context) error {
	s.mu.Lock()
	l := s.loop
	s.loop = nil
	s.mu.Unlock()
	if l == nil {
		return errors.New("schedule: the scheduler is not started")
	}
	close(l.stop)
	<-l.exited
	s.mu.Lock()
	var runs []*activeRun
	for _, a := range s.active {
		runs = append(runs, a)
	}
	s.mu.Unlock()
	if n := s.await(ctx, runs); n > 0 {
		return fmt.Errorf("schedule: stop: %s interrupted and given back unless ended: %w", plural(n, "run"), ctx.Err())
	}
	return nil
}

// await waits for runs to finish. When ctx is done first it interrupts them: cancels them
// (each then ends or is given back by its own goroutine), waits up to stopGrace, and gives back
// those still going itself. It returns how many it interrupted.
func (s *Scheduler) await(ctx context.Context, runs []*activeRun) int {
	var pending []*activeRun
	for _, a := range runs {
		select {
		case <-a.done:
		case <-ctx.Done():
			pending = append(pending, a)
		}
	}
	if len(pending) == 0 {
		return 0
	}
	for _, a := range pending {
		a.cancel(errStopped)
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	expired := false
	for _, a := range pending {
		if !expired {
			select {
			case <-a.done:
				continue
			case <-grace.C:
				expired = true
			}
		}
		select {
		case <-a.done:
		default:
			s.release(a, false, time.Time{})
		}
	}
	return len(pending)
}
