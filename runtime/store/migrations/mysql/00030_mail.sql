-- The outbox runtime/mail's replies leave through (issue 16): one mail_outbox row per outbound
-- reply (a message with a run key), written in the same transaction as the reply, with sent_at
-- NULL until the host's sender marks it sent. The index
-- (mailbox, sent_at, message_seq) finds a mailbox's unsent replies in order without scanning
-- the sent ones. Replies stored before this migration enter the outbox unsent.

-- +goose Up
CREATE TABLE mail_outbox (
    message_seq BIGINT       NOT NULL,
    mailbox     VARCHAR(191) NOT NULL,
    sent_at     DATETIME(6)  NULL,
    PRIMARY KEY (message_seq),
    KEY mail_outbox_unsent (mailbox, sent_at, message_seq),
    CONSTRAINT mail_outbox_message FOREIGN KEY (message_seq) REFERENCES messages (seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO mail_outbox (message_seq, mailbox)
    SELECT seq, mailbox FROM messages WHERE run_key IS NOT NULL AND direction = 'outbound';

-- +goose Down
DROP TABLE mail_outbox;
