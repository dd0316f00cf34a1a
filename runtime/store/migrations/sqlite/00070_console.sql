-- What the console reads and records: SQLite form of migrations/mysql/00070_console.sql (see
-- there). Times are TEXT in the fixed-width form 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC).

-- +goose Up
CREATE TABLE thread_activity (
    thread_id TEXT    NOT NULL PRIMARY KEY,
    mailbox   TEXT    NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq  INTEGER NOT NULL,
    messages  INTEGER NOT NULL,
    last_at   TEXT    NOT NULL
);
CREATE INDEX thread_activity_last ON thread_activity (last_at, thread_id);
CREATE INDEX thread_activity_mailbox_last ON thread_activity (mailbox, last_at, thread_id);

-- +goose StatementBegin
CREATE TRIGGER messages_thread_activity AFTER INSERT ON messages
BEGIN
    INSERT INTO thread_activity (thread_id, mailbox, first_seq, last_seq, messages, last_at)
    VALUES (NEW.thread_id, NEW.mailbox, NEW.seq, NEW.seq, 1, NEW.created_at)
    ON CONFLICT (thread_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq), messages = messages + 1,
        last_at = max(last_at, excluded.last_at);
END;
-- +goose StatementEnd

INSERT INTO thread_activity (thread_id, mailbox, first_seq, last_seq, messages, last_at)
    SELECT m.thread_id, f.mailbox, MIN(m.seq), MAX(m.seq), COUNT(*), MAX(m.created_at)
    FROM messages m JOIN messages f ON f.thread_start = m.thread_id
    GROUP BY m.thread_id, f.mailbox;

CREATE INDEX runs_started ON runs (started_at, id);
CREATE INDEX runs_status_started ON runs (status, started_at, id);
CREATE INDEX runs_class_started ON runs (failure_class, started_at, id);
CREATE INDEX runs_persona_started ON runs (persona, started_at, id);

CREATE INDEX mail_outbox_failed ON mail_outbox (failed_at, message_seq);

CREATE TABLE operator_actions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    happened_at TEXT NOT NULL,
    actor       TEXT NOT NULL,
    action      TEXT NOT NULL,
    target      TEXT NOT NULL,
    reason      TEXT NOT NULL,
    detail      TEXT NOT NULL
);
CREATE INDEX operator_actions_target ON operator_actions (target, id);

-- +goose Down
DROP INDEX operator_actions_target;
DROP TABLE operator_actions;
DROP INDEX mail_outbox_failed;
DROP INDEX runs_persona_started;
DROP INDEX runs_class_started;
DROP INDEX runs_status_started;
DROP INDEX runs_started;
DROP TRIGGER messages_thread_activity;
DROP TABLE thread_activity;
