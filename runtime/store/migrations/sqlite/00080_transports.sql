-- What the mail transports keep in the store: SQLite form of migrations/mysql/00080_transports.sql
-- (see there). Times are TEXT in the fixed-width form 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC).

-- +goose Up
ALTER TABLE mail_outbox ADD COLUMN bounced_at TEXT NULL;
ALTER TABLE mail_outbox ADD COLUMN bounce_status TEXT NULL;
ALTER TABLE mail_outbox ADD COLUMN bounce_diagnostic TEXT NULL;

CREATE TABLE receiver_checkpoints (
    receiver     TEXT    NOT NULL PRIMARY KEY,
    uid_validity INTEGER NOT NULL,
    last_uid     INTEGER NOT NULL,
    updated_at   TEXT    NOT NULL
);

-- +goose Down
DROP TABLE receiver_checkpoints;
ALTER TABLE mail_outbox DROP COLUMN bounce_diagnostic;
ALTER TABLE mail_outbox DROP COLUMN bounce_status;
ALTER TABLE mail_outbox DROP COLUMN bounced_at;
