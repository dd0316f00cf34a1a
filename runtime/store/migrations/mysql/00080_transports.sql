-- What the mail transports keep in the store (runtime/transport/...).
--
-- mail_outbox gains the bounce of a sent reply: bounced_at (the store's clock when the first
-- report that the reply could not be delivered was recorded), bounce_status (its enhanced status
-- code, "5.1.1") and bounce_diagnostic (the failed recipient and the remote server's reply). The
-- first report stays; a reply is bounced whether or not it was marked sent (a crash between the
-- relay's 250 and the mark leaves it unsent, and its bounce still counts).
--
-- receiver_checkpoints holds how far a receiver that reads a mailbox has read it: for an IMAP
-- mailbox, keyed by the receiver's name for it (account, server and mailbox), the mailbox's
-- UIDVALIDITY and the highest UID of a message that was delivered and acknowledged (flagged
-- \Seen or moved) with every message before it. A UIDVALIDITY that differs from the stored one
-- makes the UIDs meaningless and the receiver starts over (ingestion is idempotent).

-- +goose Up
ALTER TABLE mail_outbox
    ADD COLUMN bounced_at        DATETIME(6) NULL,
    ADD COLUMN bounce_status     VARCHAR(16) NULL,
    ADD COLUMN bounce_diagnostic TEXT        NULL;

CREATE TABLE receiver_checkpoints (
    receiver     VARCHAR(191) NOT NULL,
    uid_validity BIGINT       NOT NULL,
    last_uid     BIGINT       NOT NULL,
    updated_at   DATETIME(6)  NOT NULL,
    PRIMARY KEY (receiver)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE receiver_checkpoints;
ALTER TABLE mail_outbox DROP COLUMN bounced_at, DROP COLUMN bounce_status, DROP COLUMN bounce_diagnostic;
