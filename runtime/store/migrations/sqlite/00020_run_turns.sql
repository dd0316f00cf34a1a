-- The runner's ledger of a run's model calls and tool calls (runtime/agent, issue 15), SQLite
-- form of migrations/mysql/00020_run_turns.sql (see there for the columns). Times are TEXT
-- 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as in 00001.

-- +goose Up
CREATE TABLE run_turns (
    run_id             INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    turn_index         INTEGER NOT NULL,
    message_text       TEXT    NOT NULL,
    tool_calls         TEXT    NOT NULL,
    state              TEXT    NOT NULL,
    stop_reason        TEXT    NOT NULL,
    model              TEXT    NOT NULL,
    request_id         TEXT    NOT NULL,
    response_id        TEXT    NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    created_at         TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    PRIMARY KEY (run_id, turn_index)
);

CREATE TABLE run_call_outcomes (
    run_id       INTEGER NOT NULL,
    turn_index   INTEGER NOT NULL,
    position     INTEGER NOT NULL,
    tool_call_id TEXT    NOT NULL,
    tool_name    TEXT    NOT NULL,
    result       TEXT    NOT NULL,
    succeeded    INTEGER NOT NULL,
    created_at   TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    PRIMARY KEY (run_id, turn_index, position),
    FOREIGN KEY (run_id, turn_index) REFERENCES run_turns (run_id, turn_index) ON DELETE CASCADE
);

-- +goose Down
DROP TABLE run_call_outcomes;
DROP TABLE run_turns;
