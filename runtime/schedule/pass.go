package schedule

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/personagen/personagen/runtime/store"
)

// tick makes one pass: the trails of responsibilities not yet loaded, the sweep, every job's
// due fire, then the backlogs of skipped fires (stopping early, more, when a fire comes due
// meanwhile). Runs it starts get contexts derived from runCtx; it returns them.
func (s *Scheduler) tick(ctx, runCtx context.Context) (started []*activeRun, more bool, err error) {
	s.tickMu.Lock()
	defer s.tickMu.Unlock()
	errs := []error{s.load(ctx)}
	started, err = s.sweep(ctx, runCtx, s.clock.Now())
	errs = append(errs, err)
	// Replicas go through the jobs from different places (a random one per pass), so that at
	// an instant when many fires come due each claims different fires first and finds most of
	// the others claimed (a read) rather than racing for them (a write each, and on SQLite the
	// write lock).
	start := 0
	if n := len(s.jobs); n > 0 {
		start = rand.N(n)
	}
	for i := range s.jobs {
		j := s.jobs[(start+i)%len(s.jobs)]
		if !j.loaded {
			continue
		}
		// Each job on the clock of its turn: a fire that came due while the pass worked is
		// claimed in this pass, not the next.
		a, err := s.fireJob(ctx, runCtx, j, s.clock.Now())
		errs = append(errs, err)
		started = append(started, a...)
	}
	more, err = s.recordBacklogs(ctx)
	errs = append(errs, err)
	return started, more, errors.Join(errs...)
}

// load reads where the trails of the jobs not yet loaded end, in one query: a job resumes after
// its latest fire with a run. A job with no trail starts with its latest fire when that is
// inside the catch-up window, and with its next fire otherwise; nothing older is recorded.
func (s *Scheduler) load(ctx context.Context) error {
	var personas []string
	for _, j := range s.jobs {
		if !j.loaded && !slices.Contains(personas, j.persona.Name) {
			personas = append(personas, j.persona.Name)
		}
	}
	if len(personas) == 0 {
		return nil
	}
	last, err := s.store.LastFires(ctx, personas)
	if err != nil {
		return fmt.Errorf("schedule: read the trails: %w", err)
	}
	for _, j := range s.jobs {
		if j.loaded {
			continue
		}
		j.loaded = true
		if at, ok := last[store.PersonaResponsibility{Persona: j.persona.Name, Responsibility: j.resp.Name}]; ok {
			j.cursor = at
			continue
		}
		now := s.clock.Now()
		latest, ok := j.cron.Prev(now)
		switch {
		case !ok:
		case now.Sub(latest) > s.catchUp:
			j.cursor = latest
		default:
			j.cursor = latest.Add(-time.Nanosecond)
		}
	}
	return nil
}

// sweep deals with the running runs of this scheduler's responsibilities: it notes each as its
// responsibility's previous run, and the ones whose lease expired (their replica died or hung)
// it takes over or abandons. One that is still its responsibility's latest fire, within the
// catch-up window and short of its attempts is taken over (exactly one contender wins) and run
// again; any other is abandoned, so that it no longer blocks its responsibility. One whose lease
// is released (given back by a stopping scheduler, or reopened in the store for any scheduler,
// see runReleased) is taken over and run once its retry time (Run.RetryAt) has come.
func (s *Scheduler) sweep(ctx, runCtx context.Context, now time.Time) ([]*activeRun, error) {
	running, err := s.store.RunningFires(ctx, s.personas)
	if err != nil {
		return nil, fmt.Errorf("schedule: sweep: %w", err)
	}
	var started []*activeRun
	var errs []error
	for _, r := range running {
		j := s.byName[[2]string{r.Persona, r.Responsibility}]
		if j == nil {
			continue
		}
		j.saw(r)
		if r.Lease.Live(now) || s.isActive(r.Key) {
			continue
		}
		if r.Lease.Holder == "" {
			// Released: given back by a stopping scheduler, reopened in the store for any
			// scheduler to run (an operator's retry, store.ReopenRun without a holder), or
			// stopped by a runner outside a scheduler.
			if r.RetryAt.After(now) {
				continue // resumed from its retry time
			}
			if a, err := s.runReleased(ctx, runCtx, j, r, now); err != nil {
				errs = append(errs, err)
			} else if a != nil {
				started = append(started, a)
			}
			continue
		}
		latest, _ := j.cron.Prev(now)
		if r.FireAt.Equal(latest) && now.Sub(latest) <= s.catchUp && r.Attempt < s.maxAttempts {
			taken, err := s.store.TakeOverRun(ctx, r.Key, s.holder, s.lease)
			switch {
			case err == nil:
				s.log.Info("schedule: took over a run whose lease expired", "run", r.Key,
					"from", r.Lease.Holder, "holder", s.holder, "attempt", taken.Attempt)
				j.previous = &taken
				started = append(started, s.launch(runCtx, j, taken, taken.FireAt))
			case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrRunFinished):
				// Another replica took it over first, or its holder finished it after all.
			default:
				errs = append(errs, fmt.Errorf("schedule: take over run %q: %w", r.Key, err))
			}
			continue
		}
		if err := s.abandon(ctx, r); err != nil {
			errs = append(errs, err)
		}
	}
	return started, errors.Join(errs...)
}

// ReasonNotAFire is the reason a run reopened in the store is abandoned with when its fire
// instant is not a fire of its responsibility's schedule (a mistyped instant).
const ReasonNotAFire = "not a fire of the responsibility's schedule"

// runReleased runs the running run r whose lease is released. A run a stopping scheduler gave
// back (reason ReasonStopped) resumes as a takeover does (the retry window counted from its
// fire) when it was given back at most the catch-up window ago, whatever fires came due since,
// and is abandoned (ReasonStopped) otherwise: a fleet that was down longer runs the latest
// fire instead. Any other released run runs as RunAgain runs a fire (the retry window counted
// from now) when r.FireAt is a fire of j's schedule, and is abandoned (ReasonNotAFire)
// otherwise. It returns the run started, or nil when another replica took it first or it was
// abandoned.
func (s *Scheduler) runReleased(ctx, runCtx context.Context, j *job, r store.Run, now time.Time) (*activeRun, error) {
	stopped := r.Reason == ReasonStopped
	abandon := ""
	if p, ok := j.cron.Prev(r.FireAt); !stopped && (!ok || !p.Equal(r.FireAt)) {
		abandon = ReasonNotAFire
	}
	if stopped && now.Sub(r.Lease.Expires) > s.catchUp {
		abandon = ReasonStopped
	}
	if abandon != "" {
		_, err := s.store.AbandonRun(ctx, r.Key, abandon)
		switch {
		case err == nil:
			s.log.Warn("schedule: abandoned a released run", "run", r.Key, "fire", r.FireAt, "released_at", r.Lease.Expires,
				"reason", abandon)
			return nil, nil
		case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrRunFinished):
			return nil, nil
		}
		return nil, fmt.Errorf("schedule: abandon run %q: %w", r.Key, err)
	}
	taken, err := s.store.TakeOverRun(ctx, r.Key, s.holder, s.lease)
	switch {
	case err == nil:
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrRunFinished):
		return nil, nil
	default:
		return nil, fmt.Errorf("schedule: take over run %q: %w", r.Key, err)
	}
	j.previous = &taken
	if stopped {
		s.log.Info("schedule: resumed a fire a stopping scheduler gave back", "persona", r.Persona, "responsibility", r.Responsibility,
			"fire", r.FireAt, "run", r.Key, "holder", s.holder, "attempt", taken.Attempt)
		return s.launch(runCtx, j, taken, taken.FireAt), nil
	}
	s.log.Info("schedule: a fire reopened in the store runs again", "persona", r.Persona, "responsibility", r.Responsibility,
		"fire", r.FireAt, "run", r.Key, "holder", s.holder, "attempt", taken.Attempt)
	return s.launch(runCtx, j, taken, now), nil
}

// abandon records the running run r, whose lease expired, abandoned (ReasonLeaseExpired).
// A holder that renewed in time, or finished the run, wins: that is no error.
func (s *Scheduler) abandon(ctx context.Context, r store.Run) error {
	_, err := s.store.AbandonRun(ctx, r.Key, ReasonLeaseExpired)
	switch {
	case err == nil:
		s.log.Info("schedule: abandoned a run whose lease expired", "run", r.Key, "holder", r.Lease.Holder)
		return nil
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrRunFinished):
		return nil
	}
	return fmt.Errorf("schedule: abandon run %q: %w", r.Key, err)
}

// fireJob settles j's fires that passed since its cursor: the latest is claimed (or put in the
// backlog as missed when it is older than the catch-up window), and the ones before it go to
// the backlog (at most maxMissed, the most recent), which recordBacklogs records after every
// job's due fire was claimed. A latest fire whose claim must wait stays pending.
func (s *Scheduler) fireJob(ctx, runCtx context.Context, j *job, now time.Time) ([]*activeRun, error) {
	latest, ok := j.cron.Prev(now)
	if !ok || !latest.After(j.cursor) {
		return nil, nil
	}
	var skipped []time.Time
	for f := latest; len(skipped) < s.maxMissed; {
		p, ok := j.cron.Prev(f.Add(-time.Nanosecond))
		if !ok || !p.After(j.cursor) {
			break
		}
		skipped = append(skipped, p)
		f = p
	}
	slices.Reverse(skipped)
	if now.Sub(latest) > s.catchUp {
		skipped = append(skipped, latest)
	}
	if n := len(skipped); n > 0 {
		if err := s.judgeSkipped(ctx, j, skipped); err != nil {
			return nil, err
		}
		j.cursor = skipped[n-1]
		j.pending = time.Time{}
	}
	if !latest.After(j.cursor) {
		return nil, nil
	}
	a, settled, err := s.claim(ctx, runCtx, j, latest, now)
	if err != nil {
		return nil, err
	}
	if !settled {
		j.pending = latest
		return nil, nil
	}
	j.cursor, j.pending = latest, time.Time{}
	if a == nil {
		return nil, nil
	}
	return []*activeRun{a}, nil
}

// claim claims j's fire at and starts it when this scheduler wins; settled says whether the
// fire is settled (claimed, found claimed or recorded skipped by anyone). Only a fire whose
// responsibility's previous run was running at its instant is skipped (ReasonOverlap). A run
// is judged on its record: while the previous run is recorded running under a live lease (or
// runs here), the claim waits (settled false) and the fire is looked at again on the next
// pass — the run may have ended with its record still on its way (on SQLite its status write
// can wait seconds for the write lock while claims take it). Once the record shows the run
// ended, its FinishedAt (stamped before the write waited) decides: after the fire's instant is
// an overlap; before it, the fire runs, as late as the record was. A previous run whose lease
// expired is abandoned first, and the fire runs.
func (s *Scheduler) claim(ctx, runCtx context.Context, j *job, at, now time.Time) (*activeRun, bool, error) {
	claim := s.newRun(j, at)
	key := claim.Key
	// A fire another replica settled costs a read, not a write (on SQLite, the write lock).
	if run, err := s.store.Run(ctx, key); err == nil {
		j.saw(run)
		if run.Status == store.RunRunning && run.Lease.Holder == s.holder && !s.isActive(key) {
			return s.launch(runCtx, j, run, run.FireAt), true, nil
		}
		return nil, true, nil
	} else if !errors.Is(err, store.ErrRunNotFound) {
		return nil, false, fmt.Errorf("schedule: claim %q: %w", key, err)
	}
	fresh := false // whether j.previous was read in this claim
	for range 3 {
		wait, err := s.resolvePrevious(ctx, j, key, now, fresh)
		if err != nil {
			return nil, false, fmt.Errorf("schedule: claim %q: %w", key, err)
		}
		if wait {
			return nil, false, nil
		}
		if p := j.previous; p != nil && p.Key != key && p.FireAt.Before(at) && covers(*p, at) {
			return nil, true, s.skip(ctx, j, at, ReasonOverlap)
		}
		run, outcome, err := s.store.StartRun(ctx, claim)
		var busy *store.BusyError
		switch {
		case err == nil && outcome == store.Stored:
			j.saw(run)
			return s.launch(runCtx, j, run, run.FireAt), true, nil
		case err == nil:
			j.saw(run)
			if run.Status == store.RunRunning && run.Lease.Holder == s.holder && !s.isActive(key) {
				return s.launch(runCtx, j, run, run.FireAt), true, nil
			}
			return nil, true, nil
		case errors.As(err, &busy):
			r := busy.Running
			j.previous, fresh = &r, true
		default:
			return nil, false, fmt.Errorf("schedule: claim %q: %w", key, err)
		}
	}
	// The previous run kept changing under us: look again on the next pass.
	return nil, false, nil
}

// resolvePrevious brings j.previous, the responsibility's previous run as last seen, up to
// date when it was running (fresh: it was read in this claim already), abandons it when its
// lease expired, and reports whether the claim of key must wait: the previous run is recorded
// running under a live lease, runs on this scheduler, or is released and waits for its retry
// time (the sweep resumes it then).
func (s *Scheduler) resolvePrevious(ctx context.Context, j *job, key string, now time.Time, fresh bool) (wait bool, err error) {
	for range 3 {
		p := j.previous
		if p == nil || p.Key == key || p.Status != store.RunRunning {
			return false, nil
		}
		if !fresh {
			r, err := s.store.Run(ctx, p.Key)
			switch {
			case errors.Is(err, store.ErrRunNotFound):
				j.previous = nil
			case err != nil:
				return false, fmt.Errorf("read the previous run: %w", err)
			default:
				j.previous = &r
			}
			fresh = true
			continue
		}
		if s.isActive(p.Key) || p.Lease.Live(now) || (p.Lease.Holder == "" && p.RetryAt.After(now)) {
			return true, nil
		}
		if err := s.abandon(ctx, *p); err != nil {
			return false, err
		}
		fresh = false
	}
	return true, nil
}

// judgeSkipped puts the fires of j that were not claimed in time into j's backlog with their
// reasons: ReasonOverlap for a fire the responsibility's previous run was running at (as its
// record shows now: it is read again when it was last seen running), ReasonMissed for the
// others.
func (s *Scheduler) judgeSkipped(ctx context.Context, j *job, fires []time.Time) error {
	if p := j.previous; p != nil && p.Status == store.RunRunning {
		r, err := s.store.Run(ctx, p.Key)
		switch {
		case errors.Is(err, store.ErrRunNotFound):
			j.previous = nil
		case err != nil:
			return fmt.Errorf("schedule: %s/%s: read the previous run: %w", j.persona.Name, j.resp.Name, err)
		default:
			j.previous = &r
		}
	}
	for _, f := range fires {
		reason := ReasonMissed
		if p := j.previous; p != nil && p.FireAt.Before(f) && covers(*p, f) {
			reason = ReasonOverlap
		}
		j.backlog = append(j.backlog, skippedFire{at: f, reason: reason})
	}
	return nil
}

// skippedFire is a fire in a job's backlog.
type skippedFire struct {
	at     time.Time
	reason string
}

// covers reports whether run r, a run of a responsibility, was running at the instant f, as
// its record shows: it started at or before f and ended after f, or is running under a lease
// that had not expired at f, or is waiting for approval. A run abandoned because its lease
// expired covers nothing: its holder was gone, and only its record stood in the way; one
// abandoned after a stopping scheduler gave it back covers the time until it was given back
// (its lease's end), not the time it waited to be resumed.
func covers(r store.Run, f time.Time) bool {
	if r.Status == store.RunSkipped || r.StartedAt.After(f) {
		return false
	}
	switch {
	case r.Status == store.RunRunning:
		return f.Before(r.Lease.Expires)
	case r.Status == store.RunWaiting:
		return true // waiting for approval: it holds its responsibility, lease or not
	case r.Status == store.RunAbandoned && r.Reason == ReasonLeaseExpired:
		return false
	case r.Status == store.RunAbandoned && r.Reason == ReasonStopped && r.Lease.Expires.Before(r.FinishedAt):
		return f.Before(r.Lease.Expires)
	}
	return f.Before(r.FinishedAt)
}

// saw notes r, a run of j's responsibility, as its previous run: a running run always (there is
// one at most), the noted run's newer record, or a run that ran and is newer than a noted run
// that is not running.
func (j *job) saw(r store.Run) {
	p := j.previous
	switch {
	case r.Status == store.RunSkipped:
	case r.Status == store.RunRunning, p == nil, p.Key == r.Key:
		j.previous = &r
	case p.Status != store.RunRunning && !r.FireAt.Before(p.FireAt):
		j.previous = &r
	}
}

// settledThrough returns the fire after which j's next fire is due: the pending one, or the
// cursor.
func (j *job) settledThrough() time.Time {
	if !j.pending.IsZero() {
		return j.pending
	}
	return j.cursor
}

// fireDue reports whether some job has a fire due at now that this pass has not settled.
func (s *Scheduler) fireDue(now time.Time) bool {
	for _, j := range s.jobs {
		if next, ok := j.cron.Next(j.settledThrough()); j.loaded && ok && !next.After(now) {
			return true
		}
	}
	return false
}

// recordBacklogs records the jobs' backlogs of skipped fires, one statement per job: missed,
// or overlap for a fire its responsibility's previous run was running at. It stops before a job
// once a fire came due that no pass claimed yet (returning more), so that the backlog never
// makes an on-time fire late; the next pass claims it first. At least one job's backlog is
// recorded per pass.
func (s *Scheduler) recordBacklogs(ctx context.Context) (more bool, err error) {
	wrote := false
	for _, j := range s.jobs {
		if len(j.backlog) == 0 {
			continue
		}
		if wrote && s.fireDue(s.clock.Now()) {
			return true, nil
		}
		runs := make([]store.NewRun, len(j.backlog))
		var missed, overlapped []time.Time
		for i, f := range j.backlog {
			if f.reason == ReasonOverlap {
				overlapped = append(overlapped, f.at)
			} else {
				missed = append(missed, f.at)
			}
			runs[i] = store.NewRun{Key: RunKey(j.persona.Name, j.resp.Name, f.at), Kind: store.RunScheduled,
				Persona: j.persona.Name, Responsibility: j.resp.Name, FireAt: f.at, Status: store.RunSkipped, Reason: f.reason}
		}
		n, err := s.store.SkipFires(ctx, runs)
		if err != nil {
			return true, fmt.Errorf("schedule: %s/%s: record %d fires skipped: %w", j.persona.Name, j.resp.Name, len(runs), err)
		}
		wrote = true
		j.backlog = nil
		if n == 0 {
			continue // another replica recorded them
		}
		if len(missed) > 0 {
			s.log.Warn("schedule: fires missed", "persona", j.persona.Name, "responsibility", j.resp.Name,
				"count", len(missed), "first", missed[0], "last", missed[len(missed)-1])
		}
		if len(overlapped) > 0 {
			s.log.Info("schedule: fires skipped: the previous run was still running", "persona", j.persona.Name,
				"responsibility", j.resp.Name, "count", len(overlapped), "first", overlapped[0], "last", overlapped[len(overlapped)-1])
		}
	}
	return false, nil
}

// newRun is the claim of j's fire at: a running run under this scheduler's lease.
func (s *Scheduler) newRun(j *job, at time.Time) store.NewRun {
	return store.NewRun{
		Key: RunKey(j.persona.Name, j.resp.Name, at), Kind: store.RunScheduled, Persona: j.persona.Name,
		Responsibility: j.resp.Name, FireAt: at, Holder: s.holder, LeaseFor: s.lease,
	}
}

// skip records j's fire at skipped with reason, in one INSERT; a fire already recorded (by any
// replica, with any outcome) is left as it is.
func (s *Scheduler) skip(ctx context.Context, j *job, at time.Time, reason string) error {
	key := RunKey(j.persona.Name, j.resp.Name, at)
	_, _, err := s.store.StartRun(ctx, store.NewRun{
		Key: key, Kind: store.RunScheduled, Persona: j.persona.Name, Responsibility: j.resp.Name,
		FireAt: at, Status: store.RunSkipped, Reason: reason,
	})
	if err != nil {
		return fmt.Errorf("schedule: record %q skipped (%s): %w", key, reason, err)
	}
	if reason == ReasonOverlap {
		s.log.Info("schedule: fire skipped: the previous run was still running", "persona", j.persona.Name,
			"responsibility", j.resp.Name, "fire", at)
	}
	return nil
}

func (s *Scheduler) isActive(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active[key] != nil
}
