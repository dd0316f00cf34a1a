-- A message's Reply-To addresses (runtime/store, issue 12), SQLite form of
-- migrations/mysql/00006_reply_to.sql: a JSON array; NULL for messages stored before.

-- +goose Up
ALTER TABLE messages ADD COLUMN reply_to TEXT NULL;

-- +goose Down
ALTER TABLE messages DROP COLUMN reply_to;
