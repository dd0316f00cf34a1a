package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

// retryable returns nil when Retry applies to r as it stands, else the reason it does not
// (wrapping ErrRefused): a run that failed or was abandoned is retried, and so is a fire that
// was skipped; a reply run that was skipped answered a message not to be answered, a running
// run is being worked on (or waits to be resumed), a waiting run waits for decisions on its
// calls, and a run that succeeded is done.
func retryable(r store.Run) error {
	switch {
	case r.Status == store.RunFailed, r.Status == store.RunAbandoned:
		return nil
	case r.Status == store.RunSkipped && r.Kind == store.RunScheduled:
		return nil
	case r.Status == store.RunSkipped:
		return fmt.Errorf("%w: run %q was skipped (%s): its message is not to be answered", ErrRefused, r.Key, r.Reason)
	case r.Status == store.RunRunning:
		return fmt.Errorf("%w: run %q is running (a worker works on it, or resumes it once its lease ends)", ErrRefused, r.Key)
	case r.Status == store.RunWaiting:
		return fmt.Errorf("%w: run %q waits for approval: decide its calls (the approvals page, personagen approve or deny); a service resumes it then", ErrRefused, r.Key)
	}
	return fmt.Errorf("%w: run %q succeeded; a succeeded run is not run again", ErrRefused, r.Key)
}

// Retry runs the run key again, through the store alone: the run is reopened with its lease
// released (store.ReopenRun without a holder, recorded as a run event with a's By and Reason),
// and a reply run's message is made pending again (store.RequeueReply), so that a running
// service claims the thread and resumes the run — its recorded rounds are replayed, not run
// again — or, for a scheduled run, a running service's scheduler takes it over on its next pass.
// Nothing runs in this call: the work happens in the service.
//
// Done when the run was reopened; Already when it was reopened before and waits to be resumed
// (the message is made pending again all the same, which a repeated request needs when the
// first one stopped between the two writes). Errors: ErrNotFound (wrapped); ErrRefused
// (wrapped) for a run that succeeded, is running under a worker's lease, waits for approval
// (decide its calls instead), is a skipped reply run (its message is not to be answered), or
// whose thread or responsibility has another run running (a *store.BusyError follows in the
// chain); the store's (wrapped).
func Retry(ctx context.Context, st *store.Store, key string, a Actor) (Outcome, error) {
	run, err := st.Run(ctx, key)
	if err != nil {
		return "", notFound(err)
	}
	if run.Status == store.RunRunning && run.Lease.Holder == "" {
		// Reopened before (or stopped): it waits to be resumed.
		return Already, requeue(ctx, st, run)
	}
	if err := retryable(run); err != nil {
		return "", err
	}
	_, out, err := st.ReopenRun(ctx, key, store.Reopen{By: a.By, Reason: a.Reason})
	var busy *store.BusyError
	switch {
	case errors.As(err, &busy):
		return "", fmt.Errorf("%w: run %q cannot run while run %q of its %s runs; retry when it ends: %w", ErrRefused, key, busy.Running.Key,
			map[store.RunKind]string{store.RunReply: "thread", store.RunScheduled: "responsibility"}[run.Kind], err)
	case errors.Is(err, store.ErrRunRunning), errors.Is(err, store.ErrRunFinished):
		return "", fmt.Errorf("%w: %w", ErrRefused, err)
	case err != nil:
		return "", notFound(err)
	}
	if err := requeue(ctx, st, run); err != nil {
		return "", err
	}
	if out == store.AlreadyStored {
		return Already, nil
	}
	return Done, nil
}

// requeue makes a reply run's message pending again (nothing for a scheduled run).
func requeue(ctx context.Context, st *store.Store, run store.Run) error {
	if run.Kind != store.RunReply {
		return nil
	}
	m, err := st.MessageBySeq(ctx, run.MessageSeq)
	if err != nil {
		return notFound(err)
	}
	return st.RequeueReply(ctx, m.Mailbox, run.ThreadID, run.MessageSeq)
}

// Abandon gives the run key up (store.AbandonRunAs, recorded as a run event with a's By and
// Reason): it never runs again, and no longer holds its thread or responsibility. Only a run
// nobody works on can be abandoned: one that stopped and waits to be resumed, or whose worker
// died (its lease expired). Done, or Already when it is abandoned. Errors: ErrNotFound
// (wrapped); ErrRefused (wrapped) for a run under a worker's live lease (let it end, or abandon
// it once its lease expired) or a finished one; the store's (wrapped).
func Abandon(ctx context.Context, st *store.Store, key string, a Actor) (Outcome, error) {
	out, err := st.AbandonRunAs(ctx, key, a.By, a.Reason)
	switch {
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrRunFinished):
		return "", fmt.Errorf("%w: %w", ErrRefused, err)
	case err != nil:
		return "", notFound(err)
	case out == store.AlreadyStored:
		return Already, nil
	}
	return Done, nil
}

// RunFire marks the fire at of persona's responsibility to run again, through the store alone:
// its run (schedule.RunKey) is reopened with its lease released, as Retry does, and the next
// pass of a running service's scheduler that has the responsibility takes it over and runs it
// (an instant that is not a fire of its schedule is abandoned there). A fire that has no run
// yet is first recorded skipped as missed (schedule.ReasonMissed), as the scheduler records
// one. It returns the run's key and Done, or Already when the fire waits to be run.
//
// Errors: ErrNotFound (wrapped) when the store has no run of that persona and responsibility at
// all (a mistyped name); ErrRefused (wrapped) for a fire in the future, a fire whose run
// succeeded or is running, or while another fire of the responsibility runs; the store's
// (wrapped).
func RunFire(ctx context.Context, st *store.Store, persona, responsibility string, at time.Time, a Actor) (string, Outcome, error) {
	at = at.UTC()
	key := schedule.RunKey(persona, responsibility, at)
	if now := st.Now(); at.After(now) {
		return key, "", fmt.Errorf("%w: the fire %s is not due yet (the store's clock reads %s)", ErrRefused,
			at.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
	}
	_, err := st.Run(ctx, key)
	if errors.Is(err, store.ErrRunNotFound) {
		known, kerr := st.Runs(ctx, store.RunQuery{Persona: persona, Responsibility: responsibility, Kind: store.RunScheduled, Limit: 1})
		if kerr != nil {
			return key, "", kerr
		}
		if len(known) == 0 {
			return key, "", fmt.Errorf("%w: persona %q has no run of a responsibility %q in the store (`personagen fires` lists those that have); check the names",
				ErrNotFound, persona, responsibility)
		}
		if _, _, err := st.StartRun(ctx, store.NewRun{Key: key, Kind: store.RunScheduled, Persona: persona, Responsibility: responsibility,
			FireAt: at, Status: store.RunSkipped, Reason: schedule.ReasonMissed}); err != nil {
			return key, "", fmt.Errorf("%w: %w", ErrRefused, err)
		}
	} else if err != nil {
		return key, "", err
	}
	out, err := Retry(ctx, st, key, a)
	return key, out, err
}

func (c *Console) postRetry(w http.ResponseWriter, r *http.Request) {
	key := r.PostFormValue("key")
	a := actor(r)
	out, err := Retry(r.Context(), c.st, key, a)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.done(w, r, a, "/run", url.Values{"key": {key}}, "retried", out)
}

func (c *Console) postAbandon(w http.ResponseWriter, r *http.Request) {
	key := r.PostFormValue("key")
	a := actor(r)
	out, err := Abandon(r.Context(), c.st, key, a)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.done(w, r, a, "/run", url.Values{"key": {key}}, "abandoned", out)
}

func (c *Console) postFireRun(w http.ResponseWriter, r *http.Request) {
	at, err := time.Parse(time.RFC3339Nano, r.PostFormValue("at"))
	if err != nil {
		c.fail(w, r, fmt.Errorf("%w: fire instant %q is not an RFC 3339 time (2026-03-06T08:00:00Z)", errBadRequest, r.PostFormValue("at")))
		return
	}
	a := actor(r)
	key, out, err := RunFire(r.Context(), c.st, r.PostFormValue("persona"), r.PostFormValue("responsibility"), at, a)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	c.done(w, r, a, "/run", url.Values{"key": {key}}, "fired", out)
}
