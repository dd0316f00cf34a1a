-- One runs table for reply runs and scheduled runs (runtime/store, issue 12); it replaces
-- responsibility_runs, whose rows it keeps under their ids.
--
-- run_key is the caller's idempotency key: starting a run whose key exists returns that run.
-- A reply run answers the message message_seq of thread_id; a scheduled run is one fire of
-- responsibility at fire_at (UTC), and one fire has at most one run. status starts 'running'
-- (or 'skipped', for a fire recorded as not run) and moves once to a final status; reason says
-- why. The lease (lease_holder, lease_expires_at) says who works on a running run and until when;
-- attempt counts the holders (1, plus one per takeover). compaction_seq is the boundary of the
-- compaction the run started with (0: none). Usage is in tokens.
--
-- The generated columns running_thread / running_responsibility hold the thread or
-- responsibility only while the run is running, so their unique keys allow one running run per
-- persona and thread and one per persona and responsibility (NULLs never collide).
--
-- tool_uses.source_type/source_id become owner_type/owner_id ('message' or 'run'): the owner of a
-- round is the message answered or the run. Rows of responsibility runs keep their ids.

-- +goose Up
CREATE TABLE runs (
    id                     BIGINT       NOT NULL AUTO_INCREMENT,
    run_key                VARCHAR(191) NOT NULL,
    kind                   VARCHAR(16)  NOT NULL,
    persona                VARCHAR(191) NOT NULL,
    thread_id              VARCHAR(191) NULL,
    message_seq            BIGINT       NULL,
    responsibility         VARCHAR(191) NULL,
    fire_at                DATETIME(6)  NULL,
    compaction_seq         BIGINT       NOT NULL DEFAULT 0,
    status                 VARCHAR(16)  NOT NULL,
    reason                 TEXT         NOT NULL,
    lease_holder           VARCHAR(191) NOT NULL,
    lease_expires_at       DATETIME(6)  NULL,
    attempt                INT          NOT NULL,
    started_at             DATETIME(6)  NOT NULL,
    finished_at            DATETIME(6)  NULL,
    stop_reason            VARCHAR(191) NOT NULL DEFAULT '',
    input_tokens           BIGINT       NOT NULL DEFAULT 0,
    output_tokens          BIGINT       NOT NULL DEFAULT 0,
    cache_read_tokens      BIGINT       NOT NULL DEFAULT 0,
    cache_write_tokens     BIGINT       NOT NULL DEFAULT 0,
    running_thread         VARCHAR(191) GENERATED ALWAYS AS (CASE WHEN status = 'running' THEN thread_id END) STORED,
    running_responsibility VARCHAR(191) GENERATED ALWAYS AS (CASE WHEN status = 'running' THEN responsibility END) STORED,
    created_at             DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY runs_key (run_key),
    UNIQUE KEY runs_fire (persona, responsibility, fire_at),
    UNIQUE KEY runs_running_thread (persona, running_thread),
    UNIQUE KEY runs_running_responsibility (persona, running_responsibility),
    KEY runs_persona_thread (persona, thread_id, id),
    KEY runs_persona_responsibility (persona, responsibility, id),
    KEY runs_thread (thread_id),
    CONSTRAINT runs_thread FOREIGN KEY (thread_id) REFERENCES threads (id),
    CONSTRAINT runs_message FOREIGN KEY (message_seq) REFERENCES messages (seq),
    CONSTRAINT runs_kind CHECK (kind IN ('reply', 'scheduled')),
    CONSTRAINT runs_status CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'abandoned')),
    CONSTRAINT runs_reply CHECK (kind <> 'reply' OR (thread_id IS NOT NULL AND message_seq IS NOT NULL
        AND responsibility IS NULL AND fire_at IS NULL)),
    CONSTRAINT runs_scheduled CHECK (kind <> 'scheduled' OR (responsibility IS NOT NULL AND fire_at IS NOT NULL
        AND thread_id IS NULL AND message_seq IS NULL))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO runs (id, run_key, kind, persona, responsibility, fire_at, status, reason, lease_holder,
    attempt, started_at, finished_at)
SELECT id, CONCAT('responsibility_run:', id), 'scheduled', persona, responsibility, started_at,
    CASE WHEN status = 'running' THEN 'abandoned' ELSE status END,
    CASE WHEN status = 'running' THEN 'still running when the runs table replaced responsibility_runs' ELSE detail END,
    '', 1, started_at, CASE WHEN status = 'running' THEN UTC_TIMESTAMP(6) ELSE finished_at END
FROM responsibility_runs;

DROP TABLE responsibility_runs;

ALTER TABLE tool_uses DROP CONSTRAINT tool_uses_source_type, DROP CONSTRAINT tool_uses_thread;
UPDATE tool_uses SET source_type = 'run' WHERE source_type = 'responsibility_run';
ALTER TABLE tool_uses
    RENAME COLUMN source_type TO owner_type,
    RENAME COLUMN source_id TO owner_id,
    RENAME INDEX tool_uses_thread_source TO tool_uses_thread_owner,
    ADD CONSTRAINT tool_uses_owner_type CHECK (owner_type IN ('message', 'run')),
    ADD CONSTRAINT tool_uses_thread CHECK (owner_type <> 'message' OR thread_id IS NOT NULL);

-- +goose Down
ALTER TABLE tool_uses DROP CONSTRAINT tool_uses_owner_type, DROP CONSTRAINT tool_uses_thread;
UPDATE tool_uses SET owner_type = 'responsibility_run' WHERE owner_type = 'run';
ALTER TABLE tool_uses
    RENAME COLUMN owner_type TO source_type,
    RENAME COLUMN owner_id TO source_id,
    RENAME INDEX tool_uses_thread_owner TO tool_uses_thread_source,
    ADD CONSTRAINT tool_uses_source_type CHECK (source_type IN ('message', 'responsibility_run')),
    ADD CONSTRAINT tool_uses_thread CHECK (source_type <> 'message' OR thread_id IS NOT NULL);

CREATE TABLE responsibility_runs (
    id             BIGINT       NOT NULL AUTO_INCREMENT,
    persona        VARCHAR(191) NOT NULL,
    responsibility VARCHAR(191) NOT NULL,
    status         VARCHAR(16)  NOT NULL,
    started_at     DATETIME(6)  NOT NULL,
    finished_at    DATETIME(6)  NULL,
    detail         TEXT         NOT NULL,
    PRIMARY KEY (id),
    KEY responsibility_runs_persona (persona, responsibility, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

INSERT INTO responsibility_runs (id, persona, responsibility, status, started_at, finished_at, detail)
SELECT id, persona, responsibility, CASE WHEN status = 'abandoned' THEN 'failed' ELSE status END,
    started_at, finished_at, reason
FROM runs WHERE kind = 'scheduled';

DROP TABLE runs;
