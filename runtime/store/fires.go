package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
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
