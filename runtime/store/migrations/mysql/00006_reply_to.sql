-- A message's Reply-To addresses (runtime/store, issue 12): where a reply goes instead of the
-- sender, as a JSON array like recipients and cc. Messages stored before have NULL, read as none.

-- +goose Up
ALTER TABLE messages ADD COLUMN reply_to MEDIUMTEXT NULL AFTER cc;

-- +goose Down
ALTER TABLE messages DROP COLUMN reply_to;
