-- Approval: calls that change the world wait for a person. SQLite form of
-- migrations/mysql/00060_approvals.sql (see there for the columns and their meaning).
--
-- runs.status gains 'waiting'. SQLite cannot change a CHECK constraint in place, so runs is
-- rebuilt as migration 00031 rebuilt it: copied aside, dropped, created anew and filled from the
-- copy, in goose's transaction with defer_foreign_keys on; the run ledger (run_turns,
-- run_call_outcomes), which dropping runs deletes ON DELETE CASCADE, is copied aside and put back,
-- and the AUTOINCREMENT high-water mark is carried over. The partial unique indexes that keep one
-- unfinished run per persona and thread (or responsibility) now cover waiting runs too, and
-- runs_waiting indexes the waiting runs by persona. run_approvals is created after the rebuild;
-- a later migration that rebuilds runs must copy it aside as well (it goes with run_turns).
-- Times are TEXT 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as in 00001.

-- +goose Up
PRAGMA defer_foreign_keys = ON;
CREATE TABLE sequence_copy AS SELECT name, seq FROM sqlite_sequence WHERE name = 'runs';
CREATE TABLE runs_copy AS SELECT * FROM runs;
CREATE TABLE run_turns_copy AS SELECT * FROM run_turns;
CREATE TABLE run_call_outcomes_copy AS SELECT * FROM run_call_outcomes;
DROP TABLE runs;
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key            TEXT    NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('reply', 'scheduled')),
    persona            TEXT    NOT NULL,
    thread_id          TEXT    NULL REFERENCES messages (thread_start),
    message_seq        INTEGER NULL REFERENCES messages (seq),
    responsibility     TEXT    NULL,
    fire_at            TEXT    NULL,
    compaction_seq     INTEGER NOT NULL DEFAULT 0,
    status             TEXT    NOT NULL CHECK (status IN ('running', 'waiting', 'succeeded', 'failed', 'skipped', 'abandoned')),
    reason             TEXT    NOT NULL,
    lease_holder       TEXT    NOT NULL,
    lease_expires_at   TEXT    NULL,
    attempt            INTEGER NOT NULL,
    started_at         TEXT    NOT NULL,
    finished_at        TEXT    NULL,
    stop_reason        TEXT    NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    view_seq           INTEGER NOT NULL DEFAULT 0,
    failure_class      TEXT    NOT NULL DEFAULT '' CHECK (failure_class IN ('', 'shutdown', 'timeout',
        'model_unavailable', 'unavailable', 'busy', 'unclassified', 'crashed', 'invalid_answer', 'request_refused',
        'context_window', 'max_turns', 'no_answer', 'host_error')),
    retry_at           TEXT    NULL,
    faults             INTEGER NOT NULL DEFAULT 0,
    CHECK (kind <> 'reply' OR (thread_id IS NOT NULL AND message_seq IS NOT NULL
        AND responsibility IS NULL AND fire_at IS NULL)),
    CHECK (kind <> 'scheduled' OR (responsibility IS NOT NULL AND fire_at IS NOT NULL
        AND thread_id IS NULL AND message_seq IS NULL))
);
INSERT INTO runs (id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, status,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq, failure_class, retry_at, faults)
SELECT id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, status,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq, failure_class, retry_at, faults
FROM runs_copy ORDER BY id;
DROP TABLE runs_copy;
INSERT INTO run_turns SELECT * FROM run_turns_copy;
INSERT INTO run_call_outcomes SELECT * FROM run_call_outcomes_copy;
DROP TABLE run_call_outcomes_copy;
DROP TABLE run_turns_copy;
UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT c.seq FROM sequence_copy c WHERE c.name = sqlite_sequence.name))
WHERE name IN (SELECT name FROM sequence_copy);
INSERT INTO sqlite_sequence (name, seq) SELECT name, seq FROM sequence_copy
WHERE name NOT IN (SELECT name FROM sqlite_sequence);
DROP TABLE sequence_copy;
CREATE UNIQUE INDEX runs_key ON runs (run_key);
CREATE UNIQUE INDEX runs_fire ON runs (persona, responsibility, fire_at);
CREATE UNIQUE INDEX runs_running_thread ON runs (persona, thread_id) WHERE status IN ('running', 'waiting');
CREATE UNIQUE INDEX runs_running_responsibility ON runs (persona, responsibility) WHERE status IN ('running', 'waiting');
CREATE INDEX runs_persona_thread ON runs (persona, thread_id, id);
CREATE INDEX runs_persona_responsibility ON runs (persona, responsibility, id);
CREATE INDEX runs_thread ON runs (thread_id);
CREATE INDEX runs_waiting ON runs (persona) WHERE status = 'waiting';

CREATE TABLE run_approvals (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id          INTEGER NOT NULL,
    turn_index      INTEGER NOT NULL,
    position        INTEGER NOT NULL,
    tool_call_id    TEXT    NOT NULL,
    tool_name       TEXT    NOT NULL,
    arguments       TEXT    NOT NULL,
    input           TEXT    NULL,
    status          TEXT    NOT NULL CHECK (status IN ('waiting', 'approved', 'denied', 'expired')),
    on_timeout      TEXT    NOT NULL CHECK (on_timeout IN ('deny', 'approve')),
    reveal_approver INTEGER NOT NULL,
    requested_at    TEXT    NOT NULL,
    expires_at      TEXT    NOT NULL,
    decided_by      TEXT    NOT NULL DEFAULT '',
    decided_at      TEXT    NULL,
    note            TEXT    NOT NULL,
    started_at      TEXT    NULL,
    notice_at       TEXT    NULL,
    FOREIGN KEY (run_id, turn_index) REFERENCES run_turns (run_id, turn_index) ON DELETE CASCADE
);
CREATE UNIQUE INDEX run_approvals_call ON run_approvals (run_id, turn_index, position);
CREATE INDEX run_approvals_call_id ON run_approvals (run_id, tool_call_id);
CREATE INDEX run_approvals_run ON run_approvals (run_id, status, expires_at);
CREATE INDEX run_approvals_status ON run_approvals (status, expires_at);
CREATE INDEX run_approvals_notice ON run_approvals (notice_at) WHERE notice_at IS NOT NULL;

-- +goose Down
PRAGMA defer_foreign_keys = ON;
DROP TABLE run_approvals;
DROP INDEX runs_waiting;
CREATE TABLE sequence_copy AS SELECT name, seq FROM sqlite_sequence WHERE name = 'runs';
CREATE TABLE runs_copy AS SELECT * FROM runs;
CREATE TABLE run_turns_copy AS SELECT * FROM run_turns;
CREATE TABLE run_call_outcomes_copy AS SELECT * FROM run_call_outcomes;
DROP TABLE runs;
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key            TEXT    NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('reply', 'scheduled')),
    persona            TEXT    NOT NULL,
    thread_id          TEXT    NULL REFERENCES messages (thread_start),
    message_seq        INTEGER NULL REFERENCES messages (seq),
    responsibility     TEXT    NULL,
    fire_at            TEXT    NULL,
    compaction_seq     INTEGER NOT NULL DEFAULT 0,
    status             TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'abandoned')),
    reason             TEXT    NOT NULL,
    lease_holder       TEXT    NOT NULL,
    lease_expires_at   TEXT    NULL,
    attempt            INTEGER NOT NULL,
    started_at         TEXT    NOT NULL,
    finished_at        TEXT    NULL,
    stop_reason        TEXT    NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    view_seq           INTEGER NOT NULL DEFAULT 0,
    failure_class      TEXT    NOT NULL DEFAULT '' CHECK (failure_class IN ('', 'shutdown', 'timeout',
        'model_unavailable', 'unavailable', 'busy', 'unclassified', 'crashed', 'invalid_answer', 'request_refused',
        'context_window', 'max_turns', 'no_answer', 'host_error')),
    retry_at           TEXT    NULL,
    faults             INTEGER NOT NULL DEFAULT 0,
    CHECK (kind <> 'reply' OR (thread_id IS NOT NULL AND message_seq IS NOT NULL
        AND responsibility IS NULL AND fire_at IS NULL)),
    CHECK (kind <> 'scheduled' OR (responsibility IS NOT NULL AND fire_at IS NOT NULL
        AND thread_id IS NULL AND message_seq IS NULL))
);
INSERT INTO runs (id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, status,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq, failure_class, retry_at, faults)
SELECT id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, CASE WHEN status = 'waiting' THEN 'running' ELSE status END,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq, failure_class, retry_at, faults
FROM runs_copy ORDER BY id;
DROP TABLE runs_copy;
INSERT INTO run_turns SELECT * FROM run_turns_copy;
INSERT INTO run_call_outcomes SELECT * FROM run_call_outcomes_copy;
DROP TABLE run_call_outcomes_copy;
DROP TABLE run_turns_copy;
UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT c.seq FROM sequence_copy c WHERE c.name = sqlite_sequence.name))
WHERE name IN (SELECT name FROM sequence_copy);
INSERT INTO sqlite_sequence (name, seq) SELECT name, seq FROM sequence_copy
WHERE name NOT IN (SELECT name FROM sqlite_sequence);
DROP TABLE sequence_copy;
CREATE UNIQUE INDEX runs_key ON runs (run_key);
CREATE UNIQUE INDEX runs_fire ON runs (persona, responsibility, fire_at);
CREATE UNIQUE INDEX runs_running_thread ON runs (persona, thread_id) WHERE status = 'running';
CREATE UNIQUE INDEX runs_running_responsibility ON runs (persona, responsibility) WHERE status = 'running';
CREATE INDEX runs_persona_thread ON runs (persona, thread_id, id);
CREATE INDEX runs_persona_responsibility ON runs (persona, responsibility, id);
CREATE INDEX runs_thread ON runs (thread_id);
