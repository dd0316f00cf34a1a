-- A reply run's fixed view of its thread (runtime/agent, issue 15): view_seq is the seq of the
-- thread's newest message when the run started. The run reads the messages up to it — inbound
-- ones only up to message_seq, the message it answers — with the compaction compaction_seq, so
-- every attempt of the run assembles the same request. 0 for scheduled runs and older rows.

-- +goose Up
ALTER TABLE runs ADD COLUMN view_seq BIGINT NOT NULL DEFAULT 0 AFTER compaction_seq;

-- +goose Down
ALTER TABLE runs DROP COLUMN view_seq;
