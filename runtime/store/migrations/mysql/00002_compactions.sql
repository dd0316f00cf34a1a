-- Compactions (runtime/store, issue 5): one row per summarised stretch of a thread. A row is
-- claimed by inserting it 'pending' (the unique key (thread_id, boundary_seq) makes the insert
-- the claim), and completed by the claimant holding claim_token. summary is the generated text,
-- stored once and never recomputed; previous_boundary_seq names the compaction whose summary it
-- builds on (NULL for the first). A boundary is a messages.seq: the summary covers every message
-- of the thread with seq <= boundary_seq, and with them all their tool rounds.
-- The messages index on (thread_id, sent_at, seq) serves history replay, which reads a thread
-- in (sent_at, seq) order.

-- +goose Up
CREATE TABLE compactions (
    id                    BIGINT       NOT NULL AUTO_INCREMENT,
    thread_id             VARCHAR(191) NOT NULL,
    boundary_seq          BIGINT       NOT NULL,
    boundary_message_id   VARCHAR(255) NOT NULL,
    status                VARCHAR(16)  NOT NULL,
    summary               MEDIUMTEXT   NOT NULL,
    previous_boundary_seq BIGINT       NULL,
    claim_token           VARCHAR(64)  NOT NULL,
    claimed_at            DATETIME(6)  NOT NULL,
    completed_at          DATETIME(6)  NULL,
    created_at            DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY compactions_thread_boundary (thread_id, boundary_seq),
    KEY compactions_thread_status (thread_id, status, boundary_seq),
    CONSTRAINT compactions_thread FOREIGN KEY (thread_id) REFERENCES threads (id),
    CONSTRAINT compactions_status CHECK (status IN ('pending', 'completed'))
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE INDEX messages_thread_sent ON messages (thread_id, sent_at, seq);

-- +goose Down
DROP INDEX messages_thread_sent ON messages;
DROP TABLE compactions;
