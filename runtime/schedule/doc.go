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
// Runner, and records the outcome. Around that claim, the runs table carries the rest:
//
//   - overlap: one run of a responsibility at a time; a fire due while it runs is recorded
//     skipped (ReasonOverlap);
//   - leases: a claimed run's lease is renewed while the Runner works; a replica that dies stops
//     renewing, and once the lease expired another replica takes the run over (Fire.Run.Attempt
//     above 1) or records it abandoned (ReasonLeaseExpired);
//   - missed fires: after downtime the latest missed fire runs when it is inside the catch-up
//     window, and the fires before it are recorded skipped (ReasonMissed);
//   - stopping: Stop waits for the runs in progress, and at its deadline records those still
//     going abandoned (ReasonStopped), so a clean stop leaves no run recorded running.
//
// The status trail of a responsibility is its rows in the runs table (store.Runs with Kind
// store.RunScheduled). Data flows one way: the scheduler decides when and where a fire runs; the
// Runner (the runner package, or a host's own) decides what a run does.
package schedule
