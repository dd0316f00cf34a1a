-- A round's assistant message (runtime/store, issue 12): the text before its calls and the
-- provider's opaque state (thinking blocks, reasoning items, as JSON), stored on the round's
-- position-0 tool_uses row (NULL on the others), so a resumed run rebuilds the message exactly
-- and its next request is byte-identical. Rounds recorded before have NULL, read as none.

-- +goose Up
ALTER TABLE tool_uses
    ADD COLUMN round_text  MEDIUMTEXT NULL,
    ADD COLUMN round_state MEDIUMTEXT NULL;

-- +goose Down
ALTER TABLE tool_uses
    DROP COLUMN round_state,
    DROP COLUMN round_text;
