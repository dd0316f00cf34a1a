package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/personagen/personagen/runtime"
)

// RunStatus is the state of a responsibility run. A run starts RunRunning and moves exactly
// once to one of the final statuses; the rows of responsibility_runs are the status trail of a
// persona's scheduled work (one row per run, with when it started and finished and why), the
// audit trail that protege keeps beside a scheduled run's tool uses (seed 003).
type RunStatus string

// The statuses of a responsibility run.
const (
	// RunRunning: StartRun recorded the run; it has not finished (or its process died).
	RunRunning RunStatus = "running"
	// RunSucceeded: the run completed its work.
	RunSucceeded RunStatus = "succeeded"
	// RunFailed: the run stopped with an error; detail says which.
	RunFailed RunStatus = "failed"
	// RunSkipped: the run decided not to work (for example the responsibility was disabled).
	RunSkipped RunStatus = "skipped"
)

// ErrRunNotFound is returned (wrapped) when no responsibility run has the given id.
var ErrRunNotFound = errors.New("store: responsibility run not found")

// ErrRunFinished is returned (wrapped) by FinishRun for a run that already has a final status;
// the stored status is kept.
var ErrRunFinished = errors.New("store: responsibility run already finished")

// maxRunDetail is how many characters of a run's detail FinishRun keeps (runtime.Clip).
const maxRunDetail = StoredPayloadLimit

// Run is one row of the responsibility run trail. FinishedAt is zero while the run is running.
// Times are UTC with microsecond precision.
type Run struct {
	ID             int64
	Persona        string
	Responsibility string
	Status         RunStatus
	StartedAt      time.Time
	FinishedAt     time.Time
	Detail         string
}

// StartRun records that persona started a scheduled run of its responsibility (status
// RunRunning, started now by the store's clock) and returns the run's id, the source id that
// RecordRound takes for the run's tool uses. Errors: ErrInvalid (wrapped) for a name that is
// empty, ends in a space, is longer than 191 characters or is not valid UTF-8, or the
// database's error (wrapped).
func (s *Store) StartRun(ctx context.Context, persona, responsibility string) (int64, error) {
	if err := checkKey("persona", persona, maxNameLen); err != nil {
		return 0, err
	}
	if err := checkKey("responsibility", responsibility, maxNameLen); err != nil {
		return 0, err
	}
	res, err := s.db.ExecContext(ctx, s.dialect.rebind(`INSERT INTO responsibility_runs
		(persona, responsibility, status, started_at, detail) VALUES (?, ?, ?, ?, '')`),
		persona, responsibility, string(RunRunning), s.dialect.timeArg(s.now()))
	if err != nil {
		return 0, fmt.Errorf("store: start run of %s/%s: %w", persona, responsibility, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("store: start run of %s/%s: %w", persona, responsibility, err)
	}
	return id, nil
}

// FinishRun moves the running run id to status (RunSucceeded, RunFailed or RunSkipped), stamps
// its finish time and stores detail (clipped to 16,000 characters; invalid UTF-8 replaced by
// U+FFFD). The move happens once: errors (all wrapped) are ErrInvalid for another status,
// ErrRunNotFound for an unknown id, ErrRunFinished when the run already finished (its row is
// unchanged), or the database's error.
func (s *Store) FinishRun(ctx context.Context, id int64, status RunStatus, detail string) error {
	switch status {
	case RunSucceeded, RunFailed, RunSkipped:
	default:
		return fmt.Errorf("%w: run %d: final status %q (want succeeded, failed or skipped)", ErrInvalid, id, status)
	}
	detail = runtime.Clip(toValidUTF8(detail), maxRunDetail)
	res, err := s.db.ExecContext(ctx, s.dialect.rebind(`UPDATE responsibility_runs
		SET status = ?, finished_at = ?, detail = ? WHERE id = ? AND status = ?`),
		string(status), s.dialect.timeArg(s.now()), detail, id, string(RunRunning))
	if err != nil {
		return fmt.Errorf("store: finish run %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: finish run %d: %w", id, err)
	}
	if n == 1 {
		return nil
	}
	r, err := s.Run(ctx, id)
	if err != nil {
		return fmt.Errorf("store: finish run %d: %w", id, err)
	}
	return fmt.Errorf("%w: run %d is %s", ErrRunFinished, id, r.Status)
}

// Run returns the responsibility run id. Errors: ErrRunNotFound, or the database's error.
func (s *Store) Run(ctx context.Context, id int64) (Run, error) {
	var row struct {
		ID             int64  `db:"id"`
		Persona        string `db:"persona"`
		Responsibility string `db:"responsibility"`
		Status         string `db:"status"`
		StartedAt      dbTime `db:"started_at"`
		FinishedAt     dbTime `db:"finished_at"`
		Detail         string `db:"detail"`
	}
	err := s.db.GetContext(ctx, &row, s.dialect.rebind(`SELECT id, persona, responsibility, status,
		started_at, finished_at, detail FROM responsibility_runs WHERE id = ?`), id)
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("%w: id %d", ErrRunNotFound, id)
	}
	if err != nil {
		return Run{}, fmt.Errorf("store: read run %d: %w", id, err)
	}
	return Run{
		ID: row.ID, Persona: row.Persona, Responsibility: row.Responsibility,
		Status: RunStatus(row.Status), StartedAt: row.StartedAt.Time, FinishedAt: row.FinishedAt.Time,
		Detail: row.Detail,
	}, nil
}
