-- History replay (runtime/store, issue 13), SQLite form of migrations/mysql/00010_history_indexes.sql:
-- replay reads a thread by seq alone, through messages_thread_seq (thread_id, seq), so the
-- index on (thread_id, sent_at, seq) that served the earlier (sent_at, seq) order goes.

-- +goose Up
DROP INDEX messages_thread_sent;

-- +goose Down
CREATE INDEX messages_thread_sent ON messages (thread_id, sent_at, seq);
