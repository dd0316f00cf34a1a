// Package schedule fires a persona's responsibilities on their cron schedules.
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
package schedule
