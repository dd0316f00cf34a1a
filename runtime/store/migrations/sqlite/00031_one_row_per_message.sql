-- A message is one row (issue 16, ingestion in at most three round trips), SQLite form of
-- migrations/mysql/00031_one_row_per_message.sql (see there): attachment metadata moves into
-- messages.attachments (a JSON array, NULL when none) and the threads table goes, the thread's
-- first message carrying thread_start. SQLite cannot drop or retarget a foreign key in place,
-- so messages, runs and compactions are rebuilt: each is copied aside, dropped, created anew
-- and filled from the copy. The migration runs in goose's transaction with
-- defer_foreign_keys on, so the rows that reference messages while it is rebuilt (runs,
-- mail_outbox, attachments, the run ledger) are checked at the commit, when their parents are
-- back; the rows that would cascade away with runs (the run ledger of migration 00020) are
-- copied aside and put back; the AUTOINCREMENT high-water marks are carried over, so no seq or
-- id is handed out twice. (Any other table that references runs ON DELETE CASCADE would have to
-- be copied aside here as well.)

-- +goose Up
PRAGMA defer_foreign_keys = ON;
CREATE TABLE sequence_copy AS SELECT name, seq FROM sqlite_sequence WHERE name IN ('messages', 'runs', 'compactions');

CREATE TABLE messages_copy AS SELECT * FROM messages;
DROP TABLE messages;
CREATE TABLE messages (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id     TEXT NOT NULL,
    thread_start  TEXT NULL CHECK (thread_start IS NULL OR thread_start = thread_id),
    message_id    TEXT NOT NULL,
    direction     TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    sender        TEXT NOT NULL,
    recipients    TEXT NOT NULL,
    cc            TEXT NOT NULL,
    subject       TEXT NOT NULL,
    sent_at       TEXT NOT NULL,
    text_body     TEXT NOT NULL,
    html_body     TEXT NOT NULL,
    attachments   TEXT NULL,
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    mailbox       TEXT NOT NULL DEFAULT '',
    in_reply_to   TEXT NOT NULL DEFAULT '',
    refs          TEXT NULL,
    run_key       TEXT NULL,
    not_to_answer TEXT NULL,
    problems      TEXT NULL,
    reply_to      TEXT NULL
);
INSERT INTO messages (seq, thread_id, thread_start, message_id, direction, sender, recipients, cc, subject, sent_at,
    text_body, html_body, attachments, created_at, mailbox, in_reply_to, refs, run_key, not_to_answer, problems, reply_to)
SELECT c.seq, c.thread_id, CASE WHEN f.seq IS NOT NULL THEN c.thread_id END, c.message_id, c.direction, c.sender,
    c.recipients, c.cc, c.subject, c.sent_at, c.text_body, c.html_body, a.list, c.created_at, c.mailbox, c.in_reply_to,
    c.refs, c.run_key, c.not_to_answer, c.problems, c.reply_to
FROM messages_copy c
LEFT JOIN (SELECT MIN(seq) AS seq FROM messages_copy GROUP BY thread_id) f ON f.seq = c.seq
LEFT JOIN (
    SELECT message_seq, json_group_array(json_object('id', attachment_id, 'filename', filename,
        'content_type', content_type, 'size', size_bytes) ORDER BY position) AS list
    FROM attachments GROUP BY message_seq
) a ON a.message_seq = c.seq
ORDER BY c.seq;
DROP TABLE messages_copy;
CREATE UNIQUE INDEX messages_mailbox_message_id ON messages (mailbox, message_id);
CREATE UNIQUE INDEX messages_run_key ON messages (run_key);
CREATE INDEX messages_thread_window ON messages (thread_id, seq, message_id);
CREATE UNIQUE INDEX messages_thread_start ON messages (thread_start);

-- The run ledger (run_turns, run_call_outcomes; migration 00020) is deleted with its runs ON
-- DELETE CASCADE, which dropping runs sets off: it is copied aside and put back.
CREATE TABLE runs_copy AS SELECT * FROM runs;
CREATE TABLE run_turns_copy AS SELECT * FROM run_turns;
CREATE TABLE run_call_outcomes_copy AS SELECT * FROM run_call_outcomes;
DROP TABLE runs;
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key            TEXT    NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('reply', 'scheduled')),
    persona            TEXT    NOT NULL,
    thread_id          TEXT    NULL REFERENCES messages (thread_start),
    message_seq        INTEGER NULL REFERENCES messages (seq),
    responsibility     TEXT    NULL,
    fire_at            TEXT    NULL,
    compaction_seq     INTEGER NOT NULL DEFAULT 0,
    status             TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'abandoned')),
    reason             TEXT    NOT NULL,
    lease_holder       TEXT    NOT NULL,
    lease_expires_at   TEXT    NULL,
    attempt            INTEGER NOT NULL,
    started_at         TEXT    NOT NULL,
    finished_at        TEXT    NULL,
    stop_reason        TEXT    NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    view_seq           INTEGER NOT NULL DEFAULT 0,
    CHECK (kind <> 'reply' OR (thread_id IS NOT NULL AND message_seq IS NOT NULL
        AND responsibility IS NULL AND fire_at IS NULL)),
    CHECK (kind <> 'scheduled' OR (responsibility IS NOT NULL AND fire_at IS NOT NULL
        AND thread_id IS NULL AND message_seq IS NULL))
);
INSERT INTO runs (id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, status,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq)
SELECT id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, status,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq
FROM runs_copy ORDER BY id;
DROP TABLE runs_copy;
INSERT INTO run_turns SELECT * FROM run_turns_copy;
INSERT INTO run_call_outcomes SELECT * FROM run_call_outcomes_copy;
DROP TABLE run_call_outcomes_copy;
DROP TABLE run_turns_copy;
CREATE UNIQUE INDEX runs_key ON runs (run_key);
CREATE UNIQUE INDEX runs_fire ON runs (persona, responsibility, fire_at);
CREATE UNIQUE INDEX runs_running_thread ON runs (persona, thread_id) WHERE status = 'running';
CREATE UNIQUE INDEX runs_running_responsibility ON runs (persona, responsibility) WHERE status = 'running';
CREATE INDEX runs_persona_thread ON runs (persona, thread_id, id);
CREATE INDEX runs_persona_responsibility ON runs (persona, responsibility, id);
CREATE INDEX runs_thread ON runs (thread_id);

CREATE TABLE compactions_copy AS SELECT * FROM compactions;
DROP TABLE compactions;
CREATE TABLE compactions (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id             TEXT NOT NULL REFERENCES messages (thread_start),
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
INSERT INTO compactions SELECT * FROM compactions_copy ORDER BY id;
DROP TABLE compactions_copy;
CREATE UNIQUE INDEX compactions_thread_boundary ON compactions (thread_id, boundary_seq);
CREATE INDEX compactions_thread_status ON compactions (thread_id, status, boundary_seq);

DROP TABLE attachments;
DROP TABLE threads;

UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT c.seq FROM sequence_copy c WHERE c.name = sqlite_sequence.name))
WHERE name IN (SELECT name FROM sequence_copy);
INSERT INTO sqlite_sequence (name, seq) SELECT name, seq FROM sequence_copy
WHERE name NOT IN (SELECT name FROM sqlite_sequence);
DROP TABLE sequence_copy;

-- +goose Down
PRAGMA defer_foreign_keys = ON;
CREATE TABLE sequence_copy AS SELECT name, seq FROM sqlite_sequence WHERE name IN ('messages', 'runs', 'compactions');

CREATE TABLE threads (
    id         TEXT NOT NULL PRIMARY KEY,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now'))
);
INSERT INTO threads (id, created_at) SELECT thread_start, created_at FROM messages WHERE thread_start IS NOT NULL;

CREATE TABLE attachments (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    message_seq   INTEGER NOT NULL REFERENCES messages (seq),
    position      INTEGER NOT NULL,
    attachment_id TEXT NOT NULL,
    filename      TEXT NOT NULL,
    content_type  TEXT NOT NULL,
    size_bytes    INTEGER NOT NULL
);
INSERT INTO attachments (message_seq, position, attachment_id, filename, content_type, size_bytes)
SELECT m.seq, j.key, json_extract(j.value, '$.id'), json_extract(j.value, '$.filename'),
    json_extract(j.value, '$.content_type'), json_extract(j.value, '$.size')
FROM messages m, json_each(m.attachments) j
WHERE m.attachments IS NOT NULL
ORDER BY m.seq, j.key;
CREATE UNIQUE INDEX attachments_message_position ON attachments (message_seq, position);

-- runs and compactions first: they reference messages (thread_start), which goes below.
CREATE TABLE compactions_copy AS SELECT * FROM compactions;
DROP TABLE compactions;
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
INSERT INTO compactions SELECT * FROM compactions_copy ORDER BY id;
DROP TABLE compactions_copy;
CREATE UNIQUE INDEX compactions_thread_boundary ON compactions (thread_id, boundary_seq);
CREATE INDEX compactions_thread_status ON compactions (thread_id, status, boundary_seq);

-- The run ledger (run_turns, run_call_outcomes; migration 00020) is deleted with its runs ON
-- DELETE CASCADE, which dropping runs sets off: it is copied aside and put back.
CREATE TABLE runs_copy AS SELECT * FROM runs;
CREATE TABLE run_turns_copy AS SELECT * FROM run_turns;
CREATE TABLE run_call_outcomes_copy AS SELECT * FROM run_call_outcomes;
DROP TABLE runs;
CREATE TABLE runs (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    run_key            TEXT    NOT NULL,
    kind               TEXT    NOT NULL CHECK (kind IN ('reply', 'scheduled')),
    persona            TEXT    NOT NULL,
    thread_id          TEXT    NULL REFERENCES threads (id),
    message_seq        INTEGER NULL REFERENCES messages (seq),
    responsibility     TEXT    NULL,
    fire_at            TEXT    NULL,
    compaction_seq     INTEGER NOT NULL DEFAULT 0,
    status             TEXT    NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'skipped', 'abandoned')),
    reason             TEXT    NOT NULL,
    lease_holder       TEXT    NOT NULL,
    lease_expires_at   TEXT    NULL,
    attempt            INTEGER NOT NULL,
    started_at         TEXT    NOT NULL,
    finished_at        TEXT    NULL,
    stop_reason        TEXT    NOT NULL DEFAULT '',
    input_tokens       INTEGER NOT NULL DEFAULT 0,
    output_tokens      INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    created_at         TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    view_seq           INTEGER NOT NULL DEFAULT 0,
    CHECK (kind <> 'reply' OR (thread_id IS NOT NULL AND message_seq IS NOT NULL
        AND responsibility IS NULL AND fire_at IS NULL)),
    CHECK (kind <> 'scheduled' OR (responsibility IS NOT NULL AND fire_at IS NOT NULL
        AND thread_id IS NULL AND message_seq IS NULL))
);
INSERT INTO runs (id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, status,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq)
SELECT id, run_key, kind, persona, thread_id, message_seq, responsibility, fire_at, compaction_seq, status,
    reason, lease_holder, lease_expires_at, attempt, started_at, finished_at, stop_reason, input_tokens, output_tokens,
    cache_read_tokens, cache_write_tokens, created_at, view_seq
FROM runs_copy ORDER BY id;
DROP TABLE runs_copy;
INSERT INTO run_turns SELECT * FROM run_turns_copy;
INSERT INTO run_call_outcomes SELECT * FROM run_call_outcomes_copy;
DROP TABLE run_call_outcomes_copy;
DROP TABLE run_turns_copy;
CREATE UNIQUE INDEX runs_key ON runs (run_key);
CREATE UNIQUE INDEX runs_fire ON runs (persona, responsibility, fire_at);
CREATE UNIQUE INDEX runs_running_thread ON runs (persona, thread_id) WHERE status = 'running';
CREATE UNIQUE INDEX runs_running_responsibility ON runs (persona, responsibility) WHERE status = 'running';
CREATE INDEX runs_persona_thread ON runs (persona, thread_id, id);
CREATE INDEX runs_persona_responsibility ON runs (persona, responsibility, id);
CREATE INDEX runs_thread ON runs (thread_id);

CREATE TABLE messages_copy AS SELECT * FROM messages;
DROP TABLE messages;
CREATE TABLE messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id  TEXT NOT NULL REFERENCES threads (id),
    message_id TEXT NOT NULL,
    direction  TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    sender     TEXT NOT NULL,
    recipients TEXT NOT NULL,
    cc         TEXT NOT NULL,
    subject    TEXT NOT NULL,
    sent_at    TEXT NOT NULL,
    text_body  TEXT NOT NULL,
    html_body  TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f000', 'now')),
    mailbox       TEXT NOT NULL DEFAULT '',
    in_reply_to   TEXT NOT NULL DEFAULT '',
    refs          TEXT NULL,
    run_key       TEXT NULL,
    not_to_answer TEXT NULL,
    problems      TEXT NULL,
    reply_to      TEXT NULL
);
INSERT INTO messages (seq, thread_id, message_id, direction, sender, recipients, cc, subject, sent_at, text_body,
    html_body, created_at, mailbox, in_reply_to, refs, run_key, not_to_answer, problems, reply_to)
SELECT seq, thread_id, message_id, direction, sender, recipients, cc, subject, sent_at, text_body,
    html_body, created_at, mailbox, in_reply_to, refs, run_key, not_to_answer, problems, reply_to
FROM messages_copy ORDER BY seq;
DROP TABLE messages_copy;
CREATE UNIQUE INDEX messages_mailbox_message_id ON messages (mailbox, message_id);
CREATE UNIQUE INDEX messages_run_key ON messages (run_key);
CREATE INDEX messages_thread_window ON messages (thread_id, seq, message_id);

UPDATE sqlite_sequence SET seq = MAX(seq, (SELECT c.seq FROM sequence_copy c WHERE c.name = sqlite_sequence.name))
WHERE name IN (SELECT name FROM sequence_copy);
INSERT INTO sqlite_sequence (name, seq) SELECT name, seq FROM sequence_copy
WHERE name NOT IN (SELECT name FROM sqlite_sequence);
DROP TABLE sequence_copy;
