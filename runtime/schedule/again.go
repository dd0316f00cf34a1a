package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime/store"
)

// RunAgain runs the fire at of persona's responsibility again, on request (an operator's retry
// of a failed fire, say), and returns the outcome of its last Runner call once the run ended.
// The fire's run — failed, abandoned, or skipped (missed, overlap, or skipped by the runner) —
// is reopened with store.ReopenRun under this scheduler's lease, with Attempt one more than
// before and a run event recording by, reason and what the run was; a fire that has no run yet
// (older than the trail the scheduler keeps) is first recorded missed, as it was, then
// reopened. The Runner then resumes the run as it would after a takeover (recorded rounds are
// replayed, not run again); transient failures are retried as for a fire (see Runner), the
// catch-up window counted from now. ctx bounds the run as Tick's does: when it is cancelled
// the run is given back (Report.Released), for the next pass of any scheduler to resume. A run
// already running under this scheduler's lease but not running here (the reopening committed,
// then this call failed) is resumed.
//
// Errors (nothing is run): the persona has no enabled responsibility of that name registered
// with this scheduler; at is not a fire of its schedule, or not due yet; by is empty; the
// fire's run succeeded (store.ErrRunFinished), is running (store.ErrRunRunning, or running
// here already), or another run of the responsibility is running (a *store.BusyError, which
// must end first); ctx's error; the store's (wrapped).
func (s *Scheduler) RunAgain(ctx context.Context, persona, responsibility string, at time.Time, by, reason string) (Report, error) {
	fail := func(err error) (Report, error) {
		return Report{}, fmt.Errorf("schedule: run %s/%s@%s again: %w", persona, responsibility, at.UTC().Format(time.RFC3339Nano), err)
	}
	j := s.byName[[2]string{persona, responsibility}]
	if j == nil {
		return fail(errors.New("no enabled responsibility of that name is registered with this scheduler"))
	}
	if by == "" {
		return fail(errors.New("say who asks (by is empty)"))
	}
	at = at.UTC()
	if p, ok := j.cron.Prev(at); !ok || !p.Equal(at) {
		next, _ := j.cron.Next(at)
		return fail(fmt.Errorf("%s is not a fire of %s (the fires around it are %s and %s)", at.Format(time.RFC3339Nano),
			j.cron, p.UTC().Format(time.RFC3339Nano), next.UTC().Format(time.RFC3339Nano)))
	}
	now := s.clock.Now()
	if at.After(now) {
		return fail(fmt.Errorf("the fire is not due until %s", at.Format(time.RFC3339Nano)))
	}
	key := RunKey(persona, responsibility, at)
	if s.isActive(key) {
		return fail(fmt.Errorf("%w: it runs on this scheduler now", store.ErrRunRunning))
	}
	if _, err := s.store.Run(ctx, key); errors.Is(err, store.ErrRunNotFound) {
		if err := s.skip(ctx, j, at, ReasonMissed); err != nil {
			return fail(err)
		}
	} else if err != nil {
		return fail(err)
	}
	run, _, err := s.store.ReopenRun(ctx, key, store.Reopen{Holder: s.holder, LeaseFor: s.lease, By: by, Reason: reason})
	if err != nil {
		return fail(err)
	}
	s.log.Info("schedule: a fire runs again on request", "persona", persona, "responsibility", responsibility,
		"fire", at, "run", key, "by", by, "reason", reason, "attempt", run.Attempt)
	a := s.launch(ctx, j, run, now)
	s.await(ctx, []*activeRun{a})
	select {
	case <-a.done:
		return a.report, nil
	default: // the runner ignores its cancelled context; await gave the run back
		return Report{Fire: a.fire, Err: ctx.Err(), Released: true}, nil
	}
}
