-- Pending work, kept at write time: SQLite form of migrations/mysql/00050_work.sql (see there).
-- Times are TEXT in the fixed-width form 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC).

-- +goose Up
CREATE TABLE pending_replies (
    mailbox      TEXT    NOT NULL,
    thread_id    TEXT    NOT NULL,
    first_seq    INTEGER NOT NULL,
    last_seq     INTEGER NOT NULL,
    claim_seq    INTEGER NOT NULL DEFAULT 0,
    available_at TEXT    NOT NULL,
    holder       TEXT    NOT NULL DEFAULT '',
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT    NULL,
    PRIMARY KEY (mailbox, thread_id)
);
CREATE INDEX pending_replies_available ON pending_replies (available_at, first_seq);

-- +goose StatementBegin
CREATE TRIGGER messages_pending_reply AFTER INSERT ON messages
WHEN NEW.direction = 'inbound' AND COALESCE(NEW.not_to_answer, '') = '' AND NEW.run_key IS NULL
BEGIN
    INSERT INTO pending_replies (mailbox, thread_id, first_seq, last_seq, available_at)
    VALUES (NEW.mailbox, NEW.thread_id, NEW.seq, NEW.seq, '1000-01-01 00:00:00.000000')
    ON CONFLICT (mailbox, thread_id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq);
END;
-- +goose StatementEnd

INSERT INTO pending_replies (mailbox, thread_id, first_seq, last_seq, available_at)
    SELECT m.mailbox, m.thread_id, MIN(m.seq), MAX(m.seq), '1000-01-01 00:00:00.000000' FROM messages m
    WHERE m.direction = 'inbound' AND COALESCE(m.not_to_answer, '') = '' AND m.run_key IS NULL
        AND m.seq > COALESCE((SELECT MAX(r.message_seq) FROM runs r
            WHERE r.kind = 'reply' AND r.persona = m.mailbox AND r.thread_id = m.thread_id), 0)
    GROUP BY m.mailbox, m.thread_id;

ALTER TABLE mail_outbox ADD COLUMN available_at TEXT NULL DEFAULT '1000-01-01 00:00:00.000000';
ALTER TABLE mail_outbox ADD COLUMN holder TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE mail_outbox ADD COLUMN last_error TEXT NULL;
ALTER TABLE mail_outbox ADD COLUMN failed_at TEXT NULL;
CREATE INDEX mail_outbox_available ON mail_outbox (available_at, message_seq);
UPDATE mail_outbox SET available_at = NULL WHERE sent_at IS NOT NULL;

-- +goose Down
DROP INDEX mail_outbox_available;
ALTER TABLE mail_outbox DROP COLUMN failed_at;
ALTER TABLE mail_outbox DROP COLUMN last_error;
ALTER TABLE mail_outbox DROP COLUMN attempts;
ALTER TABLE mail_outbox DROP COLUMN holder;
ALTER TABLE mail_outbox DROP COLUMN available_at;
DROP TRIGGER messages_pending_reply;
DROP TABLE pending_replies;
