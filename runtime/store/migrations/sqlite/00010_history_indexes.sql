-- History replay (runtime/store, issue 13), SQLite form of migrations/mysql/00010_history_indexes.sql:
-- replay reads a thread by seq alone through messages_thread_window (thread_id, seq, message_id),
-- which replaces messages_thread_seq (thread_id, seq) and lets the count of what lies before a
-- window leave the answered message out inside the index; the index on (thread_id, sent_at, seq)
-- that served the earlier (sent_at, seq) order goes.

-- +goose Up
CREATE INDEX messages_thread_window ON messages (thread_id, seq, message_id);
DROP INDEX messages_thread_seq;
DROP INDEX messages_thread_sent;

-- +goose Down
CREATE INDEX messages_thread_seq ON messages (thread_id, seq);
CREATE INDEX messages_thread_sent ON messages (thread_id, sent_at, seq);
DROP INDEX messages_thread_window;
