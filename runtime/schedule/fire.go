package schedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/personagen/personagen/runtime"
	"github.com/personagen/personagen/runtime/store"
)

// Fire is one fire of a responsibility that a scheduler claimed and hands to its Runner.
type Fire struct {
	// Persona is the persona whose responsibility fires, as registered with the scheduler.
	Persona *runtime.Persona
	// Responsibility is the responsibility that fires, as the persona holds it; a run's
	// Invocation takes its address.
	Responsibility runtime.Responsibility
	// At is the fire's scheduled instant, in UTC.
	At time.Time
	// Run is the claimed run as stored: Run.Key is the run's key (the RunID of its tool
	// rounds), Run.ID the ID of its store.OwnerRun, Run.Lease this scheduler's lease (the
	// scheduler renews it while the Runner works), and Run.Attempt 1 for a fresh run or more for
	// a run taken over from a replica that died mid-run (resume its recorded rounds).
	Run store.Run
}

// Runner carries out a fire: a scheduled run of the responsibility's chain, the model and its
// tools, with the run's tool rounds recorded against Fire.Run. Its FireResult says whether the
// run ended, and the scheduler records it with store.FinishRun:
//
//   - Finish.Status RunSucceeded, RunFailed, RunSkipped or RunAbandoned: the run ended so; it is
//     recorded with Finish's Reason (for a failure without one, the error's text), StopReason
//     and Usage, and is not run again (RunAgain reopens it on request). A failure is logged at
//     Error with the persona, the responsibility and the fire's instant.
//   - Finish.Status "" and a nil error: the run succeeded.
//   - Finish.Status "" and an error: the attempt stopped before the run ended (a transient
//     failure: the network, a provider's 429 or 5xx, a lost database connection), and the run
//     stays resumable. The scheduler keeps the lease and calls the Runner again with the same
//     Fire after an exponential backoff with jitter (WithRetry), or at RetryAt when that is
//     later, as long as the retry starts before the fire's catch-up window ends and before the
//     responsibility's next fire is due; otherwise it records the run failed, its reason the
//     error's text and why it was not retried. Each such attempt is logged at Warn.
//   - Finish.Status "" and an error after ctx was cancelled because the scheduler stops: the run
//     is given back (see Scheduler.Stop): it stays resumable, its lease released, and the next
//     pass of any scheduler that has its responsibility resumes it, Attempt one more.
//
// A panic is a failure ("the runner panicked: ..."). ctx is cancelled when the scheduler stops,
// when the Tick that started the run is cancelled, or when the run's lease was lost (another
// replica took the run over after this one failed to renew it in time); the Runner should then
// return promptly. A Runner is called from several goroutines at once (one per running fire),
// and again for the same fire only after its previous call returned.
type Runner interface {
	RunFire(ctx context.Context, f Fire) (FireResult, error)
}

// RunnerFunc adapts a function to a Runner.
type RunnerFunc func(ctx context.Context, f Fire) (FireResult, error)

// RunFire calls fn(ctx, f).
func (fn RunnerFunc) RunFire(ctx context.Context, f Fire) (FireResult, error) { return fn(ctx, f) }

// FireResult is what one call of a Runner did with a fire.
type FireResult struct {
	// Finish is the run's final state (see Runner): Status "" while the run has not ended, with
	// the StopReason and Usage so far.
	Finish store.Finish
	// Text is the run's output: the final answer's text ("" when there is none).
	Text string
	// RetryAt, for an attempt that stopped transiently, is the earliest time to try again (a
	// provider's retry time); zero leaves the wait to the scheduler's backoff.
	RetryAt time.Time
}

// Report is the outcome of one Runner call, which the scheduler hands to the function
// WithResults sets once it has acted on it: recorded the run's end, or scheduled its retry.
type Report struct {
	// Fire is the fire as the Runner got it.
	Fire Fire
	// Result and Err are what the Runner returned.
	Result FireResult
	Err    error
	// Recorded is the final state the scheduler recorded; Status "" when the run goes on: a
	// retry is due at RetryAt, the run was given back (Released), or the run's lease was lost to
	// another replica, which carries it on.
	Recorded store.Finish
	RetryAt  time.Time
	// Released says that the scheduler stopped and gave the run back: it is running with its
	// lease released (reason ReasonStopped), for the next pass of any scheduler to resume.
	Released bool
}

// RunKey returns the run key of persona's responsibility firing at the instant at:
// "fire:<persona>/<responsibility>@<at in UTC, RFC 3339>", for example
// "fire:research-assistant/daily-digest@2026-03-29T06:00:00Z". When a name holds "/" or "@"
// (which would make the key ambiguous) or the key would exceed store.MaxNameChars characters,
// the two names are replaced by the first 32 hex digits of the SHA-256 of
// persona + "\x00" + responsibility. Every replica derives the same key for the same fire, and
// the store keeps at most one run per key.
func RunKey(persona, responsibility string, at time.Time) string {
	when := at.UTC().Format(time.RFC3339Nano)
	key := "fire:" + persona + "/" + responsibility + "@" + when
	if strings.ContainsAny(persona+responsibility, "/@") || utf8.RuneCountInString(key) > store.MaxNameChars {
		sum := sha256.Sum256([]byte(persona + "\x00" + responsibility))
		key = "fire:" + hex.EncodeToString(sum[:16]) + "@" + when
	}
	return key
}

// The reasons the scheduler records on the fires it does not run, or gives up.
const (
	// ReasonOverlap: the fire was skipped because the previous run of its responsibility was
	// still running.
	ReasonOverlap = "overlap"
	// ReasonMissed: the fire was skipped because no scheduler claimed it in time: a later fire
	// was already due, or it was older than the catch-up window when a scheduler came to it.
	ReasonMissed = "missed"
	// ReasonLeaseExpired: the run was abandoned because its replica stopped renewing its lease
	// (it died or hung), and it was not taken over: a later fire was due, it was older than the
	// catch-up window, or it had used up its attempts.
	ReasonLeaseExpired = "lease expired"
	// ReasonStopped: the run was cut off because its scheduler stopped (Stop's deadline, or the
	// context of Start, Tick or RunAgain) before the Runner finished. It is the reason of a run
	// given back (running, its lease released) until a scheduler resumes it, and of one
	// abandoned because no scheduler resumed it within the catch-up window after it was given
	// back.
	ReasonStopped = "scheduler stopped"
)
