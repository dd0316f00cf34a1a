-- How a run's attempts end (runtime/agent), SQLite form of migrations/mysql/00041_run_failures.sql
-- (see there for the columns). Times are TEXT 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as in 00001.

-- +goose Up
ALTER TABLE runs ADD COLUMN failure_class TEXT NOT NULL DEFAULT '' CHECK (failure_class IN ('', 'shutdown',
    'timeout', 'model_unavailable', 'unavailable', 'busy', 'unclassified', 'crashed', 'invalid_answer',
    'request_refused', 'context_window', 'max_turns', 'no_answer', 'host_error'));
ALTER TABLE runs ADD COLUMN retry_at TEXT NULL;
ALTER TABLE runs ADD COLUMN faults INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN faults;
ALTER TABLE runs DROP COLUMN retry_at;
ALTER TABLE runs DROP COLUMN failure_class;
