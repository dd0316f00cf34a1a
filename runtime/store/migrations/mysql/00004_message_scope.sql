-- The messages table learns what only the store keeps about a message (runtime/store,
-- issue 12): its mailbox, which scopes the message id (one email delivered to two personas is
-- stored once per persona's mailbox; '' is the default mailbox), its threading headers
-- (in_reply_to; refs, the References ids as a JSON array), the run that wrote an outbound reply
-- (run_key: at most one reply per run), why it must not be answered (not_to_answer; '' = answer
-- it) and what was wrong with it as received (problems, a JSON array). Rows stored before this
-- migration get the default mailbox and NULL lists, read as empty.

-- +goose Up
ALTER TABLE messages
    ADD COLUMN mailbox       VARCHAR(191) NOT NULL DEFAULT '' AFTER thread_id,
    ADD COLUMN in_reply_to   VARCHAR(255) NOT NULL DEFAULT '' AFTER message_id,
    ADD COLUMN refs          MEDIUMTEXT   NULL AFTER in_reply_to,
    ADD COLUMN run_key       VARCHAR(191) NULL,
    ADD COLUMN not_to_answer TEXT         NULL,
    ADD COLUMN problems      MEDIUMTEXT   NULL,
    DROP INDEX messages_message_id,
    ADD UNIQUE KEY messages_mailbox_message_id (mailbox, message_id),
    ADD UNIQUE KEY messages_run_key (run_key);

-- +goose Down
ALTER TABLE messages
    DROP INDEX messages_run_key,
    DROP INDEX messages_mailbox_message_id,
    ADD UNIQUE KEY messages_message_id (message_id),
    DROP COLUMN problems,
    DROP COLUMN not_to_answer,
    DROP COLUMN run_key,
    DROP COLUMN refs,
    DROP COLUMN in_reply_to,
    DROP COLUMN mailbox;
