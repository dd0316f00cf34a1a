-- Compactions (runtime/store, issue 5), SQLite form of migrations/mysql/00002_compactions.sql:
-- one row per summarised stretch of a thread, claimed by inserting it 'pending' on the unique
-- key (thread_id, boundary_seq) and completed by the claimant holding claim_token. Times are
-- TEXT 'YYYY-MM-DD HH:MM:SS.ffffff' (UTC), as in 00001.

-- +goose Up
CREATE TABLE compactions (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id             TEXT NOT NULL REFERENCES threads (id),
    boundary_seq          INTEGER NOT NULL,
    boundary_message_id   TEXT NOT NULL,
    status                TEXT NOT NULL CHECK (status IN ('pending', 'completed')),
    summary               TEXT NOT NULL,
    previous_boundary_seq INTEGER NULL,
    claim_token           TEXT NOT NULL,
    claimed_at            TEXT NOT NULL,
    completed_at          TEXT NULL,
    created_at            TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now'))
);
CREATE UNIQUE INDEX compactions_thread_boundary ON compactions (thread_id, boundary_seq);
CREATE INDEX compactions_thread_status ON compactions (thread_id, status, boundary_seq);

CREATE INDEX messages_thread_sent ON messages (thread_id, sent_at, seq);

-- +goose Down
DROP INDEX messages_thread_sent;
DROP TABLE compactions;
