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
	running := "responsibility IS NOT NULL AND status = 'running'" // SQLite: its partial index
	if s.dialect == DialectMySQL {
		running = "running_responsibility IS NOT NULL" // the generated column's unique key
	}
	var out []Run
	for len(personas) > 0 {
		chunk := personas[:min(len(personas), maxRunningFiresPersonas)]
		personas = personas[len(chunk):]
		args := make([]any, len(chunk))
		for i, p := range chunk {
			args[i] = p
		}
		query := "SELECT " + runColumns + " FROM runs WHERE persona IN (" + placeholders(len(chunk)) + ") AND " + running
		var rows []runRow
		if err := s.db.SelectContext(ctx, &rows, s.dialect.rebind(query), args...); err != nil {
			return nil, fmt.Errorf("store: read running fires: %w", err)
		}
		for _, r := range rows {
			out = append(out, r.run())
		}
	}
	slices.SortFunc(out, func(a, b Run) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
