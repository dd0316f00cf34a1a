-- The outbox of runtime/mail's replies (issue 16), SQLite form of migrations/mysql/00030_mail.sql.

-- +goose Up
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
