-- The store's first schema (runtime/store, issue 4), SQLite form of migrations/mysql/00001_init.sql.
-- SQLite stores TEXT of any length and does not enforce VARCHAR sizes; the store checks key
-- lengths in Go so both databases reject the same values. Times are TEXT in the fixed-width form
-- 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), which sorts like the time it names.

-- +goose Up
CREATE TABLE threads (
    id         TEXT NOT NULL PRIMARY KEY,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now'))
);

CREATE TABLE messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    message_id TEXT NOT NULL,
    direction  TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    sender     TEXT NOT NULL,
    recipients TEXT NOT NULL,
    cc         TEXT NOT NULL,
    subject    TEXT NOT NULL,
    sent_at    TEXT NOT NULL,
    text_body  TEXT NOT NULL,
    html_body  TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now'))
);
CREATE UNIQUE INDEX messages_message_id ON messages (message_id);
CREATE INDEX messages_thread_seq ON messages (thread_id, seq);

CREATE TABLE attachments (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    message_seq   INTEGER NOT NULL REFERENCES messages (seq),
    position      INTEGER NOT NULL,
    attachment_id TEXT NOT NULL,
    filename      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size_bytes    INTEGER NOT NULL
);
CREATE UNIQUE INDEX attachments_message_position ON attachments (message_seq, position);

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

CREATE TABLE tool_uses (
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
CREATE UNIQUE INDEX tool_uses_round_position ON tool_uses (source_type, source_id, run_id, turn_index, position);
CREATE INDEX tool_uses_thread_source ON tool_uses (thread_id, source_id, seq);

-- +goose Down
DROP TABLE tool_uses;
DROP TABLE responsibility_runs;
DROP TABLE attachments;
DROP TABLE messages;
DROP TABLE threads;
