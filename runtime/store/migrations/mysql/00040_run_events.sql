-- The events of a run that its status trail does not show by itself: who reopened a failed,
-- abandoned or skipped run, when and why, with the status and reason it had until then (a
-- reopened run is running again and its row no longer holds them). One row per event, read
-- by run (run_id, id). kind says what happened ('reopened'); actor is who asked (an operator's
-- name, a service); happened_at is on the store's clock (the database's), UTC. Deleting a run
-- (DeleteThread) deletes its events.

-- +goose Up
CREATE TABLE run_events (
    id           BIGINT       NOT NULL AUTO_INCREMENT,
    run_id       BIGINT       NOT NULL,
    happened_at  DATETIME(6)  NOT NULL,
    kind         VARCHAR(32)  NOT NULL,
    actor        VARCHAR(191) NOT NULL,
    reason       TEXT         NOT NULL,
    prior_status VARCHAR(16)  NOT NULL,
    prior_reason TEXT         NOT NULL,
    PRIMARY KEY (id),
    KEY run_events_run (run_id, id),
    CONSTRAINT run_events_run FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE run_events;
