package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// maxRunningFiresPersonas bounds the personas of one RunningFires query (its IN list).
const maxRunningFiresPersonas = 500

// RunningFires returns the scheduled runs of the named personas that are running, oldest
// first: what a scheduler sweeps for runs whose lease expired (a replica died mid-run). It
// reads only running runs, through the index that keeps one running run per persona and
// responsibility, so its cost does not grow with the status trail: one query per 500 personas.
// No personas returns nothing. Errors: the database's (wrapped).
func (s *Store) RunningFires(ctx context.Context, personas []string) ([]Run, error) {
	var out []Run
	for len(personas) > 0 {
		chunk := personas[:min(len(personas), maxRunningFiresPersonas)]
		personas = personas[len(chunk):]
		args := make([]any, len(chunk))
		for i, p := range chunk {
			args[i] = p
		}
		var rows []runRow
		if err := s.db.SelectContext(ctx, &rows, s.runningFiresQuery(len(chunk)), args...); err != nil {
			return nil, fmt.Errorf("store: read running fires: %w", err)
		}
		for _, r := range rows {
			out = append(out, r.run())
		}
	}
	slices.SortFunc(out, func(a, b Run) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// runningFiresQuery is RunningFires' query for n personas.
func (s *Store) runningFiresQuery(n int) string {
	// SQLite: the partial index of unfinished runs (running or waiting), named because without
	// statistics the planner prefers the trail's (persona, responsibility, id) index; its WHERE
	// is repeated, as SQLite uses a partial index only for a query that states its condition.
	// Waiting runs hold no lease to expire and are left out.
	from := "runs INDEXED BY runs_running_responsibility"
	running := "responsibility IS NOT NULL AND status IN ('running', 'waiting') AND status = 'running'"
	if s.dialect == DialectMySQL {
		// The generated column's unique key.
		from, running = "runs", "running_responsibility IS NOT NULL AND status = 'running'"
	}
	return s.dialect.rebind("SELECT " + runColumns + " FROM " + from + " WHERE persona IN (" + placeholders(n) + ") AND " + running)
}

// PersonaResponsibility names one responsibility of one persona.
type PersonaResponsibility struct {
	Persona        string
	Responsibility string
}

// LastFires returns, for every responsibility of the named personas that has a run, the
// latest fire it has a run for (the largest FireAt, whatever the run's status), in UTC: where a
// scheduler resumes after a restart. It reads the fire index (persona, responsibility,
// fire_at), one query per 500 personas, so its cost does not grow with the trail. No personas
// return nothing. Errors: the database's (wrapped).
func (s *Store) LastFires(ctx context.Context, personas []string) (map[PersonaResponsibility]time.Time, error) {
	out := map[PersonaResponsibility]time.Time{}
	for len(personas) > 0 {
		chunk := personas[:min(len(personas), maxRunningFiresPersonas)]
		personas = personas[len(chunk):]
		args := make([]any, len(chunk))
		for i, p := range chunk {
			args[i] = p
		}
		var rows []struct {
			Persona        string `db:"persona"`
			Responsibility string `db:"responsibility"`
			FireAt         dbTime `db:"fire_at"`
		}
		query := s.dialect.rebind(`SELECT persona, responsibility, MAX(fire_at) AS fire_at FROM runs
			WHERE persona IN (` + placeholders(len(chunk)) + `) AND responsibility IS NOT NULL GROUP BY persona, responsibility`)
		if err := s.db.SelectContext(ctx, &rows, query, args...); err != nil {
			return nil, fmt.Errorf("store: read the last fires: %w", err)
		}
		for _, r := range rows {
			out[PersonaResponsibility{r.Persona, r.Responsibility}] = r.FireAt.Time
		}
	}
	return out, nil
}

// maxSkipFiresRows bounds the rows of one SkipFires INSERT.
const maxSkipFiresRows = 200

// SkipFires records the fires runs describe as skipped, each with its Reason, as StartRun
// records one run with Status RunSkipped — but many in one multi-row INSERT (per 200 runs),
// which is what a scheduler needs after downtime, when it records a backlog of missed fires:
// one write, where StartRun would take the database's write lock once per fire. A fire that
// already has a run (under its key, or another run of the same persona, responsibility and
// FireAt) is left as it is, not compared as StartRun compares it. It returns how many runs it
// recorded. Every run must be scheduled, Status RunSkipped; they are all checked before
// anything is written.
//
// Errors: ErrInvalid (wrapped) for a run StartRun would refuse, one that is not a skipped
// scheduled run, or a bad store clock; ctx's error; the database's (wrapped). Lock races are
// retried as for StartRun.
func (s *Store) SkipFires(ctx context.Context, runs []NewRun) (int, error) {
	for _, r := range runs {
		if err := r.validate(); err != nil {
			return 0, err
		}
		if r.Kind != RunScheduled || r.Status != RunSkipped {
			return 0, fmt.Errorf("%w: run %q: SkipFires records skipped scheduled runs (got a %s run, status %q)",
				ErrInvalid, r.Key, r.Kind, r.Status)
		}
	}
	now, err := s.clock()
	if err != nil {
		return 0, err
	}
	d := s.dialect
	stamp := d.timeArg(dbNow(now))
	const cols = "run_key, kind, persona, responsibility, fire_at, status, reason, lease_holder, attempt, started_at, finished_at"
	recorded := 0
	for len(runs) > 0 {
		chunk := runs[:min(len(runs), maxSkipFiresRows)]
		runs = runs[len(chunk):]
		values := make([]string, len(chunk))
		var args []any
		for i, r := range chunk {
			values[i] = "(" + placeholders(11) + ")"
			args = append(args, r.Key, string(RunScheduled), r.Persona, r.Responsibility, d.timeArg(dbNow(r.FireAt)),
				string(RunSkipped), clipReason(r.Reason), "", 0, stamp, stamp)
		}
		n, err := s.affected(ctx, d.rebind("INSERT INTO runs ("+cols+") VALUES "+strings.Join(values, ", ")+
			d.ignoringDuplicates("id")), args...)
		if err != nil {
			return recorded, fmt.Errorf("store: record %d fires skipped: %w", len(chunk), err)
		}
		recorded += int(n)
	}
	return recorded, nil
}
