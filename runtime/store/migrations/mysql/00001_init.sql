-- The store's first schema (runtime/store, issue 4). utf8mb4 with a binary collation on every
-- table, so identifiers compare byte for byte and 4-byte characters round-trip unchanged.
-- Payload columns are TEXT (65,535 bytes): a payload clipped to 16,000 characters needs at most
-- 16,000 x 4 = 64,000 bytes. Bodies are MEDIUMTEXT (16 MiB). Times are DATETIME(6) in UTC.

-- +goose Up
CREATE TABLE threads (
    id         VARCHAR(191) NOT NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE messages (
    seq        BIGINT       NOT NULL AUTO_INCREMENT,
    thread_id  VARCHAR(191) NOT NULL,
    message_id VARCHAR(255) NOT NULL,
    direction  VARCHAR(16)  NOT NULL,
    sender     TEXT         NOT NULL,
    recipients MEDIUMTEXT   NOT NULL,
    cc         MEDIUMTEXT   NOT NULL,
    subject    TEXT         NOT NULL,
    sent_at    DATETIME(6)  NOT NULL,
    text_body  MEDIUMTEXT   NOT NULL,
    html_body  MEDIUMTEXT   NOT NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (seq),
    UNIQUE KEY messages_message_id (message_id),
    KEY messages_thread_seq (thread_id, seq),
    CONSTRAINT messages_thread FOREIGN KEY (thread_id) REFERENCES threads (id),
    CONSTRAINT messages_direction CHECK (direction IN ('inbound', 'outbound'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE attachments (
    seq           BIGINT       NOT NULL AUTO_INCREMENT,
    message_seq   BIGINT       NOT NULL,
    position      INT          NOT NULL,
    attachment_id TEXT         NOT NULL,
    filename      TEXT         NOT NULL,
    content_type  VARCHAR(255) NOT NULL,
    size_bytes    BIGINT       NOT NULL,
    PRIMARY KEY (seq),
    UNIQUE KEY attachments_message_position (message_seq, position),
    CONSTRAINT attachments_message FOREIGN KEY (message_seq) REFERENCES messages (seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

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

CREATE TABLE tool_uses (
    seq          BIGINT       NOT NULL AUTO_INCREMENT,
    source_type  VARCHAR(32)  NOT NULL,
    source_id    BIGINT       NOT NULL,
    thread_id    VARCHAR(191) NULL,
    persona      VARCHAR(191) NOT NULL,
    run_id       VARCHAR(191) NOT NULL,
    turn_index   INT          NOT NULL,
    position     INT          NOT NULL,
    tool_call_id VARCHAR(255) NOT NULL,
    tool_name    VARCHAR(255) NOT NULL,
    arguments    TEXT         NOT NULL,
    result       TEXT         NOT NULL,
    succeeded    BOOLEAN      NOT NULL,
    created_at   DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (seq),
    UNIQUE KEY tool_uses_round_position (source_type, source_id, run_id, turn_index, position),
    KEY tool_uses_thread_source (thread_id, source_id, seq),
    CONSTRAINT tool_uses_source_type CHECK (source_type IN ('message', 'responsibility_run')),
    CONSTRAINT tool_uses_thread CHECK (source_type <> 'message' OR thread_id IS NOT NULL)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE tool_uses;
DROP TABLE responsibility_runs;
DROP TABLE attachments;
DROP TABLE messages;
DROP TABLE threads;
