package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
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
	chain  runtime.ChainKind       // the run's chain: which of the persona's tools it offers
	tools  map[string]runtime.Tool // the tools the run offers, by name
	defs   []chat.ToolDefinition   // what the model reads about them

	inbound        *store.Message          // a reply run's message
	responsibility *runtime.Responsibility // a scheduled run's responsibility
	fireAt         time.Time
	claimed        *store.Run // a scheduled run the caller started and finishes

	run       store.Run
	claimedOK bool   // the run is this attempt's: started, resumed, or handed over (claimed)
	stopLease func() // stops renewing the lease; idempotent
	owner     store.Owner
	resumed   bool
	view      *history.View
	inv       *runtime.Invocation

	base     []chat.Message  // the chain's messages and the inbound turn
	cache    *chat.CachePlan // the chain's cache plan (its tail covers the rounds appended)
	rounds   []chat.Message  // the run's tool rounds so far, as the model reads them
	turns    []store.Turn    // the run's recorded model calls
	extra    chat.Usage      // usage of the compaction summaries this attempt asked for
	answer   *chat.Message   // the final assistant message
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
	if !a.r.enter(a.key) {
		return nil, fmt.Errorf("agent: run %q is in progress in this Runner (holder %q): %w", a.key, a.holder, store.ErrLeaseHeld)
	}
	defer a.r.leave(a.key)
	defer a.recoverPanic(ctx, &res, &err)
	a.chain = runtime.ChainReply
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
		return a.waitingResult(err), err
	}
	a.owner = store.Owner{Type: store.OwnerMessage, ID: m.Seq}
	if a.view, err = a.storedView(ctx, view); err != nil {
		return a.end(ctx, err)
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
	if !a.r.enter(a.key) {
		return nil, fmt.Errorf("agent: run %q is in progress in this Runner (holder %q): %w", a.key, a.holder, store.ErrLeaseHeld)
	}
	defer a.r.leave(a.key)
	defer a.recoverPanic(ctx, &res, &err)
	a.chain = runtime.ChainScheduled
	if err := a.indexTools(); err != nil {
		return nil, err
	}
	if a.claimed != nil {
		a.run, a.resumed, a.holder, a.claimedOK = *a.claimed, true, a.claimed.Lease.Holder, true
		a.log = a.log.With("holder", a.holder)
	} else {
		run, out, err := a.st.StartRun(ctx, store.NewRun{Key: a.key, Kind: store.RunScheduled, Persona: a.p.Name,
			Responsibility: a.responsibility.Name, FireAt: a.fireAt, Holder: a.holder, LeaseFor: a.r.leaseFor()})
		if err != nil {
			return nil, fmt.Errorf("agent: fire %s/%s: %w", a.p.Name, a.responsibility.Name, err)
		}
		done, err := a.claim(ctx, run, out)
		if err != nil {
			return a.waitingResult(err), err
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

// recoverPanic turns a panic of the attempt (a resolver's, the model adapter's, Compose's, the
// runner's own) into the attempt's end: a fault of class store.FailureCrashed, recorded like any
// other stop when the run is this attempt's.
func (a *attempt) recoverPanic(ctx context.Context, res **Result, err *error) {
	p := recover()
	if p == nil {
		return
	}
	a.log.Error("run panicked", "panic", p, "stack", string(debug.Stack()))
	perr := withClass(store.FailureCrashed, fmt.Errorf("%w: %v", errPanicked, p))
	if !a.claimedOK {
		*res, *err = nil, perr
		return
	}
	*res, *err = a.end(ctx, perr)
}

// indexTools maps the tools the run's chain offers by name (a tool whose rule limits it to the
// other chain is left out, so the model neither reads about it nor can call it), refusing a nil
// tool, two tools of one name and a rule the runner cannot apply.
func (a *attempt) indexTools() error {
	a.tools = make(map[string]runtime.Tool, len(a.p.Tools))
	seen := make(map[string]bool, len(a.p.Tools))
	var offered []runtime.Tool
	for _, t := range a.p.Tools {
		if t == nil {
			return fmt.Errorf("%w: persona %q has a nil tool", ErrInvalidJob, a.p.Name)
		}
		if seen[t.Name()] {
			return fmt.Errorf("%w: persona %q has two tools named %q", ErrInvalidJob, a.p.Name, t.Name())
		}
		seen[t.Name()] = true
		rule := a.p.ToolRule(t.Name())
		if err := rule.Check(t.Name()); err != nil {
			return fmt.Errorf("%w: persona %q: %w", ErrInvalidJob, a.p.Name, err)
		}
		if rule.Offered(a.chain) {
			a.tools[t.Name()] = t
			offered = append(offered, t)
		}
	}
	a.defs = runtime.ToolDefinitions(offered)
	return nil
}

// claim decides what to do with the run StartRun returned: work on a new run, resume one no
// live lease holds (store.ResumeRun), or report a finished one (done). It returns an error when
// another worker holds the run, or its retry time has not come.
func (a *attempt) claim(ctx context.Context, run store.Run, out store.Outcome) (done bool, err error) {
	switch {
	case out == store.Stored:
		a.run, a.claimedOK = run, true
		a.log.Info("run started")
		return false, nil
	case run.Status == store.RunWaiting:
		return a.resumeWaiting(ctx, run)
	case run.Status != store.RunRunning:
		a.run, a.resumed = run, true
		return true, nil
	}
	taken, err := a.st.ResumeRun(ctx, a.key, a.holder, a.r.leaseFor())
	switch {
	case errors.Is(err, store.ErrRunFinished):
		if run, rerr := a.st.Run(ctx, a.key); rerr == nil {
			a.run, a.resumed = run, true
			return true, nil
		}
	case errors.Is(err, store.ErrRetryLater):
		stored, rerr := a.st.Run(ctx, a.key)
		if rerr != nil {
			stored = run
		}
		return false, &RunError{Key: a.key, Class: stored.FailureClass, RetryAt: stored.RetryAt, Err: err}
	}
	if err != nil {
		return false, fmt.Errorf("agent: run %q is in progress elsewhere: %w", a.key, err)
	}
	a.run, a.resumed, a.claimedOK = taken, true, true
	a.log.Info("run resumed", "attempt", taken.Attempt, "faults", taken.Faults, "from", run.Lease.Holder,
		"last_stop", taken.FailureClass)
	return false, nil
}

// resumeWaiting resumes the waiting run once none of its calls waits for a decision any more
// (store.ResumeWaiting), or returns the run's *store.WaitingError (wrapped) while one does:
// then nothing of the run is touched and no lease is taken.
func (a *attempt) resumeWaiting(ctx context.Context, run store.Run) (done bool, err error) {
	taken, err := a.st.ResumeWaiting(ctx, a.key, a.holder, a.r.leaseFor())
	var we *store.WaitingError
	switch {
	case errors.As(err, &we):
		a.run = we.Run
		return false, we
	case errors.Is(err, store.ErrRunFinished):
		if run, rerr := a.st.Run(ctx, a.key); rerr == nil {
			a.run, a.resumed = run, true
			return true, nil
		}
		return false, err
	case err != nil:
		return false, fmt.Errorf("agent: run %q is in progress elsewhere: %w", a.key, err)
	}
	a.run, a.resumed, a.claimedOK = taken, true, true
	a.log.Info("run resumed after its calls were decided", "attempt", taken.Attempt, "paused_at", run.Lease.Expires)
	return false, a.r.at("resumed")
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
		why := run.Reason
		if run.FailureClass != "" {
			why = string(run.FailureClass) + ": " + why
		}
		return fail(fmt.Errorf("agent: run %q is %s (%s): %w", a.key, run.Status, why, store.ErrRunFinished))
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
	a.stopLease = stop
	defer stop()
	if a.run.Faults >= MaxFaults {
		// The resume counted the fault of a worker that died holding the run.
		return a.failWith(ctx, store.FailureCrashed, fmt.Errorf("%w (fault %d of %d: a worker died holding the run)",
			ErrTooManyFaults, a.run.Faults, MaxFaults), false)
	}
	if a.resumed {
		done, err := a.restore(ctx)
		if err != nil || done {
			return a.end(ctx, err)
		}
	}
	if a.inbound != nil && a.r.Compose == nil {
		if _, err := mail.NewReply(a.p, &a.inbound.Message, a.key, "", a.r.now()); err != nil {
			return a.end(ctx, withClass(store.FailureHostError, fmt.Errorf("agent: the reply cannot be composed: %w", err)))
		}
	}
	if err := a.build(ctx); err != nil {
		return a.end(ctx, err)
	}
	for {
		turn := a.nextTurn()
		if turn >= a.r.maxTurns() {
			return a.end(ctx, fmt.Errorf("%w (%d model calls)", ErrMaxTurns, turn))
		}
		t, fromLedger, err := a.call(ctx, turn)
		if err != nil {
			return a.end(ctx, err)
		}
		if len(t.ToolCalls) == 0 {
			return a.final(ctx, t)
		}
		results, waiting, err := a.runTools(ctx, t, fromLedger)
		if err != nil {
			return a.end(ctx, err)
		}
		if len(waiting) > 0 {
			res, err, again := a.pause(ctx, t, waiting)
			if again {
				continue // every call was decided meanwhile: the turn again, with the decisions
			}
			return res, err
		}
		if err := a.record(ctx, t, results); err != nil {
			return a.end(ctx, err)
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
	a.base, a.cache = req.Messages, req.Cache
	return nil
}

// conversation is the next request's messages: the chain's, then every round so far.
func (a *attempt) conversation() []chat.Message {
	msgs := make([]chat.Message, 0, len(a.base)+len(a.rounds)+1)
	return append(append(msgs, a.base...), a.rounds...)
}

// call returns the answer of turn: the recorded one when the run recorded it before (fromLedger),
// else a new model call's, checked (checkAnswer) and recorded before its tools run.
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
	if resp == nil {
		return t, false, withClass(store.FailureInvalidAnswer, fmt.Errorf("%w: the model returned neither an answer nor an error", ErrInvalidAnswer))
	}
	if err := a.r.at(fmt.Sprintf("model:%d", turn)); err != nil {
		return t, false, err
	}
	if t, err = a.checkAnswer(resp, turn); err != nil {
		a.extra = a.extra.Add(nonNegative(resp.Usage)) // the refused call was paid for
		return t, false, err
	}
	t.ApprovalRequests = a.approvalRequests(t)
	if _, err := a.st.StartTurn(ctx, a.holder, t); err != nil {
		return t, false, err
	}
	if len(t.ApprovalRequests) > 0 {
		if t.Approvals, err = a.st.ApprovalsOf(ctx, a.run.ID, turn); err != nil {
			return t, false, err
		}
	}
	t.ApprovalRequests = nil
	a.turns = append(a.turns, t)
	return t, false, a.r.at(fmt.Sprintf("started:%d", turn))
}

// checkAnswer returns the model's answer resp to turn as the turn to record, or an error
// wrapping ErrInvalidAnswer when it cannot be carried out — before any of its tools runs, so a
// refused answer has no side effect. It repairs what only the record's form needs: tool call
// ids that are empty or repeated within the answer are renamed by chat.UniqueCallIDs (the
// renamed ids are recorded, so the next request, a resumed run and the history replay all read
// them), the provider's stop reason, model and ids are made valid UTF-8 and clipped to their
// columns, and negative usage counts become 0. It refuses an answer of more than
// store.MaxRoundCalls calls, and any other that store.CheckTurn refuses (a call without a tool
// name or with an id over 255 characters, text, arguments or state over the store's limits or
// not valid UTF-8), which StartTurn and RecordRound would refuse after the tools ran.
func (a *attempt) checkAnswer(resp *chat.Response, turn int) (store.Turn, error) {
	msg := resp.Message
	refuse := func(err error) (store.Turn, error) {
		return store.Turn{}, withClass(store.FailureInvalidAnswer, fmt.Errorf("%w: %w", ErrInvalidAnswer, err))
	}
	if n := len(msg.ToolCalls); n > store.MaxRoundCalls {
		return refuse(fmt.Errorf("%d tool calls (at most %d)", n, store.MaxRoundCalls))
	}
	calls := slices.Clone(msg.ToolCalls)
	if n := chat.UniqueCallIDs(calls); n > 0 {
		a.log.Warn("renamed tool call ids that were empty or repeated in one answer", "turn", turn, "renamed", n)
	}
	t := store.Turn{RunID: a.run.ID, TurnIndex: turn, Text: msg.Text, ToolCalls: calls, State: msg.State,
		StopReason: storable(string(resp.StopReason), store.MaxNameChars), Model: storable(resp.Model, store.MaxNameChars),
		RequestID: storable(resp.RequestID, store.MaxToolFieldChars), ResponseID: storable(resp.ResponseID, store.MaxToolFieldChars),
		Usage: nonNegative(resp.Usage)}
	if err := store.CheckTurn(t); err != nil {
		return refuse(err)
	}
	return t, nil
}

// storable is a provider's metadata string as a column holds it: valid UTF-8, at most n
// characters.
func storable(s string, n int) string { return runtime.Clip(strings.ToValidUTF8(s, "\uFFFD"), n) }

// nonNegative is u with negative counts as 0.
func nonNegative(u chat.Usage) chat.Usage {
	return chat.Usage{InputTokens: max(u.InputTokens, 0), OutputTokens: max(u.OutputTokens, 0),
		CacheReadTokens: max(u.CacheReadTokens, 0), CacheWriteTokens: max(u.CacheWriteTokens, 0)}
}

// generate calls the model with the next request. A request refused because it does not fit
// the context window compacts the thread once and is sent once more: when it still does not
// fit, or nothing is left to compact, the error is chat.ErrContextWindow's (permanent); when
// another worker is compacting the thread, the attempt stops (store.FailureBusy) and the run
// resumes after it; a compaction that failed otherwise stops the attempt with its own error.
func (a *attempt) generate(ctx context.Context) (*chat.Response, error) {
	if err := ctx.Err(); err != nil { // a stopping attempt asks the model nothing more
		return nil, err
	}
	resp, err := a.chat(ctx, &chat.Request{Model: a.p.Model, Messages: a.conversation(), Tools: a.defs, Cache: a.cache})
	if err == nil || !errors.Is(err, chat.ErrContextWindow) {
		return resp, modelErrorOrNil(ctx, err)
	}
	if a.inbound == nil {
		return nil, fmt.Errorf("%w (a scheduled run has no thread to compact)", err)
	}
	a.log.Warn("request does not fit the context window; compacting the thread", "error", err)
	switch cerr := a.compactToFit(ctx); {
	case errors.Is(cerr, errCompactionPending):
		return nil, withClass(store.FailureBusy, fmt.Errorf("agent: the request does not fit the context window, and %w", cerr))
	case errors.Is(cerr, errNothingToCompact):
		return nil, fmt.Errorf("%w (%v)", err, cerr)
	case cerr != nil:
		return nil, fmt.Errorf("agent: compacting the thread to fit the context window: %w", cerr)
	}
	resp, err = a.chat(ctx, &chat.Request{Model: a.p.Model, Messages: a.conversation(), Tools: a.defs, Cache: a.cache})
	return resp, modelErrorOrNil(ctx, err)
}

// modelErrorOrNil is modelError for a non-nil err.
func modelErrorOrNil(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return modelError(ctx, err)
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
		return a.end(ctx, fmt.Errorf("%w (stop reason %q, %d characters of text)", ErrNoAnswer, t.StopReason, len([]rune(t.Text))))
	}
	a.text = t.Text
	if a.inbound != nil {
		if err := a.storeReply(ctx); err != nil {
			return a.end(ctx, err)
		}
		if err := a.r.at("reply"); err != nil {
			return a.end(ctx, err)
		}
		a.compactAfter(ctx)
	}
	return a.end(ctx, a.succeed(ctx))
}

// storeReply appends the run's reply to the thread, once: a retry finds the stored one. A
// Compose that fails or returns nil, and a reply the store refuses as invalid, are the host's
// errors (store.FailureHostError).
func (a *attempt) storeReply(ctx context.Context) error {
	compose := a.r.Compose
	if compose == nil {
		compose = mail.NewReply
	}
	hm, err := compose(a.p, &a.inbound.Message, a.key, a.text, a.r.now())
	switch {
	case err != nil:
		return withClass(store.FailureHostError, fmt.Errorf("agent: compose the reply: %w", err))
	case hm == nil:
		return withClass(store.FailureHostError, errors.New("agent: compose the reply: Compose returned neither a message nor an error"))
	}
	// A reply the outbox could never send is refused before it is stored.
	if _, err := mail.Render(hm); err != nil {
		return withClass(store.FailureHostError, fmt.Errorf("agent: the reply Compose built cannot be sent: %w", err))
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
	if errors.Is(err, store.ErrInvalid) {
		return withClass(store.FailureHostError, fmt.Errorf("agent: store the reply Compose built: %w", err))
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
	return a.finishAs(ctx, store.Finish{Status: store.RunSucceeded})
}

// end ends the attempt with err (nil: it succeeded), as classify says: a permanent error, or
// the run's MaxFaults-th fault, records the run failed (failWith); a transient one records the
// stop and releases the lease (stop); an error that is not this attempt's to record (a lost
// lease, an injected crash) is returned as it is. The error returned is a *RunError unless
// nothing was recorded.
func (a *attempt) end(ctx context.Context, err error) (*Result, error) {
	if err == nil {
		return a.result(), nil
	}
	v := classify(ctx, err)
	if a.run.Status != store.RunRunning && a.claimed == nil {
		v.record = false // this attempt finished the run before it failed (a crash after FinishRun)
	}
	if !v.record {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil && !errors.Is(err, cause) && cause != ctx.Err() {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		a.log.Warn("attempt stopped; the run is not this attempt's to record", "error", err)
		return a.result(), err
	}
	if v.fault && a.run.Faults+1 >= MaxFaults {
		v.final = true
		err = fmt.Errorf("%w (fault %d of %d: %w)", ErrTooManyFaults, a.run.Faults+1, MaxFaults, err)
	}
	if v.final {
		return a.failWith(ctx, v.class, err, v.fault)
	}
	return a.stop(ctx, v, err)
}

// detached is ctx without its cancellation, bounded by settleTimeout: for the writes that record
// how an attempt ended, which must happen also when the attempt ends because ctx did.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
}

// failWith records the run failed with err's text as its reason and class (or, for a claimed
// run, notes it in Result.Finish for the caller) and returns a final *RunError.
func (a *attempt) failWith(ctx context.Context, class store.FailureClass, err error, fault bool) (*Result, error) {
	a.log.Warn("run failed", "class", class, "error", err)
	if a.stopLease != nil {
		a.stopLease()
	}
	rerr := &RunError{Key: a.key, Class: class, Final: true, Err: err}
	dctx, cancel := detached(ctx)
	defer cancel()
	if ferr := a.finishAs(dctx, store.Finish{Status: store.RunFailed, Reason: err.Error(), Class: class, Fault: fault}); ferr != nil {
		// Not recorded: the run stays running until its lease expires, and fails again then.
		a.log.Warn("recording the failure failed", "error", ferr)
		rerr.Final = false
		return a.result(), errors.Join(rerr, ferr)
	}
	return a.result(), rerr
}

// stop records the transient end v of the attempt — reason, class, retry time, fault — and
// releases the lease in one statement (store.StopRun), so any worker may resume the run at once
// (or from its retry time); for a claimed run it notes the class in Result.Finish instead. It
// returns a *RunError that is not final.
func (a *attempt) stop(ctx context.Context, v verdict, err error) (*Result, error) {
	a.log.Warn("run stopped; it resumes on the next attempt", "class", v.class, "retry_after", v.retryAfter, "error", err)
	if a.stopLease != nil {
		a.stopLease()
	}
	rerr := &RunError{Key: a.key, Class: v.class, Err: err}
	if v.retryAfter > 0 { // the store's retry time replaces it once recorded
		rerr.RetryAt = time.Now().UTC().Add(v.retryAfter)
	}
	if a.claimed != nil {
		a.finish = store.Finish{Reason: err.Error(), Class: v.class, Fault: v.fault, StopReason: string(a.stopReason()), Usage: a.usage()}
		return a.result(), rerr
	}
	dctx, cancel := detached(ctx)
	defer cancel()
	if _, serr := a.st.StopRun(dctx, a.key, a.holder, store.Stop{Reason: err.Error(), Class: v.class,
		RetryAfter: v.retryAfter, Fault: v.fault}); serr != nil {
		a.log.Warn("recording the stop failed; the run resumes when its lease expires", "error", serr)
		return a.result(), errors.Join(rerr, serr)
	}
	if run, rerr2 := a.st.Run(dctx, a.key); rerr2 == nil {
		a.run = run
		rerr.RetryAt = run.RetryAt
	}
	return a.result(), rerr
}

// finishAs records the run's final state f, with the run's stop reason and usage (not for a
// claimed run: its caller records a.finish).
func (a *attempt) finishAs(ctx context.Context, f store.Finish) error {
	f.StopReason, f.Usage = string(a.stopReason()), a.usage()
	a.finish = f
	if a.claimed != nil {
		return nil
	}
	if _, err := a.st.FinishRun(ctx, a.key, a.holder, f); err != nil {
		return err
	}
	a.run.Status, a.run.Reason, a.run.FailureClass, a.run.StopReason, a.run.Usage =
		f.Status, runtime.Clip(f.Reason, store.StoredPayloadLimit), f.Class, f.StopReason, f.Usage
	if f.Fault {
		a.run.Faults++
	}
	a.log.Info("run finished", "status", f.Status, "class", f.Class, "stop_reason", f.StopReason,
		"input_tokens", f.Usage.InputTokens, "output_tokens", f.Usage.OutputTokens)
	return a.r.at("finish")
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
		finish.StopReason, finish.Usage = string(a.stopReason()), a.usage()
	}
	return &Result{Run: a.run, Text: a.text, Reply: a.reply, Messages: msgs, Turns: a.turns, Usage: a.usage(),
		StopReason: a.stopReason(), Replayed: a.replayed, InDoubt: a.inDoubt, Finish: finish}
}

// keepLease renews the lease of a run this attempt started or resumed, every third of the lease,
// until stop is called (stop may be called more than once); a lost lease cancels the returned
// ctx with the store's error as its cause. A claimed run's caller renews its lease itself.
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
	var once sync.Once
	return ctx, func() { once.Do(func() { cancel(nil); <-done }) }
}
