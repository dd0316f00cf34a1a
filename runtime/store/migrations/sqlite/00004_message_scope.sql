-- The messages table learns what only the store keeps about a message (runtime/store,
-- issue 12), SQLite form of migrations/mysql/00004_message_scope.sql: the mailbox that scopes
-- the message id, the threading headers, the run key of an outbound reply (one reply per run),
-- the not-to-answer reason and the problems. Rows stored before get the default mailbox ''.

-- +goose Up
ALTER TABLE messages ADD COLUMN mailbox TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN in_reply_to TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN refs TEXT NULL;
ALTER TABLE messages ADD COLUMN run_key TEXT NULL;
ALTER TABLE messages ADD COLUMN not_to_answer TEXT NULL;
ALTER TABLE messages ADD COLUMN problems TEXT NULL;
DROP INDEX messages_message_id;
CREATE UNIQUE INDEX messages_mailbox_message_id ON messages (mailbox, message_id);
CREATE UNIQUE INDEX messages_run_key ON messages (run_key);

-- +goose Down
DROP INDEX messages_run_key;
DROP INDEX messages_mailbox_message_id;
CREATE UNIQUE INDEX messages_message_id ON messages (message_id);
ALTER TABLE messages DROP COLUMN problems;
ALTER TABLE messages DROP COLUMN not_to_answer;
ALTER TABLE messages DROP COLUMN run_key;
ALTER TABLE messages DROP COLUMN refs;
ALTER TABLE messages DROP COLUMN in_reply_to;
ALTER TABLE messages DROP COLUMN mailbox;
