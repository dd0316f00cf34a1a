-- How a run's attempts end (runtime/agent): every error that stops a run has a failure class.
--
-- failure_class is the class of the error that stopped the run's last attempt (a running run
-- that is resumable) or that ended it (a failed run); '' for none. The classes are a closed set,
-- named in store.FailureClass; a new class is a new migration.
-- retry_at is when a stopped run may be resumed (a provider's Retry-After from the stop, UTC);
-- NULL for at once.
-- faults counts the run's attempts that ended by a fault: a panic, a worker that died without
-- releasing its lease (counted when the run is resumed), or an error of no known class. The
-- runner fails a run at its third fault.
--
-- An attempt that stops without finishing the run releases its lease: lease_holder '' and
-- lease_expires_at the release time, so any worker may resume it at once.

-- +goose Up
ALTER TABLE runs
    ADD COLUMN failure_class VARCHAR(32) NOT NULL DEFAULT '' AFTER reason,
    ADD COLUMN retry_at DATETIME(6) NULL AFTER failure_class,
    ADD COLUMN faults INT NOT NULL DEFAULT 0 AFTER attempt,
    ADD CONSTRAINT runs_failure_class CHECK (failure_class IN ('', 'shutdown', 'timeout', 'model_unavailable',
        'unavailable', 'busy', 'unclassified', 'crashed', 'invalid_answer', 'request_refused', 'context_window',
        'max_turns', 'no_answer', 'host_error'));

-- +goose Down
ALTER TABLE runs
    DROP CONSTRAINT runs_failure_class,
    DROP COLUMN faults,
    DROP COLUMN retry_at,
    DROP COLUMN failure_class;
