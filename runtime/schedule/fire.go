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
// tools, with the run's tool rounds recorded against Fire.Run. It returns the run's final
// state, which the scheduler records with store.FinishRun:
//
//   - a nil error and a Finish whose Status is "" or RunSucceeded: the run succeeded; Status
//     RunFailed, RunSkipped or RunAbandoned (with a Reason) records that instead;
//   - an error: the run failed, with the error's text as its reason; StopReason and Usage of the
//     returned Finish are kept;
//   - an error after ctx was cancelled (the scheduler is stopping): the run is recorded
//     abandoned, ReasonStopped.
//
// ctx is cancelled when the scheduler stops, when the Tick that started the run is cancelled,
// or when the run's lease was lost (another replica took the run over after this one failed to
// renew it in time); the Runner should then return promptly. A Runner is called from several
// goroutines at once (one per running fire).
type Runner interface {
	RunFire(ctx context.Context, f Fire) (store.Finish, error)
}

// RunnerFunc adapts a function to a Runner.
type RunnerFunc func(ctx context.Context, f Fire) (store.Finish, error)

// RunFire calls fn(ctx, f).
func (fn RunnerFunc) RunFire(ctx context.Context, f Fire) (store.Finish, error) { return fn(ctx, f) }

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
	// ReasonStopped: the run was abandoned because its scheduler stopped (Stop's deadline, or
	// the context of Start or Tick) before the Runner finished.
	ReasonStopped = "scheduler stopped"
)
