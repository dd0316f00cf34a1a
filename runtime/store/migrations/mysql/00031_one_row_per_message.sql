-- A message is one row (issue 16, ingestion in at most three round trips): storing a message
-- writes one row in one statement, so no crash can leave half of it. Two tables go:
--
--   * attachments: a message's attachment metadata moves into messages.attachments, a JSON
--     array of {"id", "filename", "content_type", "size"} objects in the message's order (NULL
--     when it has none), written with the message and read with it.
--   * threads: a thread is its first message. messages.thread_start is the thread id on the
--     thread's first row and NULL on the others (unique, and equal to thread_id when set), so
--     the first row stands for the thread: runs and compactions reference it as they referenced
--     threads (id), and an append to a thread write-locks it (INSERT ... SELECT ... FROM
--     messages WHERE thread_start = ? FOR UPDATE) as it locked the thread's row before.
--
-- The first message of every stored thread becomes its thread_start row; a thread row without
-- messages (only an interrupted append could leave one) goes. Down restores both tables.

-- +goose Up
SET SESSION group_concat_max_len = 1073741824;
ALTER TABLE messages
    ADD COLUMN thread_start VARCHAR(191) NULL AFTER thread_id,
    ADD COLUMN attachments MEDIUMTEXT NULL AFTER html_body;
UPDATE messages m JOIN (SELECT MIN(seq) AS seq FROM messages GROUP BY thread_id) f ON f.seq = m.seq
SET m.thread_start = m.thread_id;
UPDATE messages m JOIN (
    SELECT message_seq, CONCAT('[', GROUP_CONCAT(JSON_OBJECT('id', attachment_id, 'filename', filename,
        'content_type', content_type, 'size', size_bytes) ORDER BY position SEPARATOR ','), ']') AS list
    FROM attachments GROUP BY message_seq
) a ON a.message_seq = m.seq
SET m.attachments = a.list;
ALTER TABLE messages
    ADD UNIQUE KEY messages_thread_start (thread_start),
    ADD CONSTRAINT messages_thread_start_check CHECK (thread_start IS NULL OR thread_start = thread_id);
ALTER TABLE runs DROP FOREIGN KEY runs_thread;
ALTER TABLE runs ADD CONSTRAINT runs_thread FOREIGN KEY (thread_id) REFERENCES messages (thread_start);
ALTER TABLE compactions DROP FOREIGN KEY compactions_thread;
ALTER TABLE compactions ADD CONSTRAINT compactions_thread FOREIGN KEY (thread_id) REFERENCES messages (thread_start);
ALTER TABLE messages DROP FOREIGN KEY messages_thread;
DROP TABLE attachments;
DROP TABLE threads;

-- +goose Down
CREATE TABLE threads (
    id         VARCHAR(191) NOT NULL,
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
INSERT INTO threads (id, created_at) SELECT thread_start, created_at FROM messages WHERE thread_start IS NOT NULL;
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
INSERT INTO attachments (message_seq, position, attachment_id, filename, content_type, size_bytes)
WITH RECURSIVE n (i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 499)
SELECT m.seq, n.i,
    JSON_UNQUOTE(JSON_EXTRACT(m.attachments, CONCAT('$[', n.i, '].id'))),
    JSON_UNQUOTE(JSON_EXTRACT(m.attachments, CONCAT('$[', n.i, '].filename'))),
    JSON_UNQUOTE(JSON_EXTRACT(m.attachments, CONCAT('$[', n.i, '].content_type'))),
    JSON_EXTRACT(m.attachments, CONCAT('$[', n.i, '].size'))
FROM messages m JOIN n ON n.i < JSON_LENGTH(m.attachments)
WHERE m.attachments IS NOT NULL
ORDER BY m.seq, n.i;
ALTER TABLE messages ADD CONSTRAINT messages_thread FOREIGN KEY (thread_id) REFERENCES threads (id);
ALTER TABLE compactions DROP FOREIGN KEY compactions_thread;
ALTER TABLE compactions ADD CONSTRAINT compactions_thread FOREIGN KEY (thread_id) REFERENCES threads (id);
ALTER TABLE runs DROP FOREIGN KEY runs_thread;
ALTER TABLE runs ADD CONSTRAINT runs_thread FOREIGN KEY (thread_id) REFERENCES threads (id);
ALTER TABLE messages
    DROP CONSTRAINT messages_thread_start_check,
    DROP INDEX messages_thread_start,
    DROP COLUMN attachments,
    DROP COLUMN thread_start;
