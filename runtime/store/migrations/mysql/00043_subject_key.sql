-- The subject rule of runtime/mail's threading: a reply without reference headers (no
-- References, In-Reply-To or Thread-Index) joins the sender's newest thread of the same
-- normalised subject within a window. messages.subject_key holds each inbound message's key
-- (runtime/mail's SubjectKey: 32 hex digits of a digest of the sender's address and the
-- normalised subject; NULL for outbound messages and for messages stored before this
-- migration, which the rule then never finds), and the index (mailbox, subject_key, sent_at,
-- seq) answers the rule's lookup — the newest message of a mailbox with a key, not older than
-- the window — by reading one index entry, whatever the mailbox holds.

-- +goose Up
ALTER TABLE messages
    ADD COLUMN subject_key CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NULL,
    ADD INDEX messages_mailbox_subject (mailbox, subject_key, sent_at, seq);

-- +goose Down
ALTER TABLE messages
    DROP INDEX messages_mailbox_subject,
    DROP COLUMN subject_key;
