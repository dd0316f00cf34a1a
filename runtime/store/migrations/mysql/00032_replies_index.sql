-- An index of the messages that answer a message (issue 16): mail ingestion asks, in its one
-- lookup, whether the mailbox holds an outbound message whose In-Reply-To is the id of the
-- message being ingested (its reply arrived first: an import of a sent folder, a late
-- delivery), so that the message is not answered twice.

-- +goose Up
ALTER TABLE messages ADD INDEX messages_mailbox_in_reply_to (mailbox, in_reply_to);

-- +goose Down
ALTER TABLE messages DROP INDEX messages_mailbox_in_reply_to;
