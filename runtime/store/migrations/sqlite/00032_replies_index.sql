-- An index of the messages that answer a message (issue 16), SQLite form of
-- migrations/mysql/00032_replies_index.sql.

-- +goose Up
CREATE INDEX messages_mailbox_in_reply_to ON messages (mailbox, in_reply_to);

-- +goose Down
DROP INDEX messages_mailbox_in_reply_to;
