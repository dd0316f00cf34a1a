package service

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/agent"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/store"
)

// claimMargin is how long a claim of a thread's reply work lasts beyond the run's own lease:
// a worker that died gives the thread back when both ended, and a run that outlasts it is
// protected by its run lease (a second claimer finds it held and waits for that lease).
const claimMargin = 5 * time.Second

// claimLoop claims work of one kind while ctx lives and does each claim on work in a goroutine
// of its own, at most slots at once: claim returns the next claim (ok false when there is none,
// or when it has nothing it may claim now), do carries it out. Between fruitless claims it idles
// until wake, the poll interval, or ctx's end. A claim runs on work, not ctx: one cut off by the
// stop could have been made in the database all the same, and nobody would give it back before
// its lease ended; a claim made as ctx ended is handed to giveBack instead of do.
func claimLoop[W any](s *Service, ctx, work context.Context, flights *sync.WaitGroup, kind string, slots int, wake <-chan struct{},
	claim func(ctx context.Context) (w W, ok bool, err error), do, giveBack func(ctx context.Context, w W)) {
	sem := make(chan struct{}, slots)
	for {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		t0 := time.Now()
		w, ok, err := claim(work)
		s.metrics.claimed(ctx, kind, time.Since(t0), err)
		if err != nil || !ok {
			<-sem
			if err != nil && ctx.Err() == nil {
				s.log.Warn("claiming work failed; trying again", "kind", kind, "error", store.RedactDSN(err.Error()))
			}
			s.idle(ctx, wake)
			continue
		}
		if ctx.Err() != nil {
			// Claimed as the stop began: give it back for another replica to take at once.
			<-sem
			giveBack(work, w)
			return
		}
		flights.Add(1)
		go func() {
			defer flights.Done()
			defer func() { <-sem }()
			do(work, w)
		}()
	}
}

// replyLoop claims reply work while ctx lives and answers each claim on work, at most Workers
// at once and PersonaWorkers per persona.
func (s *Service) replyLoop(ctx, work context.Context, flights *sync.WaitGroup) {
	claimLoop(s, ctx, work, flights, "reply", s.workers, s.wakeRun,
		func(ctx context.Context) (store.ClaimedReply, bool, error) {
			boxes := s.claimable()
			if len(boxes) == 0 {
				return store.ClaimedReply{}, false, nil
			}
			w, ok, err := s.st.ClaimReply(ctx, store.ReplyClaim{Mailboxes: boxes, EachMessage: s.each, Holder: s.holder,
				LeaseFor: s.runLease() + claimMargin})
			if ok {
				s.enter(w.Mailbox)
			}
			return w, ok, err
		},
		func(ctx context.Context, w store.ClaimedReply) {
			defer s.leave(w.Mailbox)
			s.answer(ctx, w)
		},
		func(ctx context.Context, w store.ClaimedReply) {
			defer s.leave(w.Mailbox)
			s.giveBack(ctx, w)
		})
}

// giveBack releases the claim w made as the service began to stop, to be claimed again at once.
func (s *Service) giveBack(ctx context.Context, w store.ClaimedReply) {
	log := s.log.With("persona", w.Mailbox, "seq", w.Seq)
	m, err := s.st.MessageBySeq(ctx, w.Seq)
	if err == nil {
		_, err = s.st.ReleaseReply(ctx, w.Mailbox, m.ThreadID, s.holder, time.Time{}, "", false)
	}
	if err != nil {
		log.Warn("giving back the work claimed as the service stopped failed; its claim runs out instead", "error", err)
		return
	}
	log.Info("work claimed as the service stopped; given back", "thread", m.ThreadID)
}

// idle waits for a wake-up, the poll interval, or ctx's end.
func (s *Service) idle(ctx context.Context, wake <-chan struct{}) {
	t := time.NewTimer(s.poll)
	defer t.Stop()
	select {
	case <-wake:
	case <-t.C:
	case <-ctx.Done():
	}
}

// claimable returns the personas with a free run slot of their own.
func (s *Service) claimable() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping {
		return nil
	}
	out := make([]string, 0, len(s.names))
	for _, n := range s.names {
		if s.inFlight[n] < s.perP && s.personas[n].MessageChain != nil {
			out = append(out, n)
		}
	}
	return out
}

func (s *Service) enter(persona string) {
	s.mu.Lock()
	s.inFlight[persona]++
	s.mu.Unlock()
}

func (s *Service) leave(persona string) {
	s.mu.Lock()
	s.inFlight[persona]--
	s.mu.Unlock()
	wake(s.wakeRun)
}

func (s *Service) runLease() time.Duration {
	if s.runner.LeaseFor > 0 {
		return s.runner.LeaseFor
	}
	return agent.DefaultLeaseFor
}

// answer carries out one claim: the reply run of w.Seq, then what its outcome says for the
// thread's work — done (the messages up to w.Seq are answered), given back for a retry, or
// given back at once on a shutdown.
func (s *Service) answer(ctx context.Context, w store.ClaimedReply) {
	p := s.personas[w.Mailbox]
	res, err := s.reply(ctx, p, w.Seq)
	var busy *store.BusyError
	if errors.As(err, &busy) && (busy.Resumable || busy.Running.Status == store.RunWaiting) && busy.Running.Kind == store.RunReply &&
		busy.Running.Persona == p.Name && busy.Running.MessageSeq != w.Seq {
		// The thread is owned by an earlier message's run that nobody works on (its worker died
		// or stopped, or it waits for approval): finish that one first, then this one. A run that
		// still waits leaves the thread's work waiting with it (settle, store.ErrWaiting).
		s.log.Info("resuming the thread's unfinished run first", "persona", p.Name, "thread", busy.Running.ThreadID,
			"run", busy.Running.Key, "status", busy.Running.Status, "seq", w.Seq)
		first, ferr := s.reply(ctx, p, busy.Running.MessageSeq)
		var fre *agent.RunError
		switch {
		case ferr == nil || errors.Is(ferr, store.ErrRunFinished) || errors.As(ferr, &fre) && fre.Final:
			// The earlier run ended (answered, or failed for good): the thread is free.
			res, err = s.reply(ctx, p, w.Seq)
		default:
			// The earlier run stopped again, or still waits for approval: its outcome says when
			// the thread is tried next (a stop's attempts count against the retry policy), and
			// the later messages stay pending behind it.
			res, err = first, ferr
		}
	}
	thread := ""
	if res != nil {
		thread = res.Run.ThreadID
	}
	if thread == "" {
		m, lerr := s.st.MessageBySeq(context.WithoutCancel(ctx), w.Seq)
		if lerr != nil {
			s.log.Warn("reading the claimed message failed; its claim runs out instead", "persona", p.Name, "seq", w.Seq, "error", lerr)
			return
		}
		thread = m.ThreadID
	}
	log := s.log.With("persona", p.Name, "thread", thread, "seq", w.Seq)
	if res != nil {
		log = log.With("run", res.Run.Key, "correlation_id", res.Run.Key)
	}
	s.settle(ctx, log, p, w, thread, res, err)
}

// reply runs the runner on the stored message seq.
func (s *Service) reply(ctx context.Context, p *runtime.Persona, seq int64) (*agent.Result, error) {
	return s.runner.Reply(ctx, agent.Inbound{Persona: p, Message: store.Message{Message: history.Message{Seq: seq}}})
}

// settle records what a reply attempt's outcome means for the thread's work. res and err are
// the outcome of the run answering w.Seq, or of an earlier message's run of the thread that the
// claim resumed first and that stopped again: a run that ended answers the messages up to its
// own, so a later message of the claim stays pending.
func (s *Service) settle(ctx context.Context, log *slog.Logger, p *runtime.Persona, w store.ClaimedReply, thread string, res *agent.Result, err error) {
	bg := context.WithoutCancel(ctx) // the bookkeeping of a stopping run still reaches the store
	answered := w.Seq
	if res != nil && res.Run.MessageSeq != 0 {
		answered = res.Run.MessageSeq
	}
	complete := func(msg string, args ...any) {
		if _, cerr := s.st.CompleteReply(bg, p.Name, thread, answered, s.holder); cerr != nil {
			log.Warn("recording the answered work failed; its claim runs out and the next claim finds the run finished", "error", cerr)
			return
		}
		log.Info(msg, args...)
	}
	release := func(at time.Time, cause string, failed bool, msg string, args ...any) {
		if _, rerr := s.st.ReleaseReply(bg, p.Name, thread, s.holder, at, cause, failed); rerr != nil {
			log.Warn("giving the work back failed; its claim runs out instead", "error", rerr)
			return
		}
		log.Info(msg, append(args, "retry_at", at)...)
	}
	var busy *store.BusyError
	var re *agent.RunError
	switch {
	case err == nil:
		s.metrics.run(ctx, p.Name, store.RunReply, string(res.Run.Status), string(res.Run.FailureClass))
		complete("reply run finished", "status", res.Run.Status, "already_finished", res.AlreadyFinished,
			"input_tokens", res.Usage.InputTokens, "output_tokens", res.Usage.OutputTokens)
		wake(s.wakeSend)
	case errors.As(err, &re) && re.Final:
		s.metrics.run(ctx, p.Name, store.RunReply, string(store.RunFailed), string(re.Class))
		complete("reply run failed", "failure_class", re.Class, "error", err)
	case errors.Is(err, store.ErrRunFinished):
		complete("reply run had ended before", "error", err)
	case errors.Is(err, store.ErrWaiting):
		// Not stuck and not a failure: the run waits for approval and holds nothing, and its
		// thread's work waits with it — given back, not retried, until the earliest deadline of
		// the run's calls. A decision makes the work available at once (store.Decide), and the
		// approval loop catches a decision that came while this claim was held (approvals.go).
		s.metrics.run(ctx, p.Name, store.RunReply, string(store.RunWaiting), "")
		until := time.Now().Add(s.poll)
		if res != nil && !res.WaitUntil.IsZero() {
			until = maxTime(res.WaitUntil, until)
		}
		release(until, "", false, "reply run waits for approval; its thread waits with it", "error", err)
	case ctx.Err() != nil:
		release(time.Time{}, "", false, "reply run stopped by the shutdown; given back")
	case errors.As(err, &busy):
		at := busy.Running.Lease.Expires
		if busy.Running.RetryAt.After(at) {
			at = busy.Running.RetryAt
		}
		release(maxTime(at, time.Now().Add(s.poll)), "", false, "thread busy with another run; waiting for it", "blocking_run", busy.Running.Key)
	case errors.Is(err, store.ErrLeaseHeld):
		release(time.Now().Add(s.runLease()), "", false, "run held by another worker; waiting for its lease")
	case errors.Is(err, store.ErrRetryLater) && re != nil:
		release(maxTime(re.RetryAt, time.Now().Add(s.poll)), "", false, "run waits for its retry time")
	case errors.Is(err, agent.ErrInvalidJob):
		log.Error("message cannot be answered by this persona; dropping its work", "error", err)
		complete("reply work dropped")
	default:
		// A transient stop (the run stays resumable, its class and retry time recorded), or a
		// store error before the run started.
		attempt, retryAt, class := 0, time.Time{}, ""
		if res != nil {
			attempt = res.Run.Attempt
		}
		if re != nil {
			retryAt, class = re.RetryAt, string(re.Class)
		}
		s.metrics.run(ctx, p.Name, store.RunReply, "stopped", class)
		if attempt >= s.retry.Attempts {
			reason := "retries exhausted after " + strconv.Itoa(attempt) + " attempts: " + err.Error()
			if _, aerr := s.st.AbandonRun(bg, res.Run.Key, reason); aerr != nil && !errors.Is(aerr, store.ErrRunFinished) {
				log.Warn("giving the run up failed; retrying it instead", "error", aerr)
				release(time.Now().Add(s.retry.Max), err.Error(), true, "reply run stopped; will retry")
				return
			}
			s.metrics.run(ctx, p.Name, store.RunReply, string(store.RunAbandoned), "retries_exhausted")
			log.Error("reply run given up: retries exhausted", "attempts", attempt, "error", err)
			complete("reply work ended without an answer")
			return
		}
		delay := s.retry.delay(max(attempt, 1), time.Now(), retryAt)
		release(time.Now().Add(delay), err.Error(), true, "reply run stopped; will retry", "error", err, "attempt", attempt, "failure_class", class)
	}
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
