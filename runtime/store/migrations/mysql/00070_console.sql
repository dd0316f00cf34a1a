-- What the console (runtime/console, `personagen threads|runs|outbox|prune …`) reads and records.
--
-- thread_activity holds one row per thread: its mailbox (the first message's), its first and
-- newest message (seqs), how many messages it has, and last_at, when the store received its
-- newest message (messages.created_at, the database's clock). A trigger on messages keeps it, in
-- the statement that stores the message (as messages_pending_reply keeps pending_replies), so a
-- listing of threads by last activity reads its index, (last_at, thread_id) or (mailbox,
-- last_at, thread_id), for one page at a time, whatever the store holds; and retention finds the
-- threads older than a cut-off the same way. The row is written under the lock an append to its
-- thread already holds (the thread's first message row), so it adds no contention.
--
-- The runs indexes serve the console's run listings, newest first: by status, by failure class,
-- by persona, or all of them, each from a time (started_at) on.
--
-- mail_outbox_failed lists the replies whose sending failed for good, newest first.
--
-- operator_actions records what an operator did that no run event holds: a reply sent again, a
-- thread deleted by retention, with who (actor), when (happened_at, the store's clock), why
-- (reason) and what (action, target, detail). Actions on runs are run events.
--
-- Threads stored before this migration get their rows from their messages.

-- +goose Up
CREATE TABLE thread_activity (
    thread_id VARCHAR(191) NOT NULL,
    mailbox   VARCHAR(191) NOT NULL,
    first_seq BIGINT       NOT NULL,
    last_seq  BIGINT       NOT NULL,
    messages  BIGINT       NOT NULL,
    last_at   DATETIME(6)  NOT NULL,
    PRIMARY KEY (thread_id),
    KEY thread_activity_last (last_at, thread_id),
    KEY thread_activity_mailbox_last (mailbox, last_at, thread_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose StatementBegin
CREATE TRIGGER messages_thread_activity AFTER INSERT ON messages FOR EACH ROW
    INSERT INTO thread_activity (thread_id, mailbox, first_seq, last_seq, messages, last_at)
    VALUES (NEW.thread_id, NEW.mailbox, NEW.seq, NEW.seq, 1, NEW.created_at)
    ON DUPLICATE KEY UPDATE last_seq = GREATEST(last_seq, VALUES(last_seq)), messages = messages + 1,
        last_at = GREATEST(last_at, VALUES(last_at));
-- +goose StatementEnd

INSERT INTO thread_activity (thread_id, mailbox, first_seq, last_seq, messages, last_at)
    SELECT m.thread_id, f.mailbox, MIN(m.seq), MAX(m.seq), COUNT(*), MAX(m.created_at)
    FROM messages m JOIN messages f ON f.thread_start = m.thread_id
    GROUP BY m.thread_id, f.mailbox;

ALTER TABLE runs
    ADD INDEX runs_started (started_at, id),
    ADD INDEX runs_status_started (status, started_at, id),
    ADD INDEX runs_class_started (failure_class, started_at, id),
    ADD INDEX runs_persona_started (persona, started_at, id);

ALTER TABLE mail_outbox ADD INDEX mail_outbox_failed (failed_at, message_seq);

CREATE TABLE operator_actions (
    id          BIGINT       NOT NULL AUTO_INCREMENT,
    happened_at DATETIME(6)  NOT NULL,
    actor       VARCHAR(191) NOT NULL,
    action      VARCHAR(32)  NOT NULL,
    target      VARCHAR(255) NOT NULL,
    reason      TEXT         NOT NULL,
    detail      TEXT         NOT NULL,
    PRIMARY KEY (id),
    KEY operator_actions_target (target, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE operator_actions;
ALTER TABLE mail_outbox DROP INDEX mail_outbox_failed;
ALTER TABLE runs DROP INDEX runs_started, DROP INDEX runs_status_started, DROP INDEX runs_class_started,
    DROP INDEX runs_persona_started;
DROP TRIGGER messages_thread_activity;
DROP TABLE thread_activity;
