-- The runner's ledger of a run's model calls and tool calls (runtime/agent, issue 15), so a run
-- resumed after a crash neither calls the model again for an answer it already got nor runs a
-- tool that is not idempotent twice.
--
-- run_turns: one row per model call of a run that returned, written before any of its tools
-- runs (the row marks every call of the answer as started): the assistant message (its text, its
-- tool calls as JSON [{"id","name","arguments"}] with the arguments as the model produced them,
-- its provider state as tool_uses.round_state holds it), the stop reason, the provider's ids and
-- the call's token usage.
--
-- run_call_outcomes: one row per call of a tool that is not idempotent whose outcome is known,
-- written as soon as the call returned: its result (redacted and clipped as tool_uses.result) and
-- whether it succeeded. A call of a turn row without an outcome row and without a recorded round
-- is in doubt. Both tables go with their run (ON DELETE CASCADE).

-- +goose Up
CREATE TABLE run_turns (
    run_id             BIGINT       NOT NULL,
    turn_index         INT          NOT NULL,
    message_text       MEDIUMTEXT   NOT NULL,
    tool_calls         MEDIUMTEXT   NOT NULL,
    state              MEDIUMTEXT   NOT NULL,
    stop_reason        VARCHAR(191) NOT NULL,
    model              VARCHAR(191) NOT NULL,
    request_id         VARCHAR(255) NOT NULL,
    response_id        VARCHAR(255) NOT NULL,
    input_tokens       BIGINT       NOT NULL,
    output_tokens      BIGINT       NOT NULL,
    cache_read_tokens  BIGINT       NOT NULL,
    cache_write_tokens BIGINT       NOT NULL,
    created_at         DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (run_id, turn_index),
    CONSTRAINT run_turns_run FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE run_call_outcomes (
    run_id       BIGINT       NOT NULL,
    turn_index   INT          NOT NULL,
    position     INT          NOT NULL,
    tool_call_id VARCHAR(255) NOT NULL,
    tool_name    VARCHAR(255) NOT NULL,
    result       TEXT         NOT NULL,
    succeeded    BOOLEAN      NOT NULL,
    created_at   DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (run_id, turn_index, position),
    CONSTRAINT run_call_outcomes_turn FOREIGN KEY (run_id, turn_index) REFERENCES run_turns (run_id, turn_index) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE run_call_outcomes;
DROP TABLE run_turns;
