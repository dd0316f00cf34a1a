-- What runtime/mail needs from the store (issue 16), SQLite form of migrations/mysql/00030_mail.sql:
-- messages.reply_to (JSON array; NULL for older rows) and the outbox of outbound replies.

-- +goose Up
ALTER TABLE messages ADD COLUMN reply_to TEXT NULL;

CREATE TABLE mail_outbox (
    message_seq INTEGER NOT NULL PRIMARY KEY REFERENCES messages (seq),
    mailbox     TEXT    NOT NULL,
    sent_at     TEXT    NULL
);
CREATE INDEX mail_outbox_unsent ON mail_outbox (mailbox, sent_at, message_seq);

INSERT INTO mail_outbox (message_seq, mailbox)
    SELECT seq, mailbox FROM messages WHERE run_key IS NOT NULL AND direction = 'outbound';

-- +goose Down
DROP TABLE mail_outbox;
ALTER TABLE messages DROP COLUMN reply_to;
