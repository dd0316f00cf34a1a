-- Approval: calls that change the world wait for a person (runtime/agent, runtime/store's
-- approvals.go).
--
-- runs.status gains 'waiting': a run paused because calls of its current turn wait for a
-- decision. A waiting run holds no lease (lease_holder '', lease_expires_at the time it paused)
-- and keeps its thread or responsibility: running_thread and running_responsibility now hold
-- them for a waiting run too, so their unique keys still allow one unfinished run per persona
-- and thread (or responsibility). waiting_persona holds the persona of a waiting run only, so
-- the service finds the waiting runs through its key without reading the status trail.
--
-- run_approvals: one row per call that waits (or waited) for approval, written with the turn
-- that asked for it (the same transaction as its run_turns row), so a call of a tool that needs
-- approval is never without its row. arguments are the call's arguments as the model produced
-- them; input the input the tool decodes them into (JSON; NULL when the tool cannot decode
-- without running). status is 'waiting' until a person approves or denies it (decided_by,
-- decided_at, note) or its deadline expires_at passes ('expired', decided_at = expires_at, and
-- on_timeout says whether it then runs). started_at is when an approved call was started: an
-- approved call without it has not run and runs on resume; one with it and without an outcome
-- (run_call_outcomes) is in doubt. reveal_approver says whether the model may read who denied
-- it. notice_at is when the host's notification of the waiting call is due (NULL once sent or
-- not wanted). The rows go with their turn (ON DELETE CASCADE).

-- +goose Up
ALTER TABLE runs DROP CONSTRAINT runs_status;
ALTER TABLE runs ADD CONSTRAINT runs_status CHECK (status IN ('running', 'waiting', 'succeeded', 'failed', 'skipped', 'abandoned'));
ALTER TABLE runs
    MODIFY running_thread VARCHAR(191) GENERATED ALWAYS AS (CASE WHEN status IN ('running', 'waiting') THEN thread_id END) STORED,
    MODIFY running_responsibility VARCHAR(191) GENERATED ALWAYS AS (CASE WHEN status IN ('running', 'waiting') THEN responsibility END) STORED;
ALTER TABLE runs
    ADD COLUMN waiting_persona VARCHAR(191) GENERATED ALWAYS AS (CASE WHEN status = 'waiting' THEN persona END) STORED,
    ADD INDEX runs_waiting (waiting_persona);

CREATE TABLE run_approvals (
    id              BIGINT       NOT NULL AUTO_INCREMENT,
    run_id          BIGINT       NOT NULL,
    turn_index      INT          NOT NULL,
    position        INT          NOT NULL,
    tool_call_id    VARCHAR(255) NOT NULL,
    tool_name       VARCHAR(255) NOT NULL,
    arguments       MEDIUMTEXT   NOT NULL,
    input           MEDIUMTEXT   NULL,
    status          VARCHAR(16)  NOT NULL,
    on_timeout      VARCHAR(16)  NOT NULL,
    reveal_approver BOOLEAN      NOT NULL,
    requested_at    DATETIME(6)  NOT NULL,
    expires_at      DATETIME(6)  NOT NULL,
    decided_by      VARCHAR(191) NOT NULL DEFAULT '',
    decided_at      DATETIME(6)  NULL,
    note            TEXT         NOT NULL,
    started_at      DATETIME(6)  NULL,
    notice_at       DATETIME(6)  NULL,
    PRIMARY KEY (id),
    UNIQUE KEY run_approvals_call (run_id, turn_index, position),
    KEY run_approvals_call_id (run_id, tool_call_id),
    KEY run_approvals_run (run_id, status, expires_at),
    KEY run_approvals_status (status, expires_at),
    KEY run_approvals_notice (notice_at),
    CONSTRAINT run_approvals_turn FOREIGN KEY (run_id, turn_index) REFERENCES run_turns (run_id, turn_index) ON DELETE CASCADE,
    CONSTRAINT run_approvals_state CHECK (status IN ('waiting', 'approved', 'denied', 'expired')),
    CONSTRAINT run_approvals_on_timeout CHECK (on_timeout IN ('deny', 'approve'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE run_approvals;
UPDATE runs SET status = 'running' WHERE status = 'waiting';
ALTER TABLE runs DROP INDEX runs_waiting, DROP COLUMN waiting_persona;
ALTER TABLE runs
    MODIFY running_thread VARCHAR(191) GENERATED ALWAYS AS (CASE WHEN status = 'running' THEN thread_id END) STORED,
    MODIFY running_responsibility VARCHAR(191) GENERATED ALWAYS AS (CASE WHEN status = 'running' THEN responsibility END) STORED;
ALTER TABLE runs DROP CONSTRAINT runs_status;
ALTER TABLE runs ADD CONSTRAINT runs_status CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'abandoned'));
