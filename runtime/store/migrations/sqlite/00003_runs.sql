-- One runs table for reply runs and scheduled runs (runtime/store, issue 12), SQLite form of
-- migrations/mysql/00003_runs.sql (see there for the columns). SQLite has partial indexes, so
-- "one running run per persona and thread / responsibility" is two unique indexes WHERE
-- status = 'running'. tool_uses is rebuilt, because SQLite cannot change a CHECK constraint:
-- source_type/source_id become owner_type/owner_id ('message' or 'run'). Times are TEXT
-- 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as in 00001.

-- +goose Up
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key            TEXT    NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('reply', 'scheduled')),
    persona            TEXT    NOT NULL,
    thread_id          TEXT    NULL REFERENCES threads (id),
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
    CHECK (kind <> 'reply' OR (thread_id IS NOT NULL AND message_seq IS NOT NULL
        AND responsibility IS NULL AND fire_at IS NULL)),
    CHECK (kind <> 'scheduled' OR (responsibility IS NOT NULL AND fire_at IS NOT NULL
        AND thread_id IS NULL AND message_seq IS NULL))
);
CREATE UNIQUE INDEX runs_key ON runs (run_key);
CREATE UNIQUE INDEX runs_fire ON runs (persona, responsibility, fire_at);
CREATE UNIQUE INDEX runs_running_thread ON runs (persona, thread_id) WHERE status = 'running';
CREATE UNIQUE INDEX runs_running_responsibility ON runs (persona, responsibility) WHERE status = 'running';
CREATE INDEX runs_persona_thread ON runs (persona, thread_id, id);
CREATE INDEX runs_persona_responsibility ON runs (persona, responsibility, id);
CREATE INDEX runs_thread ON runs (thread_id);

INSERT INTO runs (id, run_key, kind, persona, responsibility, fire_at, status, reason, lease_holder,
    attempt, started_at, finished_at)
SELECT id, 'responsibility_run:' || id, 'scheduled', persona, responsibility, started_at,
    CASE WHEN status = 'running' THEN 'abandoned' ELSE status END,
    CASE WHEN status = 'running' THEN 'still running when the runs table replaced responsibility_runs' ELSE detail END,
    '', 1, started_at,
    CASE WHEN status = 'running' THEN strftime('%Y-%m-%d %H:%M:%f000', 'now') ELSE finished_at END
FROM responsibility_runs;

DROP TABLE responsibility_runs;

CREATE TABLE tool_uses_owned (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    owner_type   TEXT NOT NULL CHECK (owner_type IN ('message', 'run')),
    owner_id     INTEGER NOT NULL,
    thread_id    TEXT NULL,
    persona      TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    turn_index   INTEGER NOT NULL,
    position     INTEGER NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    result       TEXT NOT NULL,
    succeeded    INTEGER NOT NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    CHECK (owner_type <> 'message' OR thread_id IS NOT NULL)
);
INSERT INTO tool_uses_owned (seq, owner_type, owner_id, thread_id, persona, run_id, turn_index, position,
    tool_call_id, tool_name, arguments, result, succeeded, created_at)
SELECT seq, CASE WHEN source_type = 'responsibility_run' THEN 'run' ELSE source_type END, source_id, thread_id,
    persona, run_id, turn_index, position, tool_call_id, tool_name, arguments, result, succeeded, created_at
FROM tool_uses;
DROP TABLE tool_uses;
ALTER TABLE tool_uses_owned RENAME TO tool_uses;
CREATE UNIQUE INDEX tool_uses_round_position ON tool_uses (owner_type, owner_id, run_id, turn_index, position);
CREATE INDEX tool_uses_thread_owner ON tool_uses (thread_id, owner_id, seq);

-- +goose Down
CREATE TABLE tool_uses_sourced (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    source_type  TEXT NOT NULL CHECK (source_type IN ('message', 'responsibility_run')),
    source_id    INTEGER NOT NULL,
    thread_id    TEXT NULL,
    persona      TEXT NOT NULL,
    run_id       TEXT NOT NULL,
    turn_index   INTEGER NOT NULL,
    position     INTEGER NOT NULL,
    tool_call_id TEXT NOT NULL,
    tool_name    TEXT NOT NULL,
    arguments    TEXT NOT NULL,
    result       TEXT NOT NULL,
    succeeded    INTEGER NOT NULL,
    created_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    CHECK (source_type <> 'message' OR thread_id IS NOT NULL)
);
INSERT INTO tool_uses_sourced (seq, source_type, source_id, thread_id, persona, run_id, turn_index, position,
    tool_call_id, tool_name, arguments, result, succeeded, created_at)
SELECT seq, CASE WHEN owner_type = 'run' THEN 'responsibility_run' ELSE owner_type END, owner_id, thread_id,
    persona, run_id, turn_index, position, tool_call_id, tool_name, arguments, result, succeeded, created_at
FROM tool_uses;
DROP TABLE tool_uses;
ALTER TABLE tool_uses_sourced RENAME TO tool_uses;
CREATE UNIQUE INDEX tool_uses_round_position ON tool_uses (source_type, source_id, run_id, turn_index, position);
CREATE INDEX tool_uses_thread_source ON tool_uses (thread_id, source_id, seq);

CREATE TABLE responsibility_runs (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    persona        TEXT NOT NULL,
    responsibility TEXT NOT NULL,
    status         TEXT NOT NULL,
    started_at     TEXT NOT NULL,
    finished_at    TEXT NULL,
    detail         TEXT NOT NULL
);
CREATE INDEX responsibility_runs_persona ON responsibility_runs (persona, responsibility, id);
INSERT INTO responsibility_runs (id, persona, responsibility, status, started_at, finished_at, detail)
SELECT id, persona, responsibility, CASE WHEN status = 'abandoned' THEN 'failed' ELSE status END,
    started_at, finished_at, reason
FROM runs WHERE kind = 'scheduled';
DROP TABLE runs;
