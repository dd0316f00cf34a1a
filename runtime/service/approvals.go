package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/store"
)

// noticeLease is how long a claimed approval notice is the claimer's: a replica that died
// while its hook ran leaves the notice to another one after it.
const noticeLease = 5 * time.Minute

// noticeBatch bounds the notices one pass of the approval loop sends.
const noticeBatch = 20

// approvalLoop is the service's approval work, every poll interval while ctx lives, on any
// replica:
//
//   - resuming: a waiting run none of whose calls waits any more (each decided, or a deadline
//     passed: approval timeouts are service work, like fires) is resumed — a reply run by
//     making its thread's reply work available, so the reply loop of some replica claims the
//     thread and the runner resumes the run; a scheduled run by the runner's Fire, here, on
//     work (the scheduler claims only new fires). A decision makes a reply run's work available
//     itself (store.Decide); this pass also catches one that came while a worker held the
//     thread's claim, and every deadline;
//   - notices: with Config.NotifyApproval, each call that started waiting is handed to the hook
//     once it succeeded (store.ClaimApprovalNotice; a failed or cut-off notice is tried again).
func (s *Service) approvalLoop(ctx, work context.Context, flights *sync.WaitGroup) {
	t := time.NewTicker(s.poll)
	defer t.Stop()
	for {
		s.resumeDecided(ctx, work, flights)
		if s.notify != nil {
			s.sendNotices(ctx)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// resumeDecided resumes the waiting runs of the service's personas that can resume now.
func (s *Service) resumeDecided(ctx, work context.Context, flights *sync.WaitGroup) {
	due, err := s.st.DueWaits(ctx, s.names)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("reading the waiting runs failed; trying again", "error", store.RedactDSN(err.Error()))
		}
		return
	}
	for _, r := range due {
		p := s.personas[r.Persona]
		log := s.log.With("persona", r.Persona, "run", r.Key, "correlation_id", r.Key)
		switch {
		case r.Kind == store.RunReply:
			if err := s.st.WakeRun(ctx, r); err != nil {
				log.Warn("making a decided run's thread available failed; trying again", "thread", r.ThreadID, "error", err)
				continue
			}
			log.Debug("a waiting run's calls are decided; its thread's work is available", "thread", r.ThreadID)
			wake(s.wakeRun)
		case p == nil || p.ResponsibilityChain == nil || !s.startResume(r.Key):
		default:
			flights.Add(1)
			go func() {
				defer flights.Done()
				defer s.endResume(r.Key)
				res, err := s.runner.Fire(work, agent.Fire{Persona: p, Responsibility: r.Responsibility, At: r.FireAt, Key: r.Key})
				var re *agent.RunError
				switch {
				case err == nil:
					s.metrics.run(work, p.Name, store.RunScheduled, string(res.Run.Status), "")
					log.Info("scheduled run resumed after its calls were decided, and finished", "status", res.Run.Status)
				case errors.Is(err, store.ErrWaiting):
					s.metrics.run(work, p.Name, store.RunScheduled, string(store.RunWaiting), "")
					log.Info("scheduled run resumed and waits for approval again", "error", err)
				case errors.Is(err, store.ErrLeaseHeld):
					// Another replica resumed it first.
				case errors.As(err, &re):
					s.metrics.run(work, p.Name, store.RunScheduled, "stopped", string(re.Class))
					log.Warn("scheduled run resumed after its calls were decided, and stopped", "final", re.Final, "error", err)
				default:
					log.Warn("resuming a decided scheduled run failed", "error", err)
				}
			}()
		}
	}
}

// startResume marks the scheduled run key as being resumed by this process; false when it
// already is.
func (s *Service) startResume(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || s.resuming[key] {
		return false
	}
	if s.resuming == nil {
		s.resuming = map[string]bool{}
	}
	s.resuming[key] = true
	return true
}

func (s *Service) endResume(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.resuming, key)
}

// sendNotices hands the due notices of waiting calls to Config.NotifyApproval: a notice the hook
// took (nil error) is done; one it refused, or that panicked, is due again after RetryPolicy.Max.
func (s *Service) sendNotices(ctx context.Context) {
	for range noticeBatch {
		a, ok, err := s.st.ClaimApprovalNotice(ctx, s.names, noticeLease)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("claiming an approval notice failed; trying again", "error", store.RedactDSN(err.Error()))
		}
		if err != nil || !ok {
			return
		}
		log := s.log.With("persona", a.Persona, "run", a.RunKey, "correlation_id", a.RunKey, "call_id", a.CallID, "tool", a.ToolName)
		retry := time.Time{}
		if herr := s.callNotify(ctx, a); herr != nil {
			retry = time.Now().Add(s.retry.Max)
			log.Warn("the approval notification hook failed; it is called again later", "retry_at", retry, "error", herr)
		} else {
			log.Info("approval notice sent", "expires_at", a.ExpiresAt)
		}
		if err := s.st.SettleApprovalNotice(context.WithoutCancel(ctx), a.ID, retry); err != nil {
			log.Warn("recording the approval notice failed; it may be sent again", "error", err)
		}
	}
}

// callNotify runs the hook, turning a panic into an error.
func (s *Service) callNotify(ctx context.Context, a store.Approval) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the hook panicked: %v", p)
		}
	}()
	return s.notify(ctx, a)
}
