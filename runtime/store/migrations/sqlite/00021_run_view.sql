-- A reply run's fixed view of its thread (runtime/agent, issue 15), SQLite form of
-- migrations/mysql/00021_run_view.sql.

-- +goose Up
ALTER TABLE runs ADD COLUMN view_seq INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN view_seq;
