// Package schedule fires a persona's responsibilities on their cron schedules.
//
// Start from Parse (a responsibility's Cron, whose Next, Prev and Fires compute its fires) and
// New (a Scheduler over a store, run with Start and Stop or one Tick at a time). When a
// schedule fires across daylight saving time, and running the scheduler on several replicas,
// are docs/scheduling.md in the repository.
//
// # Fires
//
// A responsibility's schedule (a cron expression and an IANA time zone, from the spec) parses
// into a Cron, whose Next, Prev and Fires compute its fires: the instants at which the
// responsibility runs. The expression is read by robfig/cron/v3's ParseStandard, the parser
// spec validation uses, and the zone is loaded with internal/zone, validation's loader, so an
// expression that validates is the expression that fires.
//
// Cron evaluates robfig/cron's parsed fields on wall-clock times (the zone's clock readings
// taken as naive dates and times), where robfig/cron's own search is exact, and maps each
// wall-clock time to an instant itself: a time the clocks skip in a spring-forward gap fires
// once at the end of the gap, a time they repeat in a fall-back overlap fires once at its first
// occurrence. robfig/cron's Schedule.Next, run in the zone, instead skips the first and fires
// the second twice. See Cron for the exact rule.
//
// # Scheduler
//
// A Scheduler fires the enabled responsibilities of a set of personas over a store shared by any
// number of replicas. Each pass (Tick, or the loop of Start) claims the latest due fire of every
// responsibility with one INSERT into the store's runs table, keyed by the fire (RunKey: persona,
// responsibility, instant in UTC); only the replica whose INSERT creates the run hands it to its
// Runner, and records the outcome. A fire another replica settled already costs a read, not a
// write, and replicas go through the responsibilities from different places, so that at a busy
// instant they mostly claim different fires instead of racing for the same ones. Around that
// claim, the runs table carries the rest:
//
//   - one clock: the scheduler judges a fire due on its store's clock (StoreClock, the
//     default), which is the database's clock as the store measures it, never ahead of it
//     (store.Store.Now). Leases are stamped and judged on the same clock, so a replica whose
//     local clock is ahead or behind neither runs a fire early, nor records a fire that is not
//     due yet, nor takes a live run over. The tolerance is the store's measurement error, half
//     a round trip to the database plus its clock's resolution (well under a millisecond on a
//     local network; 0.5 ms on SQLite), plus 200 ppm of drift between measurements (once a
//     minute); a store that cannot measure the clock to within a second refuses to open.
//   - overlap: one run of a responsibility at a time. A fire is skipped as overlapping
//     (ReasonOverlap) only when the previous run of its responsibility was running at the fire's
//     instant as that run's record shows: it started before the instant and its FinishedAt is
//     after it (or it is still recorded running under a live lease). While the previous run is
//     recorded running under a live lease, the fire is not settled: its claim waits (the Start
//     loop looks again every 250 ms, and at once when a run of its own ends), because a run that
//     ended may still have its record on its way — on SQLite the finished run's status write can
//     wait seconds for the write lock while other replicas' claims take it. FinishedAt is
//     stamped before that write waits, so when the record arrives it says whether the run ended
//     before the fire: then the fire runs, as late as the record was; a record that arrives only
//     after the next fire is due leaves the fire missed (nothing overlapped it; it was not run
//     in time).
//   - leases: a claimed run's lease (DefaultLease, one minute) is renewed every third of it
//     while the Runner works; a replica that dies stops renewing, and once the lease expired on
//     the database's clock another replica takes the run over (Fire.Run.Attempt above 1, at most
//     DefaultMaxAttempts holders) or records it abandoned (ReasonLeaseExpired). A run whose
//     holder died that way overlaps no fire: the next fire runs once it is abandoned.
//   - failures: the Runner says whether the run ended (see Runner). A final result is recorded,
//     a failure logged at Error with the persona, the responsibility and the fire; an attempt
//     that stopped transiently is retried on the same claim with exponential backoff and jitter
//     (DefaultRetryInitial 2 s doubling to DefaultRetryMax 5 min, each wait 0.5 to 1.5 times
//     itself, or the Runner's RetryAt when later), each retry logged at Warn, as long as it
//     starts inside the fire's catch-up window and before the responsibility's next fire is
//     due; then the run is recorded failed with the error and why it was not retried. Every
//     Runner call's outcome (the output text, the usage) reaches the host through WithResults.
//   - missed fires and catch-up: after downtime the latest missed fire runs when it is inside
//     the catch-up window (DefaultCatchUp, one hour), and the fires before it (at most
//     DefaultMaxMissed, the most recent) are recorded skipped, missed or overlap, in one
//     statement per responsibility. A pass claims every responsibility's due fire before it
//     records any backlog, each on the clock of its turn, and stops recording the backlog when
//     a fire comes due meanwhile (the next pass claims it first), so catching up never makes
//     an on-time fire late.
//   - running again: RunAgain reopens a failed, abandoned or skipped fire on request
//     (store.ReopenRun, with who asked and why as a run event) and runs it as one more attempt;
//     a fire never recorded is recorded missed first. A fire reopened in the store without a
//     holder (store.ReopenRun with Reopen.Holder "", what `personagen fire run` and the console
//     do, which have no scheduler of their own) is running with its lease released: the next
//     sweep of a scheduler that has its responsibility takes it over and runs it the same way,
//     whatever its age; one whose instant is not a fire of the schedule is abandoned
//     (ReasonNotAFire).
//   - stopping: Stop waits for the runs in progress, and at its deadline cancels those still
//     going and gives them back instead of ending them (the service's rule for every run, see
//     runtime/service): each stays running, resumable, with reason ReasonStopped and its lease
//     released (store.StopRun; a run waiting for a retry keeps its retry time). The next pass of
//     any scheduler that has its responsibility — another replica's, or this one's after a
//     restart — takes it over at once (not after the lease), whatever fires came due meanwhile
//     (they wait for it as for any running run), and resumes the same run: same run key,
//     Fire.Run.Attempt one more, recorded rounds replayed, so a non-idempotent tool runs at
//     most once. Only a run given back more than the catch-up window ago (no scheduler ran
//     meanwhile) is abandoned, ReasonStopped, and the latest fire runs instead. A cancelled
//     Tick, RunAgain or Start context gives its runs back the same way; a replica killed
//     outright leaves its runs to the lease expiry above.
//
// The status trail of a responsibility is its rows in the runs table (store.Runs with Kind
// store.RunScheduled), with store.RunEvents for the requests that reopened a run. Data flows one
// way: the scheduler decides when and where a fire runs; the Runner (the runner package, or a
// host's own) decides what a run does.
package schedule
