// Package agent runs personas: a Runner answers a stored inbound message with a reply run
// (Reply) and carries out a fire of a responsibility with a scheduled run (Fire), in a loop of
// model calls and tool rounds recorded in the store as they happen, so that a run cut off at any
// point — a crash, a cancelled context, a lost database connection — resumes where it stopped,
// and a run that cannot succeed ends failed with its reason instead of being retried forever.
//
// Start from Runner: Reply answers a stored inbound message, Fire carries out a fire of a
// responsibility, and a Runner is the schedule.Runner a scheduler hands its fires to. Its
// spans, logs and database round trips are docs/runner.md in the repository.
//
// # The loop
//
// A run assembles its request with the persona's chain (runtime.BuildRequest), calls the model
// (chat.Model), and while the model asks for tools: checks its answer and records it
// (store.StartTurn),
// runs the calls — in parallel, at most Runner.Parallel (DefaultParallel) at once — records the
// round (store.RecordRound, owned by the answered message, or by the run when it answers none),
// appends the calls and results to the conversation and calls the model again. It stops at a
// final answer, which a reply run appends to the thread as an outbound message, or after
// Runner.MaxTurns (DefaultMaxTurns) model calls with ErrMaxTurns. A tool's error or panic, a call
// of an unknown tool and arguments that are not a JSON object are failed results the model
// reads, not failures of the run.
//
// An answer is checked before any of its tools runs: tool call ids that are empty or repeat
// one of the answer's are renamed by chat.UniqueCallIDs ("<id>_<k>", "call_<k>") and recorded
// renamed, so the next request, a resumed run and the thread's history replay agree; an answer
// of more than store.MaxRoundCalls calls, a call without a tool name, or anything else
// store.CheckTurn refuses (fields over the store's limits) fails the run with ErrInvalidAnswer
// before a side effect, and is not asked for again.
//
// # Identity, serialisation and the run's view
//
// A reply run answers a stored message, named by its seq (Inbound.Message.Seq): the runner reads
// the message from the store, so its thread, mailbox, message id and content are the stored
// row's, and an Inbound whose fields disagree with the row is refused with ErrInvalidJob naming
// the field. One stored message therefore has one run and one reply, however a caller spells it.
// A run is keyed by ReplyKey (persona, the stored mailbox and message id) or schedule.RunKey
// (persona, responsibility, fire instant) unless the host gives a key, and lives in the store's
// runs table under a lease the runner renews. One run runs at a time per persona and thread, and
// a thread stays owned by its run until the run finishes: Reply for another message of the
// thread returns a *store.BusyError naming that run and saying whether it is resumable now; the
// host resumes it (Reply of its message) or waits, then answers the later message. A reply run
// fixes its view of the thread when it starts (history.View, recorded on the run): the messages
// up to the one it answers, the replies of earlier runs, and the compaction then in use — later
// arrivals and later compactions are not in it, on any attempt.
//
// # How runs end
//
// Every error that stops a run is classified (store.FailureClass) and returned as a *RunError:
//
//   - permanent — a malformed or unrecordable answer (store.FailureInvalidAnswer), a request the
//     provider or adapter refuses (FailureRequestRefused: a *chat.CallError that is not
//     Transient, or an adapter's plain error), the context window still exceeded after the
//     thread was compacted (FailureContextWindow), ErrMaxTurns, ErrNoAnswer, and the host's
//     errors (FailureHostError: Compose failing or returning nil, a persona without a mailbox
//     address, an answered message with nobody to reply to): the run is recorded failed with
//     the error as its reason and its class, the thread is free, and nothing calls the model for
//     that run again;
//   - transient — a cancelled context (FailureShutdown: a graceful stop), a deadline
//     (FailureTimeout), a transient *chat.CallError (FailureModelUnavailable, with the
//     provider's RetryAfter), a database or network error (FailureUnavailable, see
//     store.Unavailable), another worker compacting the thread (FailureBusy): the attempt
//     records the error, its class and the retry time on the run and releases its lease in one
//     statement (store.StopRun); the run stays running, owning its thread, and any worker
//     resumes it at once by calling Reply or Fire again (from Run.RetryAt when the provider asked
//     for a wait: earlier calls get a RunError wrapping store.ErrRetryLater and call nothing);
//   - faults — a panic anywhere in the attempt (a resolver, the model adapter, Compose; recovered,
//     FailureCrashed), a worker that died holding the run (counted when the run is resumed: an
//     expired lease, or the lease of a worker that restarted under the same Holder), and an error
//     of no known class (FailureUnclassified, say a resolver's own error) are transient until the
//     run's MaxFaults-th (3rd) fault, which fails it with ErrTooManyFaults and that fault's class.
//
// A lost lease (another worker took the run over) ends the attempt without recording anything:
// the run is the other worker's.
//
// # Leases and restarts
//
// A run's lease lasts Runner.LeaseFor (DefaultLeaseFor, 30 s) and is renewed every third of it
// (10 s) while the attempt works, so a worker that died stops holding its runs at most 30 s after
// its last renewal, and the next Reply or Fire of the run, on any worker, resumes it then. A
// worker the host names (Runner.Holder, kept across restarts) resumes the runs it held at once
// after a restart. A Runner works on a run once at a time: a second concurrent Reply of a run it
// is working on returns an error wrapping store.ErrLeaseHeld.
//
// # Resume and at-most-once tools
//
// A run found running when Reply or Fire is called again (after a stop that released its lease,
// or once the lease of a worker that died expired) resumes: its recorded rounds are replayed into the
// conversation instead of running again, a model answer recorded before its tools ran is used
// instead of calling the model again, and every request it sends is byte-identical to the one
// an uninterrupted run would have sent (tool results are handed to the model as the store keeps
// them, redacted and clipped, in every attempt alike). A call of an idempotent tool
// (runtime.Tool.Idempotent) whose round was not recorded runs again. A call of a tool that is
// not idempotent runs at most once: its outcome is recorded as soon as it returned
// (store.SettleCall), and a call that was started but has no recorded outcome is in doubt — it
// is not run again, and the model reads a result saying its outcome is unknown. Writes of a
// worker whose lease was taken over are refused, so it can start no tool after losing the run.
// A run whose reply is stored returns it without calling the model.
//
// A Runner is a schedule.Runner (RunFire): a scheduler claims each fire and hands it to the
// runner, which works on it under the scheduler's lease.
//
// # Tools per chain, and calls that wait for approval
//
// A run offers the model only the tools of its chain (runtime.ToolRule.Chains: a reply run the
// tools of the reply chain, a scheduled run those of the scheduled chain); the model does not
// read about the others, and a call of one is refused with the unknown-tool result.
//
// A call of a tool whose rule requires approval (runtime.ToolRule.Approval) is recorded with its
// answer as waiting for approval (store.StartTurn: the call's arguments as the model produced
// them and the input the tool decodes them into; a call whose arguments do not decode fails at
// once, and nobody is asked). The round's other calls run as usual, their outcomes all recorded
// as they return, and the run pauses: store.WaitRun records it store.RunWaiting with its lease
// released, and Reply or Fire return the Result (Run.Status waiting, Approvals, WaitUntil) and a
// *store.WaitingError (errors.Is store.ErrWaiting). No worker holds the run while it waits; its
// thread stays the run's (a later message's Reply returns a *store.BusyError naming the waiting
// run, which is not Resumable), so later messages wait, as they do for a running run. A person
// decides each call (store.Approve, store.Deny), or its deadline passes (the rule's Timeout,
// runtime.DefaultApprovalTimeout by default). Reply or Fire of the run while a call still waits
// returns the *store.WaitingError again and touches nothing; once none waits, it resumes the run
// on any worker (store.ResumeWaiting: one of several racing workers wins) and finishes the round:
// an approved call (or one expired with runtime.TimeoutApprove) is recorded started
// (store.StartApprovedCall) and runs — once: an approved call that was not started runs after any
// crash, one started without a recorded outcome is in doubt and is not run again; a denied call
// gives the model "[denied] A person reviewed this call of <tool> and denied it, so it did not
// run. The reason given: <note>" (the approver's name instead of "A person" when the rule reveals
// it); an expired one "[expired] This call of <tool> needed a person's approval, and no decision
// came within <timeout>, so it did not run.". The request after resuming is byte-identical to
// the one a run that never paused sends with the same decisions. Calls of one round are decided
// one by one; the run resumes when the last is. When every call was decided before the run
// could pause, it goes on without pausing. A fire the scheduler claimed pauses the same way
// (Result.Finish.Status store.RunWaiting: nothing for the scheduler to record); Fire without a
// claim resumes it. Whether a call needs approval is decided when its answer is recorded: a rule
// changed while a run waits applies to the run's later answers.
//
// # Usage, compaction, tracing
//
// Every model call's usage, stop reason and provider ids are recorded with its answer, and the
// run's totals and last stop reason on the run. A request refused with chat.ErrContextWindow
// compacts the thread once (the summary written by the same model) and is sent once more;
// Runner.Compaction compacts a thread after its run when the policy says so. Runs, model calls
// and tool calls are OpenTelemetry spans named by the GenAI semantic conventions (invoke_agent,
// chat, execute_tool), no-ops unless the host sets a tracer provider; logs go to Runner.Logger
// with the persona, the run key and the correlation id.
package agent
