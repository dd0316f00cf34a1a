-- A round's assistant message (runtime/store, issue 12), SQLite form of
-- migrations/mysql/00005_round_message.sql: text and provider state (JSON) on the round's
-- position-0 tool_uses row.

-- +goose Up
ALTER TABLE tool_uses ADD COLUMN round_text TEXT NULL;
ALTER TABLE tool_uses ADD COLUMN round_state TEXT NULL;

-- +goose Down
ALTER TABLE tool_uses DROP COLUMN round_state;
ALTER TABLE tool_uses DROP COLUMN round_text;
