-- Pending work, kept at write time (runtime/service claims it; see runtime/store's work.go).
--
-- pending_replies holds one row per (mailbox, thread) with inbound messages that are to be
-- answered and are not yet: first_seq and last_seq are the oldest and newest of them. A trigger
-- on messages keeps it: an inbound message stored without a not-to-answer reason and without a
-- run key inserts the thread's row, or raises its last_seq, in the same statement as the
-- message itself, so a committed message is never without its work and no write path can
-- forget it. available_at is when a worker may claim the row: '1000-01-01' (at once) for work
-- never tried, the end of a worker's claim while it works, the retry time after a transient
-- failure. claim_seq is the message the current (or last) claim answers. A worker removes the
-- row, or moves first_seq past what it answered, when the run finished; the row never reads
-- messages in its writes, so it cannot deadlock with an append (which holds the thread's
-- first message row and then writes this row through the trigger).
--
-- mail_outbox gains the same claim columns: available_at (NULL once the reply was sent or its
-- sending failed for good), the claimer, the attempts and the last error, and failed_at for a
-- permanent failure. Unsent replies already stored become available at once.
--
-- Threads with inbound messages stored before this migration and after their last reply run
-- become pending.

-- +goose Up
CREATE TABLE pending_replies (
    mailbox      VARCHAR(191) NOT NULL,
    thread_id    VARCHAR(191) NOT NULL,
    first_seq    BIGINT       NOT NULL,
    last_seq     BIGINT       NOT NULL,
    claim_seq    BIGINT       NOT NULL DEFAULT 0,
    available_at DATETIME(6)  NOT NULL,
    holder       VARCHAR(191) NOT NULL DEFAULT '',
    attempts     INT          NOT NULL DEFAULT 0,
    last_error   TEXT         NULL,
    PRIMARY KEY (mailbox, thread_id),
    KEY pending_replies_available (available_at, first_seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose StatementBegin
CREATE TRIGGER messages_pending_reply AFTER INSERT ON messages FOR EACH ROW
    INSERT INTO pending_replies (mailbox, thread_id, first_seq, last_seq, available_at)
    SELECT NEW.mailbox, NEW.thread_id, NEW.seq, NEW.seq, '1000-01-01 00:00:00' FROM DUAL
    WHERE NEW.direction = 'inbound' AND COALESCE(NEW.not_to_answer, '') = '' AND NEW.run_key IS NULL
    ON DUPLICATE KEY UPDATE last_seq = GREATEST(last_seq, VALUES(last_seq));
-- +goose StatementEnd

INSERT INTO pending_replies (mailbox, thread_id, first_seq, last_seq, available_at)
    SELECT m.mailbox, m.thread_id, MIN(m.seq), MAX(m.seq), '1000-01-01 00:00:00' FROM messages m
    WHERE m.direction = 'inbound' AND COALESCE(m.not_to_answer, '') = '' AND m.run_key IS NULL
        AND m.seq > COALESCE((SELECT MAX(r.message_seq) FROM runs r
            WHERE r.kind = 'reply' AND r.persona = m.mailbox AND r.thread_id = m.thread_id), 0)
    GROUP BY m.mailbox, m.thread_id
    ON DUPLICATE KEY UPDATE first_seq = LEAST(first_seq, VALUES(first_seq)), last_seq = GREATEST(last_seq, VALUES(last_seq));

ALTER TABLE mail_outbox
    ADD COLUMN available_at DATETIME(6)  NULL DEFAULT '1000-01-01 00:00:00',
    ADD COLUMN holder       VARCHAR(191) NOT NULL DEFAULT '',
    ADD COLUMN attempts     INT          NOT NULL DEFAULT 0,
    ADD COLUMN last_error   TEXT         NULL,
    ADD COLUMN failed_at    DATETIME(6)  NULL,
    ADD INDEX mail_outbox_available (available_at, message_seq);
UPDATE mail_outbox SET available_at = NULL WHERE sent_at IS NOT NULL;

-- +goose Down
ALTER TABLE mail_outbox DROP INDEX mail_outbox_available, DROP COLUMN available_at, DROP COLUMN holder,
    DROP COLUMN attempts, DROP COLUMN last_error, DROP COLUMN failed_at;
DROP TRIGGER messages_pending_reply;
DROP TABLE pending_replies;
