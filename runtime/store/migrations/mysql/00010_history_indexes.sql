-- History replay (runtime/store, issue 13) reads a thread by seq alone, its insertion key, through
-- one index, messages_thread_window (thread_id, seq, message_id): the window backwards along it,
-- stopped after the limit, and the count of what lies before the window inside it, message ids
-- included so the message being answered is left out without reading a row. It replaces
-- messages_thread_seq (thread_id, seq), which it extends. The index on (thread_id, sent_at, seq),
-- made for the earlier (sent_at, seq) order, is read by no query any more while every append
-- still pays for it: it goes.

-- +goose Up
ALTER TABLE messages
    ADD INDEX messages_thread_window (thread_id, seq, message_id),
    DROP INDEX messages_thread_seq,
    DROP INDEX messages_thread_sent;

-- +goose Down
ALTER TABLE messages
    ADD INDEX messages_thread_seq (thread_id, seq),
    ADD INDEX messages_thread_sent (thread_id, sent_at, seq),
    DROP INDEX messages_thread_window;
