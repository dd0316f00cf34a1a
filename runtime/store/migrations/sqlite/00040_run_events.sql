-- The events of a run (who reopened it, when and why), SQLite form of
-- migrations/mysql/00040_run_events.sql (see there for the columns). Times are TEXT
-- 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as in 00001.

-- +goose Up
CREATE TABLE run_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id       INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    happened_at  TEXT    NOT NULL,
    kind         TEXT    NOT NULL,
    actor        TEXT    NOT NULL,
    reason       TEXT    NOT NULL,
    prior_status TEXT    NOT NULL,
    prior_reason TEXT    NOT NULL
);
CREATE INDEX run_events_run ON run_events (run_id, id);

-- +goose Down
DROP TABLE run_events;
