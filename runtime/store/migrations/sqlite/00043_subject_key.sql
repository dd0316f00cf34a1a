-- The subject rule of runtime/mail's threading, SQLite form of
-- migrations/mysql/00043_subject_key.sql (see there). The index holds only the rows that have
-- a key.

-- +goose Up
ALTER TABLE messages ADD COLUMN subject_key TEXT NULL;
CREATE INDEX messages_mailbox_subject ON messages (mailbox, subject_key, sent_at, seq) WHERE subject_key IS NOT NULL;

-- +goose Down
DROP INDEX messages_mailbox_subject;
ALTER TABLE messages DROP COLUMN subject_key;
