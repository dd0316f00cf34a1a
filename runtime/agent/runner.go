package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/history"
	"github.com/personagen/personagen/runtime/schedule"
	"github.com/personagen/personagen/runtime/store"
)

// Defaults of a Runner's limits.
const (
	// DefaultMaxTurns is how many model calls a run may make when Runner.MaxTurns is 0.
	DefaultMaxTurns = 16
	// DefaultParallel is how many tool calls of one round run at once when Runner.Parallel is 0.
	DefaultParallel = 4
)

// ErrMaxTurns is returned (wrapped) when a run made MaxTurns model calls without a final
// answer; the run is recorded failed.
var ErrMaxTurns = errors.New("agent: the run reached its turn limit without a final answer")

// ErrNoAnswer is returned (wrapped) when the model ended the run without a usable final answer
// (no text, or a refusal); the run is recorded failed with the stop reason.
var ErrNoAnswer = errors.New("agent: the model gave no final answer")

// ErrInvalidJob is returned (wrapped) for an Inbound or a Fire the runner cannot run: no
// persona, a message that is not stored, an unknown responsibility, a claimed run of another
// kind or persona.
var ErrInvalidJob = errors.New("agent: invalid job")

// Runner runs personas: it answers stored inbound messages (Reply) and carries out the fires of
// responsibilities (Fire), calling Model, executing the persona's tools and recording everything
// in Store so that a run interrupted at any point resumes where it stopped (see the package
// documentation). Store and Model are required; every other field has a default. A Runner is safe
// for concurrent use once its fields are set; do not change them afterwards.
type Runner struct {
	// Store holds the threads, the runs and their records.
	Store *store.Store
	// Model answers every model call of every run, the compaction summaries included. A host whose
	// personas use several providers routes by Request.Model.Provider in a runtime.ModelFunc.
	Model runtime.Model
	// Holder names this worker in run leases; it must be unique per worker and stable across the
	// worker's retries. "" = a random name chosen once ("host/pid/random").
	Holder string
	// LeaseFor is the lease a run is started with and renewed for (every third of it) while it
	// works; 0 = store.DefaultRunLease (5 minutes). Another worker may take a run over once its
	// lease expired.
	LeaseFor time.Duration
	// MaxTurns bounds the model calls of one run; 0 = DefaultMaxTurns.
	MaxTurns int
	// Parallel bounds how many tool calls of one round run at once; 0 = DefaultParallel, 1 runs
	// them one after another.
	Parallel int
	// Compaction, when set, is applied to a reply run's thread after the reply is stored: when
	// the policy's trigger fires, the thread is compacted with a summary written by Model. nil
	// compacts only when a model call is refused because the request does not fit the context
	// window (then with the default policy's Keep).
	Compaction *runtime.CompactionPolicy
	// Compose builds the outbound reply of a reply run; nil uses mail.NewReply (from the
	// persona's Mailbox, to the answered message's Reply-To or From, with the threading headers).
	// The runner stores what it returns in the answered message's mailbox with the run's key, so
	// it must derive the reply's message id from runKey alone: a retry then finds the stored
	// reply instead of storing a second one.
	Compose func(persona *runtime.Persona, answered *history.Message, runKey, text string, date time.Time) (*history.Message, error)
	// Logger receives the runs' logs, each with the persona, the run key and the correlation id;
	// nil = slog.Default().
	Logger *slog.Logger
	// TracerProvider makes the runs' spans (OpenTelemetry GenAI conventions); nil = the global
	// provider (otel.GetTracerProvider), a no-op until the host sets one.
	TracerProvider trace.TracerProvider
	// NoChatSpans leaves out the chat span of each model call, for a Model that already emits
	// one (so no call has two); the invoke_agent and execute_tool spans stay.
	NoChatSpans bool
	// Now is the clock of reply dates; nil = time.Now.
	Now func() time.Time

	holderOnce sync.Once
	holder     string
	hook       func(point string) error // test hook: see export_test.go
}

// Inbound is a reply run to carry out: Persona answers Message.
type Inbound struct {
	// Persona is the persona that answers.
	Persona *runtime.Persona
	// Message is the inbound message as stored (store.AppendMessage, store.Message): its Seq,
	// ThreadID, Mailbox and MessageID must be set. Attachments' Data, when the host has it, reach
	// the model as parts (the store keeps metadata only).
	Message store.Message
	// Key is the run's key; "" = ReplyKey(Persona.Name, Message.Mailbox, Message.MessageID), so a
	// redelivered message resumes its run. A host that wants a second run for one message (after
	// a failed one, say) gives another key.
	Key string
	// CorrelationID ties the run's logs together; "" = the run key.
	CorrelationID string
	// Config is the run's Invocation.Config (host configuration for resolvers and tools).
	Config map[string]string
}

// Fire is a scheduled run to carry out: Persona's responsibility named Responsibility, for its
// fire at At.
type Fire struct {
	// Persona is the persona whose responsibility fires.
	Persona *runtime.Persona
	// Responsibility names the responsibility (runtime.Persona.Responsibility).
	Responsibility string
	// At is the fire's scheduled instant.
	At time.Time
	// Key is the run's key; "" = schedule.RunKey(Persona.Name, Responsibility, At), the key a
	// scheduler claims the fire with.
	Key string
	// Run, when set, is a run the caller started (claimed) and finishes itself, such as a
	// scheduler's claim of a fire: the runner works on it under Run.Lease.Holder, resuming what
	// is recorded for it, and neither starts, renews nor finishes it; Result.Finish is what to
	// record. Key is then ignored.
	Run *store.Run
	// CorrelationID ties the run's logs together; "" = the run key.
	CorrelationID string
	// Config is the run's Invocation.Config.
	Config map[string]string
}

// Result is what a run did.
type Result struct {
	// Run is the run as stored when this call ended (Status running when this attempt stopped
	// before the run finished, or when the caller finishes it).
	Run store.Run
	// Text is the final answer: the reply's text, or a scheduled run's output.
	Text string
	// Reply is the stored outbound reply of a reply run.
	Reply *store.Message
	// Messages is the run's conversation: the last request's messages (the chain's, the inbound
	// turn, every tool round) and the final assistant message.
	Messages []runtime.Message
	// Turns are the run's model calls as recorded, earlier attempts' included, in order: each
	// with its Usage, stop reason, model and provider ids.
	Turns []store.Turn
	// Usage is the run's total usage: every recorded model call and the compaction summaries
	// this call requested.
	Usage runtime.Usage
	// StopReason is the stop reason of the run's last model call.
	StopReason runtime.StopReason
	// Replayed counts the tool rounds read back from the store instead of run, and InDoubt the
	// calls the model was told have an unknown outcome (a call of a tool that is not idempotent,
	// cut off by a crash).
	Replayed int
	InDoubt  int
	// AlreadyFinished is set when the run had finished before this call: nothing ran.
	AlreadyFinished bool
	// Finish is the final state the runner recorded (or, for a Fire with Run set, the one for
	// the caller to record).
	Finish store.Finish
}

// holderName returns Holder, or the random name chosen for this Runner.
func (r *Runner) holderName() string {
	if r.Holder != "" {
		return r.Holder
	}
	r.holderOnce.Do(func() {
		host, _ := os.Hostname()
		var b [6]byte
		rand.Read(b[:])
		r.holder = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	})
	return r.holder
}

func (r *Runner) maxTurns() int {
	if r.MaxTurns > 0 {
		return r.MaxTurns
	}
	return DefaultMaxTurns
}

func (r *Runner) parallel() int {
	if r.Parallel > 0 {
		return r.Parallel
	}
	return DefaultParallel
}

func (r *Runner) leaseFor() time.Duration {
	if r.LeaseFor > 0 {
		return r.LeaseFor
	}
	return store.DefaultRunLease
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.Default()
}

// at runs the test hook at a named point of a run; a non-nil error aborts the attempt there, as
// if the process had died.
func (r *Runner) at(point string) error {
	if r.hook == nil {
		return nil
	}
	return r.hook(point)
}

// check returns an error wrapping ErrInvalidJob when the Runner lacks Store or Model.
func (r *Runner) check() error {
	switch {
	case r == nil:
		return fmt.Errorf("%w: nil Runner", ErrInvalidJob)
	case r.Store == nil:
		return fmt.Errorf("%w: Runner.Store is nil", ErrInvalidJob)
	case r.Model == nil:
		return fmt.Errorf("%w: Runner.Model is nil", ErrInvalidJob)
	}
	return nil
}

// Reply answers in.Message with in.Persona in a reply run, or resumes that run, or returns it
// when it has finished.
//
// The run is keyed by in.Key (default ReplyKey). When the key is new the run starts, fixing its
// view of the thread (what the store holds when it starts: the messages up to the answered one
// and the replies of earlier runs, and the compaction in use); when it exists the stored run
// decides: a finished run returns its Result (AlreadyFinished, its stored reply) and nothing
// runs; a running run of this Runner's Holder, or one whose lease expired (taken over), resumes
// — the recorded rounds are replayed, not run again, and the next model call gets the request an
// uninterrupted run would have sent; a running run of another worker's live lease returns an
// error wrapping store.ErrLeaseHeld. A message marked not to be answered (NotToAnswer) is
// recorded as a skipped run.
//
// One run runs at a time per persona and thread: while another message of the thread is being
// answered Reply returns the store's *store.BusyError (errors.Is store.ErrBusy), and the host
// queues the message and calls Reply again after that run finished (say, with a backoff of a
// few seconds); the later run then sees the earlier run's reply.
//
// The answer is appended to the thread as an outbound message (Compose, in reply to the message,
// with the run key) and the run is recorded succeeded with its stop reason and usage. A run that
// reaches MaxTurns (ErrMaxTurns) or ends without an answer (ErrNoAnswer) is recorded failed.
// Other errors — a cancelled ctx, a model or store error after their own retries, a lost lease
// — stop this attempt and leave the run running, so calling Reply again resumes it (at once for
// this Runner, after the lease for another worker). The Result is returned whenever the run
// started, with an error too.
func (r *Runner) Reply(ctx context.Context, in Inbound) (*Result, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	m := in.Message
	switch {
	case in.Persona == nil || in.Persona.MessageChain == nil:
		return nil, fmt.Errorf("%w: reply: a persona with a message chain is required", ErrInvalidJob)
	case m.Seq < 1 || m.ThreadID == "" || m.MessageID == "":
		return nil, fmt.Errorf("%w: reply: the message must be stored (Seq %d, ThreadID %q, MessageID %q)", ErrInvalidJob, m.Seq, m.ThreadID, m.MessageID)
	case m.Direction == history.Outbound:
		return nil, fmt.Errorf("%w: reply: message %q is outbound", ErrInvalidJob, m.MessageID)
	}
	key := in.Key
	if key == "" {
		key = ReplyKey(in.Persona.Name, m.Mailbox, m.MessageID)
	}
	a := r.newAttempt(in.Persona, key, in.CorrelationID, in.Config)
	a.inbound = &in.Message
	return a.runReply(ctx)
}

// Fire carries out the fire f of a responsibility in a scheduled run, or resumes that run, or
// returns it when it has finished: the responsibility chain, the model and the tools as in a
// reply run, with the rounds owned by the run (store.OwnerRun). The final answer is Result.Text
// (kept with the run's last recorded model call; there is no thread to append it to).
//
// Without f.Run the runner starts the run under schedule.RunKey (or f.Key), renews its lease and finishes
// it, as Reply does. With f.Run — a run a scheduler claimed — it only does the work, under the
// claim's lease holder, and returns in Result.Finish what the caller records with
// store.FinishRun; the error, when there is one, is the run's failure. Errors as for Reply.
func (r *Runner) Fire(ctx context.Context, f Fire) (*Result, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if f.Persona == nil || f.Persona.ResponsibilityChain == nil {
		return nil, fmt.Errorf("%w: fire: a persona with a responsibility chain is required", ErrInvalidJob)
	}
	resp, ok := f.Persona.Responsibility(f.Responsibility)
	if !ok {
		return nil, fmt.Errorf("%w: fire: persona %q has no responsibility %q", ErrInvalidJob, f.Persona.Name, f.Responsibility)
	}
	key := f.Key
	switch {
	case f.Run != nil:
		run := *f.Run
		if run.Kind != store.RunScheduled || run.Persona != f.Persona.Name || run.Responsibility != resp.Name {
			return nil, fmt.Errorf("%w: fire: run %q is a %s run of %s/%s, not of %s/%s", ErrInvalidJob, run.Key,
				run.Kind, run.Persona, run.Responsibility, f.Persona.Name, resp.Name)
		}
		key = run.Key
	case f.At.IsZero():
		return nil, fmt.Errorf("%w: fire: no fire instant", ErrInvalidJob)
	case key == "":
		key = schedule.RunKey(f.Persona.Name, resp.Name, f.At)
	}
	a := r.newAttempt(f.Persona, key, f.CorrelationID, f.Config)
	a.responsibility = &resp
	a.fireAt = f.At
	a.claimed = f.Run
	return a.runFire(ctx)
}

// RunFire carries out a fire a schedule.Scheduler claimed, making a Runner the scheduler's
// schedule.Runner: Fire with f.Run, under the scheduler's lease, which the scheduler renews and
// finishes with the returned FireResult's Finish. Result.Finish.Status says whether the run
// ended: final (succeeded, or failed: ErrMaxTurns, ErrNoAnswer, or a fire this runner cannot
// run, ErrInvalidJob) or "" when the attempt stopped before the run finished (a model or store
// error after their own retries, a cancelled ctx), which the scheduler retries; Text is the
// run's output and Finish carries its usage and stop reason either way.
func (r *Runner) RunFire(ctx context.Context, f schedule.Fire) (schedule.FireResult, error) {
	run := f.Run
	res, err := r.Fire(ctx, Fire{Persona: f.Persona, Responsibility: f.Responsibility.Name, At: f.At, Run: &run})
	switch {
	case res != nil:
		return schedule.FireResult{Finish: res.Finish, Text: res.Text}, err
	case errors.Is(err, ErrInvalidJob):
		return schedule.FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: err.Error()}}, err
	}
	return schedule.FireResult{}, err
}

var _ schedule.Runner = (*Runner)(nil)
