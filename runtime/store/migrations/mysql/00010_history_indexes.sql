-- History replay (runtime/store, issue 13) reads a thread by seq alone, its insertion key: the
-- window backwards along messages_thread_seq (thread_id, seq), its omitted count inside that
-- index. The index on (thread_id, sent_at, seq), made for the earlier (sent_at, seq) order, is
-- read by no query any more while every append still pays for it, and the planner sometimes
-- preferred it to messages_thread_seq for a count: it goes.

-- +goose Up
DROP INDEX messages_thread_sent ON messages;

-- +goose Down
CREATE INDEX messages_thread_sent ON messages (thread_id, sent_at, seq);
