package agent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/chat"
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
	// DefaultLeaseFor is a run's lease when Runner.LeaseFor is 0. The runner renews it every
	// third (10 s), so a worker that died stops holding its runs at most 30 s after its last
	// renewal, and another worker resumes them then; a worker that stops gracefully releases them
	// at once. Leases are judged on the store's clock, so replicas' clocks must agree to well
	// within the lease.
	DefaultLeaseFor = 30 * time.Second
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
	// personas use several providers routes by Request.Model.Provider in a chat.ModelFunc.
	Model chat.Model
	// Holder names this worker in run leases. It must be unique among the workers running at
	// once (two live processes must never share it). A name the host keeps across restarts (a
	// replica's or pod's name) makes a restarted worker resume the runs it held at once, without
	// waiting for their leases, each such resume counting as a fault of the run (see MaxFaults).
	// "" = a name chosen once per Runner: "<hostname>/<pid>/<12 random hex digits>", unique per
	// Runner even when containers share pid 1 or one process has several Runners, and therefore
	// new after a restart: the restarted worker resumes its cut-off runs when their leases
	// expire (LeaseFor).
	Holder string
	// LeaseFor is the lease a run is started with and renewed for (every third of it) while it
	// works; 0 = DefaultLeaseFor (30 s). Another worker may resume a run once its lease expired;
	// an attempt that stops without finishing its run releases the lease at once.
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
	// persona's Mailbox, to the answered message's Reply-To or From, with the threading headers),
	// which the runner also tries once, without text, before the run's first model call, so a
	// persona without a mailbox address fails the run before anything is paid for. The runner
	// stores what it returns in the answered message's mailbox with the run's key, so it must
	// derive the reply's message id from runKey alone: a retry then finds the stored reply
	// instead of storing a second one. An error, a nil message, or a message the store refuses
	// as invalid fails the run (store.FailureHostError); a panic is a fault (MaxFaults).
	Compose func(persona *runtime.Persona, answered *history.Message, runKey, text string, date time.Time) (*history.Message, error)
	// Logger receives the runs' logs, each with the persona, the run key and the correlation id,
	// and the thread and message seq of a reply run or the responsibility and fire instant of a
	// scheduled one; nil = slog.Default().
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

	mu     sync.Mutex
	active map[string]bool // the keys of the runs this Runner is working on
}

// Inbound is a reply run to carry out: Persona answers the stored message Message.Seq.
type Inbound struct {
	// Persona is the persona that answers.
	Persona *runtime.Persona
	// Message names the stored inbound message to answer by its Seq (store.AppendMessage's,
	// store.Message's, mail.Delivery's), which is required. The run reads the message as the
	// store holds it (store.MessageBySeq): its thread, mailbox, message id, headers and bodies are
	// the stored ones, never this copy's, so one stored message has one run and one reply
	// however a caller spells it. Every other field may be left zero; a field that is set must
	// equal the stored one (Date to the microsecond, lists element for element, attachments by
	// their metadata), or Reply refuses the Inbound with ErrInvalidJob naming the field. The
	// attachments' Data, which the store does not keep, are taken from here when the host has
	// them, and reach the model as parts.
	Message store.Message
	// Key is the run's key; "" = ReplyKey(Persona.Name, the stored message's Mailbox, its
	// MessageID), so a redelivered message resumes its run. A host that wants a second run for
	// one message (after a failed one, say) gives another key.
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
	Messages []chat.Message
	// Turns are the run's model calls as recorded, earlier attempts' included, in order: each
	// with its Usage, stop reason, model and provider ids.
	Turns []store.Turn
	// Usage is the run's total usage: every recorded model call and the compaction summaries
	// this call requested.
	Usage chat.Usage
	// StopReason is the stop reason of the run's last model call.
	StopReason chat.StopReason
	// Replayed counts the tool rounds read back from the store instead of run, and InDoubt the
	// calls the model was told have an unknown outcome (a call of a tool that is not idempotent,
	// cut off by a crash).
	Replayed int
	InDoubt  int
	// AlreadyFinished is set when the run had finished before this call: nothing ran.
	AlreadyFinished bool
	// Approvals are, for a run that waits for approval (Run.Status store.RunWaiting, the error
	// a *store.WaitingError), its calls that wait for a decision, and WaitUntil the earliest of
	// their deadlines: the run can resume when the last is decided, at WaitUntil at the latest.
	Approvals []store.Approval
	WaitUntil time.Time
	// Finish is the final state the runner recorded (or, for a Fire with Run set, the one for
	// the caller to record). When the attempt stopped without finishing the run, Status is ""
	// and Reason, Class and Fault say how it stopped (for a claimed run, what the caller may
	// record); when the run paused for approval, Status is store.RunWaiting and there is
	// nothing to record (the runner recorded the pause).
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
	return DefaultLeaseFor
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
// if the process had died: nothing of the stop is recorded.
func (r *Runner) at(point string) error {
	if r.hook == nil {
		return nil
	}
	if err := r.hook(point); err != nil {
		return &injectedError{err}
	}
	return nil
}

// enter marks the run key as worked on by this Runner; false when it already is.
func (r *Runner) enter(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active[key] {
		return false
	}
	if r.active == nil {
		r.active = map[string]bool{}
	}
	r.active[key] = true
	return true
}

// leave unmarks the run key.
func (r *Runner) leave(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.active, key)
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

// Reply answers the stored message in.Message.Seq with in.Persona in a reply run, or resumes
// that run, or returns it when it has finished.
//
// The message is read from the store (see Inbound.Message: the stored row decides, a caller's
// field that disagrees with it is refused with ErrInvalidJob naming the field). The run is keyed
// by in.Key (default ReplyKey of the stored mailbox and message id). When the key is new the run
// starts, fixing its view of the thread (what the store holds when it starts: the messages up to
// the answered one and the replies of earlier runs, and the compaction in use); when it exists
// the stored run decides: a finished run returns its Result (AlreadyFinished, its stored reply)
// and nothing runs — a failed one with an error wrapping store.ErrRunFinished that names its
// class and reason; a running run that no live lease holds (an attempt stopped and released it,
// its worker died and the lease expired, or this Runner's Holder held it before a restart) is
// resumed (store.ResumeRun) — the recorded rounds are replayed, not run again, and the next
// model call gets the request an uninterrupted run would have sent; a running run under another
// worker's live lease, or one this Runner is already working on, returns an error wrapping
// store.ErrLeaseHeld; one whose retry time has not come returns a *RunError wrapping
// store.ErrRetryLater. A message marked not to be answered (NotToAnswer) is recorded as a
// skipped run.
//
// One run runs at a time per persona and thread, and a thread stays owned by its run until the
// run finishes: Reply of another message of the thread returns the store's *store.BusyError
// (errors.Is store.ErrBusy), which names the blocking run and says whether it is resumable now
// (BusyError.Resumable). The host resumes a resumable run with Reply of its message
// (Inbound{Persona: p, Message: store.Message{Message: history.Message{Seq:
// busy.Running.MessageSeq}}, Key: busy.Running.Key}), or waits for a held one, then calls Reply
// again; the later run sees the earlier run's reply.
//
// A run offers the model only the tools of the reply chain (runtime.ToolRule.Chains). When the
// model asks for a call whose tool's rule requires approval, the run records the call waiting,
// runs the round's other calls and pauses: the Result has Run.Status store.RunWaiting, the
// waiting calls (Approvals) and WaitUntil, and the error is a *store.WaitingError (errors.Is
// store.ErrWaiting) — not a failure: the run holds no lease and keeps its thread. Reply of the
// run's message returns the same while a call waits, touching nothing, and resumes the run once
// every call is decided or timed out (see the package documentation).
//
// Before the first model call the reply is composed once with the default Compose (no text):
// a persona without a mailbox address, or a message with nobody to reply to, fails the run
// without a model call. The answer is appended to the thread as an outbound message (Compose, in
// reply to the message, with the run key) and the run is recorded succeeded with its stop
// reason and usage.
//
// Every error that stops a run after it started is classified (the store.FailureClass
// constants; docs/reliability.md has the table) and returned as a *RunError. A permanent one — a malformed or
// unrecordable answer, a refused request, ErrMaxTurns, ErrNoAnswer, the context window still
// exceeded after compaction, a Compose failure, the run's MaxFaults-th fault — records the run
// failed with its reason and class; the thread is free for its next message and the run never
// calls the model again. A transient one — a cancelled ctx (a graceful stop), a timeout, a
// transient model or database error, a fault below MaxFaults — records the error, its class and
// the retry time on the run and releases its lease in one statement (store.StopRun): calling
// Reply again, on any worker, resumes the run at once (or from RetryAt). A panic anywhere in the
// attempt (a resolver, the model adapter, Compose) is recovered and is a fault. The Result is
// returned whenever the run started, with an error too.
func (r *Runner) Reply(ctx context.Context, in Inbound) (*Result, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if in.Persona == nil || in.Persona.MessageChain == nil {
		return nil, fmt.Errorf("%w: reply: a persona with a message chain is required", ErrInvalidJob)
	}
	if in.Message.Seq < 1 {
		return nil, fmt.Errorf("%w: reply: Inbound.Message.Seq must name the stored message (got %d)", ErrInvalidJob, in.Message.Seq)
	}
	stored, err := r.Store.MessageBySeq(ctx, in.Message.Seq)
	if errors.Is(err, store.ErrMessageNotFound) {
		return nil, fmt.Errorf("%w: reply: %w", ErrInvalidJob, err)
	}
	if err != nil {
		return nil, fmt.Errorf("agent: reply to seq %d: %w", in.Message.Seq, err)
	}
	m, err := answered(in.Message, stored)
	if err != nil {
		return nil, err
	}
	if m.Direction == history.Outbound {
		return nil, fmt.Errorf("%w: reply: message %q (seq %d) is outbound", ErrInvalidJob, m.MessageID, m.Seq)
	}
	key := in.Key
	if key == "" {
		key = ReplyKey(in.Persona.Name, m.Mailbox, m.MessageID)
	}
	a := r.newAttempt(in.Persona, key, in.CorrelationID, in.Config)
	a.inbound = &m
	a.log = a.log.With("thread", m.ThreadID, "seq", m.Seq)
	return a.runReply(ctx)
}

// answered returns the stored message with the attachments' Data of given, after checking that
// every field given sets agrees with stored; otherwise an ErrInvalidJob naming the first field
// that does not.
func answered(given, stored store.Message) (store.Message, error) {
	quote := func(v any) string { return runtime.Clip(fmt.Sprintf("%q", v), 120) }
	sameAttachments := slices.EqualFunc(given.Attachments, stored.Attachments, func(a, b history.Attachment) bool {
		return a.ID == b.ID && a.Filename == b.Filename && a.ContentType == b.ContentType && a.Size == b.Size
	})
	for _, f := range []struct {
		name        string
		set, same   bool
		given, want any
	}{
		{"ThreadID", given.ThreadID != "", given.ThreadID == stored.ThreadID, given.ThreadID, stored.ThreadID},
		{"Mailbox", given.Mailbox != "", given.Mailbox == stored.Mailbox, given.Mailbox, stored.Mailbox},
		{"MessageID", given.MessageID != "", given.MessageID == stored.MessageID, given.MessageID, stored.MessageID},
		{"InReplyTo", given.InReplyTo != "", given.InReplyTo == stored.InReplyTo, given.InReplyTo, stored.InReplyTo},
		{"References", len(given.References) > 0, slices.Equal(given.References, stored.References), given.References, stored.References},
		{"Direction", given.Direction != "", given.Direction == stored.Direction, given.Direction, stored.Direction},
		{"From", given.From != "", given.From == stored.From, given.From, stored.From},
		{"To", len(given.To) > 0, slices.Equal(given.To, stored.To), given.To, stored.To},
		{"Cc", len(given.Cc) > 0, slices.Equal(given.Cc, stored.Cc), given.Cc, stored.Cc},
		{"ReplyTo", len(given.ReplyTo) > 0, slices.Equal(given.ReplyTo, stored.ReplyTo), given.ReplyTo, stored.ReplyTo},
		{"Date", !given.Date.IsZero(), given.Date.UTC().Truncate(time.Microsecond).Equal(stored.Date),
			given.Date.UTC().Format(time.RFC3339Nano), stored.Date.Format(time.RFC3339Nano)},
		{"Subject", given.Subject != "", given.Subject == stored.Subject, given.Subject, stored.Subject},
		{"Text", given.Text != "", given.Text == stored.Text, given.Text, stored.Text},
		{"HTML", given.HTML != "", given.HTML == stored.HTML, given.HTML, stored.HTML},
		{"Attachments", len(given.Attachments) > 0, sameAttachments, len(given.Attachments), len(stored.Attachments)},
		{"RunKey", given.RunKey != "", given.RunKey == stored.RunKey, given.RunKey, stored.RunKey},
		{"NotToAnswer", given.NotToAnswer != "", given.NotToAnswer == stored.NotToAnswer, given.NotToAnswer, stored.NotToAnswer},
		{"Problems", len(given.Problems) > 0, slices.Equal(given.Problems, stored.Problems), given.Problems, stored.Problems},
	} {
		if f.set && !f.same {
			what := fmt.Sprintf("%s, stored %s", quote(f.given), quote(f.want))
			if f.name == "Attachments" {
				what = fmt.Sprintf("%d attachments whose metadata differ from the %d stored", f.given, f.want)
			}
			return store.Message{}, fmt.Errorf("%w: reply: Inbound.Message.%s disagrees with the stored message seq %d (%s); "+
				"leave it zero or pass the message as stored", ErrInvalidJob, f.name, stored.Seq, what)
		}
	}
	m := stored
	if len(given.Attachments) > 0 {
		m.Attachments = slices.Clone(stored.Attachments)
		for i := range m.Attachments {
			m.Attachments[i].Data = given.Attachments[i].Data
		}
	}
	return m, nil
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
	a.log = a.log.With("responsibility", resp.Name, "fire_at", f.At.UTC())
	a.claimed = f.Run
	return a.runFire(ctx)
}

// RunFire carries out a fire a schedule.Scheduler claimed, making a Runner the scheduler's
// schedule.Runner: Fire with f.Run, under the scheduler's lease, which the scheduler renews and
// finishes with the returned FireResult's Finish. Finish.Status says whether the run ended: a
// permanent failure (or the run's MaxFaults-th fault, or a fire this runner cannot run,
// ErrInvalidJob) is Status store.RunFailed with Reason and Class; a transient stop is Status ""
// with Reason, Class and Fault, the error a *RunError that is not Final, and RetryAt the
// provider's retry time when it asked for a wait; the scheduler retries it. Text is the run's
// output, and Finish carries its usage and stop reason either way. A claimed run whose Faults
// reached MaxFaults (the scheduler's takeovers of dead replicas count them) is failed without
// calling the model.
func (r *Runner) RunFire(ctx context.Context, f schedule.Fire) (schedule.FireResult, error) {
	run := f.Run
	res, err := r.Fire(ctx, Fire{Persona: f.Persona, Responsibility: f.Responsibility.Name, At: f.At, Run: &run})
	switch {
	case res != nil:
		out := schedule.FireResult{Finish: res.Finish, Text: res.Text}
		var re *RunError
		if errors.As(err, &re) && !re.Final {
			out.RetryAt = re.RetryAt
		}
		return out, err
	case errors.Is(err, ErrInvalidJob):
		return schedule.FireResult{Finish: store.Finish{Status: store.RunFailed, Reason: err.Error()}}, err
	}
	return schedule.FireResult{}, err
}

var _ schedule.Runner = (*Runner)(nil)
