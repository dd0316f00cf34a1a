// Package agent runs personas: a Runner answers a stored inbound message with a reply run
// (Reply) and carries out a fire of a responsibility with a scheduled run (Fire), in a loop of
// model calls and tool rounds recorded in the store as they happen, so that a run cut off at any
// point — a crash, a cancelled context, a lost database connection — resumes where it stopped.
//
// Start from Runner: Reply answers a stored inbound message, Fire carries out a fire of a
// responsibility, and a Runner is the schedule.Runner a scheduler hands its fires to. Its
// spans, logs and database round trips are docs/runner.md in the repository.
//
// # The loop
//
// A run assembles its request with the persona's chain (runtime.BuildRequest), calls the model
// (chat.Model), and while the model asks for tools: records its answer (store.StartTurn),
// runs the calls — in parallel, at most Runner.Parallel (DefaultParallel) at once — records the
// round (store.RecordRound, owned by the answered message, or by the run when it answers none),
// appends the calls and results to the conversation and calls the model again. It stops at a
// final answer, which a reply run appends to the thread as an outbound message, or after
// Runner.MaxTurns (DefaultMaxTurns) model calls with ErrMaxTurns. A tool's error or panic, a call
// of an unknown tool and arguments that are not a JSON object are failed results the model
// reads, not failures of the run.
//
// # Identity, serialisation and the run's view
//
// A run is keyed by ReplyKey (persona, mailbox, message id) or schedule.RunKey (persona,
// responsibility, fire instant) unless the host gives a key, and lives in the store's runs
// table under a lease the runner renews. One run runs at a time per persona and thread: Reply
// for another message of a thread whose run is in progress returns a *store.BusyError, and the
// host answers that message after the run finished. A reply run fixes its view of the thread
// when it starts (history.View, recorded on the run): the messages up to the one it answers, the
// replies of earlier runs, and the compaction then in use — later arrivals and later
// compactions are not in it, on any attempt.
//
// # Resume and at-most-once tools
//
// A run found running when Reply or Fire is called again (the same worker's retry, or another
// worker once the lease expired) resumes: its recorded rounds are replayed into the
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
