package runtime

import (
	"log/slog"

	"github.com/personagen/personagen/runtime/history"
)

// Invocation is the read-only input of one run of a persona's chain: what every resolver of the
// run may read (named so it never reads like context.Context).
//
// Exactly one of Inbound (a reply run) and Responsibility (a scheduled run) is set; BuildRequest
// rejects any other combination. A resolver used in both chains treats the missing one as
// absent. Resolvers must not modify an Invocation or anything it points to.
type Invocation struct {
	// Persona is the persona being run; resolvers read its identity (Name, Description).
	Persona *Persona
	// Config is free-form host configuration (read-only; nil is empty).
	Config map[string]string
	// Logger receives resolver diagnostics; nil means slog.Default().
	Logger *slog.Logger
	// CorrelationID ties the run's logs and records together (e.g. a job id); may be empty.
	CorrelationID string
	// Inbound is the message being answered in a reply run; nil in a scheduled run. When it is
	// stored (Seq > 0), the thread's history is what the store received before it.
	Inbound *history.Message
	// Responsibility is the scheduled task being run; nil in a reply run.
	Responsibility *Responsibility
	// View, when set in a reply run, fixes what the run reads of Inbound's thread (see
	// history.View): ThreadSummary uses View.Compaction instead of reading the source's latest,
	// and ThreadHistory replays the messages up to View.UpToSeq — inbound ones only up to
	// Inbound.Seq — after that compaction's boundary. A runner records the view when a run
	// starts and sets it on every attempt, so a resumed run assembles the same request. nil
	// reads the latest compaction and the messages stored before Inbound.
	View *history.View

	// snap holds what resolvers of this run read once and share (see snapshot.go), so that
	// ThreadSummary and ThreadHistory see the same compaction row even if one completes
	// mid-run. An Invocation therefore serves one run at a time; it must not be copied.
	snap snapshot
}

// Log returns inv.Logger, or slog.Default() when it is nil.
func (inv *Invocation) Log() *slog.Logger {
	if inv == nil || inv.Logger == nil {
		return slog.Default()
	}
	return inv.Logger
}

// Responsibility is the scheduled task that starts a scheduled run: its Name (kebab-case, unique
// within a persona), its Schedule (a standard 5-field cron expression), its Timezone (an IANA
// name such as "Europe/Berlin"; empty means UTC) and whether it is Enabled.
type Responsibility struct {
	Name     string
	Schedule string
	Timezone string
	Enabled  bool
}
