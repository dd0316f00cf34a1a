package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/mail"
	"github.com/personagen/personagen/runtime/store"
)

// attempt is one call of Reply or Fire working on one run.
type attempt struct {
	r      *Runner
	st     *store.Store
	p      *runtime.Persona
	key    string
	cid    string
	config map[string]string
	holder string
	log    *slog.Logger
	tracer trace.Tracer
	tools  map[string]runtime.Tool
	defs   []chat.ToolDefinition // what the model reads about tools

	inbound        *store.Message          // a reply run's message
	responsibility *runtime.Responsibility // a scheduled run's responsibility
	fireAt         time.Time
	claimed        *store.Run // a scheduled run the caller started and finishes

	run     store.Run
	owner   store.Owner
	resumed bool
	view    *history.View
	inv     *runtime.Invocation

	base     []chat.Message // the chain's messages and the inbound turn
	rounds   []chat.Message // the run's tool rounds so far, as the model reads them
	turns    []store.Turn   // the run's recorded model calls
	extra    chat.Usage     // usage of the compaction summaries this attempt asked for
	answer   *chat.Message  // the final assistant message
	text     string
	reply    *store.Message
	finish   store.Finish
	replayed int
	inDoubt  int
}

func (r *Runner) newAttempt(p *runtime.Persona, key, cid string, config map[string]string) *attempt {
	if cid == "" {
		cid = key
	}
	a := &attempt{r: r, st: r.Store, p: p, key: key, cid: cid, config: config, holder: r.holderName(),
		tracer: r.tracer()}
	a.log = r.logger().With("persona", p.Name, "run", key, "correlation_id", cid)
	return a
}

// runReply is Reply's run.
func (a *attempt) runReply(ctx context.Context) (res *Result, err error) {
	m := a.inbound
	ctx, end := a.runSpan(ctx)
	defer func() { end(res, err) }()
	if err := a.indexTools(); err != nil {
		return nil, err
	}
	if m.NotToAnswer != "" {
		reason := "not to answer: " + m.NotToAnswer
		run, out, err := a.st.StartRun(ctx, store.NewRun{Key: a.key, Kind: store.RunReply, Persona: a.p.Name,
			ThreadID: m.ThreadID, MessageSeq: m.Seq, Status: store.RunSkipped, Reason: reason})
		if err != nil {
			return nil, fmt.Errorf("agent: reply to %q: %w", m.MessageID, err)
		}
		a.log.Info("message not answered", "reason", reason)
		return &Result{Run: run, AlreadyFinished: out == store.AlreadyStored,
			Finish: store.Finish{Status: run.Status, Reason: run.Reason}}, nil
	}
	view, err := a.st.View(ctx, m.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("agent: reply to %q: %w", m.MessageID, err)
	}
	nr := store.NewRun{Key: a.key, Kind: store.RunReply, Persona: a.p.Name, ThreadID: m.ThreadID, MessageSeq: m.Seq,
		ViewSeq: max(view.UpToSeq, m.Seq), Holder: a.holder, LeaseFor: a.r.leaseFor()}
	if view.Compaction != nil {
		nr.CompactionSeq = view.Compaction.BoundarySeq
	}
	run, out, err := a.st.StartRun(ctx, nr)
	if err != nil {
		return nil, fmt.Errorf("agent: reply to %q: %w", m.MessageID, err)
	}
	done, err := a.claim(ctx, run, out)
	if err != nil {
		return nil, err
	}
	a.owner = store.Owner{Type: store.OwnerMessage, ID: m.Seq}
	if a.view, err = a.storedView(ctx, view); err != nil {
		return a.result(), err
	}
	a.inv = a.invocation()
	if done {
		return a.finished(ctx)
	}
	return a.execute(ctx)
}

// runFire is Fire's run.
func (a *attempt) runFire(ctx context.Context) (res *Result, err error) {
	ctx, end := a.runSpan(ctx)
	defer func() { end(res, err) }()
	if err := a.indexTools(); err != nil {
		return nil, err
	}
	if a.claimed != nil {
		a.run, a.resumed, a.holder = *a.claimed, true, a.claimed.Lease.Holder
		a.log = a.log.With("holder", a.holder)
	} else {
		run, out, err := a.st.StartRun(ctx, store.NewRun{Key: a.key, Kind: store.RunScheduled, Persona: a.p.Name,
			Responsibility: a.responsibility.Name, FireAt: a.fireAt, Holder: a.holder, LeaseFor: a.r.leaseFor()})
		if err != nil {
			return nil, fmt.Errorf("agent: fire %s/%s: %w", a.p.Name, a.responsibility.Name, err)
		}
		done, err := a.claim(ctx, run, out)
		if err != nil {
			return nil, err
		}
		if done {
			a.owner = store.Owner{Type: store.OwnerRun, ID: a.run.ID}
			a.inv = a.invocation()
			return a.finished(ctx)
		}
	}
	a.owner = store.Owner{Type: store.OwnerRun, ID: a.run.ID}
	a.inv = a.invocation()
	return a.execute(ctx)
}

// indexTools maps the persona's tools by name, refusing two tools of one name.
func (a *attempt) indexTools() error {
	a.tools = make(map[string]runtime.Tool, len(a.p.Tools))
	for _, t := range a.p.Tools {
		if t == nil {
			return fmt.Errorf("%w: persona %q has a nil tool", ErrInvalidJob, a.p.Name)
		}
		if _, dup := a.tools[t.Name()]; dup {
			return fmt.Errorf("%w: persona %q has two tools named %q", ErrInvalidJob, a.p.Name, t.Name())
		}
		a.tools[t.Name()] = t
	}
	a.defs = runtime.ToolDefinitions(a.p.Tools)
	return nil
}

// claim decides what to do with the run StartRun returned: work on a new run, resume one that
// is this holder's or whose lease expired, or report a finished one (done). It returns an error
// when another worker holds the run.
func (a *attempt) claim(ctx context.Context, run store.Run, out store.Outcome) (done bool, err error) {
	switch {
	case out == store.Stored:
		a.run = run
		a.log.Info("run started")
		return false, nil
	case run.Status != store.RunRunning:
		a.run, a.resumed = run, true
		return true, nil
	case run.Lease.Holder == a.holder:
		a.run, a.resumed = run, true
		a.log.Info("run resumed", "attempt", run.Attempt)
		return false, nil
	}
	taken, err := a.st.TakeOverRun(ctx, a.key, a.holder, a.r.leaseFor())
	if errors.Is(err, store.ErrRunFinished) {
		if run, rerr := a.st.Run(ctx, a.key); rerr == nil {
			a.run, a.resumed = run, true
			return true, nil
		}
	}
	if err != nil {
		return false, fmt.Errorf("agent: run %q is in progress elsewhere: %w", a.key, err)
	}
	a.run, a.resumed = taken, true
	a.log.Info("run taken over", "attempt", taken.Attempt, "from", run.Lease.Holder)
	return false, nil
}

// finished returns the Result of a run that finished before this call, without calling the
// model or any tool: for a run that succeeded, its reply or output and its conversation as
// recorded (the request rebuilt, the rounds read back); otherwise an error wrapping
// store.ErrRunFinished with its status and reason.
func (a *attempt) finished(ctx context.Context) (*Result, error) {
	run := a.run
	a.finish = store.Finish{Status: run.Status, Reason: run.Reason, StopReason: run.StopReason, Usage: run.Usage}
	fail := func(err error) (*Result, error) {
		res := a.result()
		res.AlreadyFinished, res.Usage = true, run.Usage
		return res, err
	}
	if run.Status != store.RunSucceeded {
		return fail(fmt.Errorf("agent: run %q is %s (%s): %w", a.key, run.Status, run.Reason, store.ErrRunFinished))
	}
	if _, err := a.restore(ctx); err != nil {
		return fail(err)
	}
	if err := a.build(ctx); err != nil {
		return fail(err)
	}
	if n := len(a.turns); n > 0 && len(a.turns[n-1].ToolCalls) == 0 {
		last := a.turns[n-1]
		a.answer = &chat.Message{Role: chat.RoleAssistant, Text: last.Text, State: last.State}
		a.text = last.Text
	}
	if a.reply != nil {
		a.text = a.reply.Text
	}
	res := a.result()
	res.AlreadyFinished, res.Usage, res.StopReason = true, run.Usage, chat.StopReason(run.StopReason)
	return res, nil
}

// storedView returns the view of the thread the run reads: latest (what the store holds now)
// for a new run, the one recorded on the run for a resumed one.
func (a *attempt) storedView(ctx context.Context, latest history.View) (*history.View, error) {
	if !a.resumed {
		latest.UpToSeq = max(latest.UpToSeq, a.inbound.Seq)
		return &latest, nil
	}
	v := &history.View{UpToSeq: a.run.ViewSeq}
	if v.UpToSeq == 0 { // a run started without a view: what came before its message
		v.UpToSeq = a.run.MessageSeq
	}
	switch c := a.run.CompactionSeq; {
	case c == 0:
	case latest.Compaction != nil && latest.Compaction.BoundarySeq == c:
		v.Compaction = latest.Compaction
	default:
		comp, err := a.st.CompactionAt(ctx, a.inbound.ThreadID, c)
		if err != nil {
			return nil, fmt.Errorf("agent: run %q: the compaction it started with: %w", a.key, err)
		}
		v.Compaction = comp
	}
	return v, nil
}

// invocation returns a new Invocation of the run (a new one after a compaction, so the chain
// reads the thread afresh).
func (a *attempt) invocation() *runtime.Invocation {
	inv := &runtime.Invocation{Persona: a.p, Config: a.config, Logger: a.log, CorrelationID: a.cid,
		Responsibility: a.responsibility, View: a.view}
	if a.inbound != nil {
		m := a.inbound.Message
		inv.Inbound = &m
	}
	return inv
}

// execute runs the turn loop of a started (or resumed) run.
func (a *attempt) execute(ctx context.Context) (*Result, error) {
	ctx, stop := a.keepLease(ctx)
	defer stop()
	if a.resumed {
		done, err := a.restore(ctx)
		if err != nil || done {
			return a.result(), a.stopped(ctx, err)
		}
	}
	if err := a.build(ctx); err != nil {
		return a.result(), a.stopped(ctx, err)
	}
	for {
		turn := a.nextTurn()
		if turn >= a.r.maxTurns() {
			return a.fail(ctx, fmt.Errorf("%w (%d model calls)", ErrMaxTurns, turn))
		}
		t, fromLedger, err := a.call(ctx, turn)
		if err != nil {
			if errors.Is(err, chat.ErrContextWindow) {
				return a.fail(ctx, err)
			}
			return a.result(), a.stopped(ctx, err)
		}
		if len(t.ToolCalls) == 0 {
			return a.final(ctx, t)
		}
		results, err := a.runTools(ctx, t, fromLedger)
		if err != nil {
			return a.result(), a.stopped(ctx, err)
		}
		if err := a.record(ctx, t, results); err != nil {
			return a.result(), a.stopped(ctx, err)
		}
	}
}

// nextTurn is the index of the run's next model call: one per recorded round.
func (a *attempt) nextTurn() int {
	n := 0
	for _, m := range a.rounds {
		if m.Role == chat.RoleAssistant {
			n++
		}
	}
	return n
}

// restore reads what is recorded for a resumed run: its reply when it was stored (then a running
// run only finishes: done), its rounds and its model calls.
func (a *attempt) restore(ctx context.Context) (done bool, err error) {
	if a.inbound != nil {
		reply, err := a.st.ReplyOf(ctx, a.key)
		switch {
		case err == nil:
			a.reply, a.text = &reply, reply.Text
			if a.run.Status == store.RunRunning {
				if a.turns, err = a.st.Turns(ctx, a.run.ID); err != nil {
					return false, err
				}
				a.log.Info("reply already stored", "message_id", reply.MessageID)
				a.compactAfter(ctx)
				return true, a.succeed(ctx)
			}
		case !errors.Is(err, store.ErrMessageNotFound):
			return false, err
		}
	}
	rounds, err := a.st.Rounds(ctx, a.owner, a.key)
	if err != nil {
		return false, err
	}
	for i, rd := range rounds {
		if rd.TurnIndex != i {
			return false, fmt.Errorf("agent: run %q: recorded rounds skip turn %d", a.key, i)
		}
		a.rounds = append(a.rounds, a.roundMessages(rd, false)...)
	}
	a.replayed = len(rounds)
	if a.turns, err = a.st.Turns(ctx, a.run.ID); err != nil {
		return false, err
	}
	a.log.Info("run state restored", "rounds", len(rounds), "model_calls", len(a.turns))
	return false, nil
}

// build assembles the chain's messages (and the inbound turn) with the run's Invocation.
func (a *attempt) build(ctx context.Context) error {
	req, err := runtime.BuildRequest(ctx, a.inv)
	if err != nil {
		return err
	}
	a.base = req.Messages
	return nil
}

// conversation is the next request's messages: the chain's, then every round so far.
func (a *attempt) conversation() []chat.Message {
	msgs := make([]chat.Message, 0, len(a.base)+len(a.rounds)+1)
	return append(append(msgs, a.base...), a.rounds...)
}

// call returns the answer of turn: the recorded one when the run recorded it before (fromLedger),
// else a new model call's, recorded before its tools run.
func (a *attempt) call(ctx context.Context, turn int) (t store.Turn, fromLedger bool, err error) {
	if turn < len(a.turns) {
		if t = a.turns[turn]; t.TurnIndex != turn {
			return t, false, fmt.Errorf("agent: run %q: recorded model calls skip turn %d", a.key, turn)
		}
		return t, true, nil
	}
	resp, err := a.generate(ctx)
	if err != nil {
		return t, false, err
	}
	if err := a.r.at(fmt.Sprintf("model:%d", turn)); err != nil {
		return t, false, err
	}
	msg := resp.Message
	t = store.Turn{RunID: a.run.ID, TurnIndex: turn, Text: msg.Text, ToolCalls: msg.ToolCalls, State: msg.State,
		StopReason: runtime.Clip(string(resp.StopReason), store.MaxNameChars), Model: runtime.Clip(resp.Model, store.MaxNameChars),
		RequestID: runtime.Clip(resp.RequestID, store.MaxToolFieldChars), ResponseID: runtime.Clip(resp.ResponseID, store.MaxToolFieldChars),
		Usage: resp.Usage}
	if _, err := a.st.StartTurn(ctx, a.holder, t); err != nil {
		return t, false, err
	}
	a.turns = append(a.turns, t)
	return t, false, a.r.at(fmt.Sprintf("started:%d", turn))
}

// generate calls the model with the next request. A request refused because it does not fit
// the context window compacts the thread once and is sent once more.
func (a *attempt) generate(ctx context.Context) (*chat.Response, error) {
	resp, err := a.chat(ctx, &chat.Request{Model: a.p.Model, Messages: a.conversation(), Tools: a.defs})
	if err == nil || !errors.Is(err, chat.ErrContextWindow) {
		return resp, err
	}
	if a.inbound == nil {
		return nil, fmt.Errorf("%w (a scheduled run has no thread to compact)", err)
	}
	a.log.Warn("request does not fit the context window; compacting the thread", "error", err)
	if cerr := a.compactToFit(ctx); cerr != nil {
		return nil, fmt.Errorf("%w (compacting the thread to fit failed: %v)", err, cerr)
	}
	return a.chat(ctx, &chat.Request{Model: a.p.Model, Messages: a.conversation(), Tools: a.defs})
}

// record stores the round of turn t with its results and adds it to the conversation in the
// form a resumed run reads it back. When the round is already stored with other content (a
// worker that lost the run recorded it first), the stored round wins.
func (a *attempt) record(ctx context.Context, t store.Turn, results []store.Result) error {
	round := store.Round{Owner: a.owner, Persona: a.p.Name, RunID: a.key, TurnIndex: t.TurnIndex,
		Calls: t.ToolCalls, Results: results, Text: t.Text, State: t.State}
	_, err := a.st.RecordRound(ctx, round)
	fresh := true
	if errors.Is(err, store.ErrConflict) {
		a.log.Warn("round already recorded with other content; the recorded round wins", "turn", t.TurnIndex, "error", err)
		rounds, rerr := a.st.Rounds(ctx, a.owner, a.key)
		if rerr != nil {
			return rerr
		}
		if t.TurnIndex >= len(rounds) {
			return err
		}
		round, fresh, err = rounds[t.TurnIndex], false, nil
	}
	if err != nil {
		return err
	}
	if err := a.r.at(fmt.Sprintf("record:%d", t.TurnIndex)); err != nil {
		return err
	}
	a.rounds = append(a.rounds, a.roundMessages(round, fresh)...)
	return nil
}

// final ends the run with the answer of turn t: stores the reply of a reply run, compacts its
// thread when the policy says so, and records the run succeeded.
func (a *attempt) final(ctx context.Context, t store.Turn) (*Result, error) {
	a.answer = &chat.Message{Role: chat.RoleAssistant, Text: t.Text, State: t.State}
	if strings.TrimSpace(t.Text) == "" || chat.StopReason(t.StopReason) == chat.StopRefusal {
		return a.fail(ctx, fmt.Errorf("%w (stop reason %q, %d characters of text)", ErrNoAnswer, t.StopReason, len([]rune(t.Text))))
	}
	a.text = t.Text
	if a.inbound != nil {
		if err := a.storeReply(ctx); err != nil {
			return a.result(), a.stopped(ctx, err)
		}
		if err := a.r.at("reply"); err != nil {
			return a.result(), err
		}
		a.compactAfter(ctx)
	}
	err := a.succeed(ctx)
	return a.result(), a.stopped(ctx, err)
}

// storeReply appends the run's reply to the thread, once: a retry finds the stored one.
func (a *attempt) storeReply(ctx context.Context) error {
	compose := a.r.Compose
	if compose == nil {
		compose = mail.NewReply
	}
	hm, err := compose(a.p, &a.inbound.Message, a.key, a.text, a.r.now())
	if err != nil {
		return fmt.Errorf("agent: compose the reply: %w", err)
	}
	m := store.Message{Message: *hm, Mailbox: a.inbound.Mailbox, RunKey: a.key}
	m.Direction, m.ThreadID = history.Outbound, a.inbound.ThreadID
	ap, err := a.st.AppendMessage(ctx, m)
	if errors.Is(err, store.ErrConflict) { // the run's reply is stored under another id
		stored, rerr := a.st.ReplyOf(ctx, a.key)
		if rerr != nil {
			return err
		}
		a.reply = &stored
		return nil
	}
	if err != nil {
		return err
	}
	m.Seq = ap.Seq
	if ap.Outcome == store.AlreadyStored {
		if stored, err := a.st.ReplyOf(ctx, a.key); err == nil {
			m = stored
		}
	}
	a.reply = &m
	a.log.Info("reply stored", "message_id", m.MessageID, "seq", m.Seq)
	return nil
}

// succeed records the run succeeded (or, for a claimed run, notes it for the caller).
func (a *attempt) succeed(ctx context.Context) error {
	return a.finishAs(ctx, store.RunSucceeded, "")
}

// fail records the run failed with err, which it returns.
func (a *attempt) fail(ctx context.Context, err error) (*Result, error) {
	a.log.Warn("run failed", "error", err)
	if ferr := a.finishAs(ctx, store.RunFailed, err.Error()); ferr != nil {
		return a.result(), errors.Join(err, ferr)
	}
	return a.result(), err
}

// finishAs records the run's final state (not for a claimed run: its caller records it).
func (a *attempt) finishAs(ctx context.Context, status store.RunStatus, reason string) error {
	a.finish = store.Finish{Status: status, Reason: reason, StopReason: string(a.stopReason()), Usage: a.usage()}
	if a.claimed != nil {
		return nil
	}
	if _, err := a.st.FinishRun(ctx, a.key, a.holder, a.finish); err != nil {
		return err
	}
	a.run.Status, a.run.Reason, a.run.StopReason, a.run.Usage = status, runtime.Clip(reason, store.StoredPayloadLimit), a.finish.StopReason, a.finish.Usage
	a.log.Info("run finished", "status", status, "stop_reason", a.finish.StopReason, "input_tokens", a.finish.Usage.InputTokens,
		"output_tokens", a.finish.Usage.OutputTokens)
	return a.r.at("finish")
}

// stopped returns err for an attempt that stops with the run still running, naming the lease
// loss when that is why ctx ended.
func (a *attempt) stopped(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) && ctx.Err() != nil && cause != ctx.Err() {
		err = fmt.Errorf("%w (%v)", err, cause)
	}
	if a.run.Status == store.RunRunning {
		a.log.Warn("run stopped; it resumes on the next attempt", "error", err)
	}
	return err
}

// usage is the run's total: every recorded model call and this attempt's summaries.
func (a *attempt) usage() chat.Usage {
	u := a.extra
	for _, t := range a.turns {
		u = u.Add(t.Usage)
	}
	return u
}

// stopReason is the stop reason of the run's last recorded model call.
func (a *attempt) stopReason() chat.StopReason {
	if n := len(a.turns); n > 0 {
		return chat.StopReason(a.turns[n-1].StopReason)
	}
	return ""
}

// result is the attempt's Result.
func (a *attempt) result() *Result {
	msgs := a.conversation()
	if len(a.base) == 0 {
		msgs = append([]chat.Message(nil), a.rounds...)
	}
	if a.answer != nil {
		msgs = append(msgs, *a.answer)
	}
	finish := a.finish
	if finish.Status == "" { // the attempt stopped before the run finished
		finish = store.Finish{StopReason: string(a.stopReason()), Usage: a.usage()}
	}
	return &Result{Run: a.run, Text: a.text, Reply: a.reply, Messages: msgs, Turns: a.turns, Usage: a.usage(),
		StopReason: a.stopReason(), Replayed: a.replayed, InDoubt: a.inDoubt, Finish: finish}
}

// keepLease renews the lease of a run this attempt started or took over, every third of the
// lease, until stop is called; a lost lease cancels the returned ctx with the store's error as
// its cause. A claimed run's caller renews its lease itself.
func (a *attempt) keepLease(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	if a.claimed != nil {
		return ctx, func() { cancel(nil) }
	}
	lease := a.r.leaseFor()
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(lease / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, err := a.st.RenewLease(ctx, a.key, a.holder, lease)
			switch {
			case errors.Is(err, store.ErrLeaseLost) || errors.Is(err, store.ErrRunFinished):
				a.log.Warn("run lease lost; stopping", "error", err)
				cancel(err)
				return
			case err != nil && ctx.Err() == nil:
				a.log.Warn("renewing the run lease failed; trying again", "error", err)
			}
		}
	}()
	return ctx, func() { cancel(nil); <-done }
}
