// Package store is personagen's SQL store (through github.com/jmoiron/sqlx): threads of messages
// with their attachment metadata, reply and scheduled runs with their status trail and lease,
// and the tool uses of every run, so an agent remembers what it did. It implements history.Source
// (package runtime/history) for history replay and compaction (history.go, compaction.go).
//
// Start from Open and Migrate; then AppendMessage and History for threads, StartRun, RecordRound
// and FinishRun for runs. The operator's side — DSNs, migrations, statistics, what each call
// costs — is docs/store.md in the repository.
//
// # Databases
//
// MySQL 8 / MariaDB 10.5+ in production (github.com/go-sql-driver/mysql) and SQLite through the
// pure-Go modernc.org/sqlite as the embedded default, with the same behaviour on both. Open
// chooses the driver from the DSN's form and forces the settings the store relies on (see
// Open); every SQL difference between the two lives in dialect.go. The schema is embedded SQL
// per dialect (migrations/{mysql,sqlite}/NNNNN_name.sql) applied by github.com/pressly/goose/v3:
// call Migrate, or run `personagen migrate -dsn DSN` (or with PERSONAGEN_DSN set).
//
// On MySQL every table is utf8mb4 with collation utf8mb4_bin, so 4-byte characters (emoji, CJK
// extension B) round-trip byte for byte and identifiers compare exactly; times are DATETIME(6)
// in UTC; key columns are NOT NULL; tool-use payloads are TEXT (65,535 bytes, enough for 16,000
// characters of 4 bytes), bodies MEDIUMTEXT. The session runs in strict mode, so an over-long
// value or a NULL in a NOT NULL column is an error, never a silent truncation. Keys are checked
// for length in Go as well, so SQLite, which does not enforce VARCHAR sizes, rejects the same
// values. Text must be valid UTF-8: messages with invalid UTF-8 are rejected (ErrInvalid);
// tool-use payloads and run details, which the host rarely controls, have invalid bytes
// replaced by U+FFFD.
//
// # Guarantees
//
//   - Order: a message's seq is its monotonic insertion key. History replays by seq, the order
//     the store received the thread's messages in, never by sent_at (the sender's Date header,
//     which a skewed clock can put before the message it answers); Thread lists in the same
//     order. sent_at round-trips to the microsecond, in UTC.
//   - Every write is idempotent by its key, so retrying it after any error (an acknowledgement
//     lost after the server committed included) never duplicates and yields the stored key:
//     AppendMessage by (mailbox, message id) (a stored id returns its seq, AlreadyStored, and
//     the fields a second copy differs in), RecordRound by (owner, run id, turn), StartRun by
//     run key, RenewLease / TakeOverRun / StopRun / FinishRun / WaitRun / ReopenRun by run key
//     and holder, AbandonRun by run key, SkipFires by run key and fire, Approve / Deny by run
//     key and call id, Compact by (thread, boundary), DeleteThread by thread id. ResumeRun is
//     the exception: it counts a fault each time it takes a lease that was not released.
//   - A message is one row, written by one statement: its attachments' metadata is a column of
//     it (JSON), and a thread is its first message (thread_start), so storing a message — into a
//     new thread or a stored one — can never leave half of it. On SQLite it costs one round trip.
//     On MySQL an append to a stored thread is a transaction that locks the thread's first row
//     before its INSERT (see Concurrency); so are an outbound reply (with its outbox entry) and a
//     message too large for one statement, on both.
//   - Every field has one limit (limits.go), checked before anything is written, so both dialects
//     refuse the same values with ErrInvalid naming the field.
//   - Runs: at most one running run per persona and thread and per persona and responsibility,
//     one run per fire, leases renewed by their holder and taken over exactly once after expiry.
//     An attempt that stops without finishing its run records why (Reason, a FailureClass, a
//     retry time) and releases the lease in one statement (StopRun); the run keeps its thread
//     or responsibility, and StartRun's BusyError says whether it is resumable now.
//     A run moves once from running to a final status (succeeded, failed, skipped, abandoned);
//     only ReopenRun moves a failed, abandoned or skipped one back to running, for any run kind,
//     recording who asked, when, why and the status it had as a run event (RunEvents, the
//     run_events table), in the same transaction. Succeeded runs are never reopened.
//   - Approvals: a call that needs approval is recorded with its turn (StartTurn), waiting; the
//     run pauses as RunWaiting with its lease released (WaitRun) and keeps its thread or
//     responsibility. Each call is decided once (Approve, Deny: idempotent for the same decision,
//     ErrConflict for another) or expires at its deadline on the store's clock; ResumeWaiting
//     lets one worker resume the run when none waits, and StartApprovedCall marks an approved
//     call started before it runs, so it runs at most once. Approvals lists them (see
//     approvals.go).
//   - DeleteThread removes a thread and everything recorded for it (tool uses, compactions, reply
//     runs, outbox entries, messages) in one transaction.
//   - RecordRound stores a tool-calling round in one transaction with one multi-row INSERT (three
//     round trips on MySQL: BEGIN, INSERT, COMMIT, against 2N+2 for a find-or-create per row): all
//     rows or none; a count mismatch between calls and results is an error before anything is
//     written; a re-record of identical rows writes nothing and says AlreadyStored; a re-record
//     with different content keeps the stored rows and returns a *ConflictError (first write
//     wins); concurrent recorders of one round leave exactly one copy, and lock races (MySQL
//     deadlock 1213, lock wait timeout 1205, SQLite BUSY) are retried a bounded number of times
//     rather than surfaced. Only a duplicate-key error, judged by the driver's error code, means
//     "already stored": there is no INSERT IGNORE to hide truncation or NULL errors. Arguments
//     and results go through the host's RedactFunc, then are clipped to StoredPayloadLimit
//     (16,000) characters with runtime.Clip.
//   - No model call inside a transaction: the store's transactions contain only SQL. RecordRound
//     is entered after the round's tools ran and returns before the next model call; a host must
//     keep it that way (and its RedactFunc must not do I/O), so no lock is ever held across a
//     slow network call.
//   - Reads are deterministic: the same rows give the same values in the same order.
//
// # Clock
//
// Every time the store stamps (a run's start and finish, a lease's expiry, a compaction's claim,
// a run event) and every lease it judges comes from one clock, Store.Now: by default the
// database's clock, measured at Open (three round trips on one connection, the shortest kept)
// and again every DefaultClockSync (a minute), and advanced between measurements on the local
// monotonic clock. Its error is half the measurement's round trip plus the database clock's
// resolution (1 µs on MySQL/MariaDB, whose UTC_TIMESTAMP(6) it reads; 1 ms on SQLite, whose
// strftime('now') it reads), plus the local clock's drift since the measurement, bounded by
// 200 ppm; Now subtracts that bound, so it never reads ahead of the database's clock, and
// replicas whose local clocks disagree by any amount judge leases alike to within their
// measurements' errors. Open (and OpenDB) refuse a database whose clock they cannot read to
// within MaxClockError (a second). Store.Clock reports the measurement in use.
// WithLocalClock replaces the local clock that is corrected (a host's clock source, a test's
// simulated skew); WithClock replaces the whole clock, uncorrected and unmeasured (a test's
// fake clock). On SQLite the database's clock is the clock of the machine the process runs
// on.
//
// # The operator's reads and retention
//
// The console (runtime/console and the `personagen` commands) lists threads by last activity
// (Threads, ThreadDetailOf: a table kept by a trigger on messages, as pending work is), runs by
// status, failure class, persona and time (ListRuns), a run's timeline (RunTimeline), the fires
// of each responsibility (FireTrails) and the outbox (Outbox), each a page read through an
// index in its order (TestConsoleQueryPlans pins the plans). Its actions are store calls that
// record who asked and why: ReopenRun (with no holder, for any worker to resume) and
// RequeueReply, AbandonRunAs (run events), Resend (an OperatorAction). Prune deletes old threads,
// or one address's, in bounded batches, keeping every thread with an unfinished run.
//
// # Replay cost
//
// History reads O(window) rows whatever the thread's length and however many other threads
// the database holds: the window backwards along messages (thread_id, seq, message_id)
// stopped after its limit; the omitted count, only when the query asks
// (history.Query.CountOmitted, which thread_history sets after a summary), inside that index
// without reading a row; attachments come with the window's rows, and tool uses by one index
// probe per message of the window. Each of these queries names its
// index (FORCE INDEX on MySQL, INDEXED BY on SQLite; see Dialect.indexed in dialect.go) so
// that skewed statistics cannot turn a probe into a scan of the thread or the database;
// TestHistoryQueryPlans pins the plans on both databases, with and without statistics.
//
// Statistics: on SQLite, Migrate runs PRAGMA optimize after applying a migration and an open
// Store runs it hourly (WithOptimizeInterval, Optimize); MySQL's InnoDB keeps its own.
//
// # Concurrency
//
// A Store is safe for concurrent use. On SQLite, Open begins every transaction IMMEDIATE (the
// write lock is taken at BEGIN, so two writers never deadlock upgrading a read lock) and sets a
// busy timeout so writers queue; a file database uses WAL so readers do not block the writer.
// An in-memory SQLite database is private to its connection, so Open gives it a pool of one
// connection: operations queue for it, and nothing else may hold that connection (do not keep a
// transaction from DB open while calling the store).
//
// Appends to one thread are serialised, on purpose. An append to a stored thread reads the
// thread's first row (the one whose thread_start is the thread id) with a write lock before the
// database hands out the new row's seq, and holds it to the commit; a message that starts a
// thread creates that row, and a second message starting the same thread at once waits on its
// unique key and then joins. So within a thread seqs commit in the order they were handed out: a
// reader that sees a message of the thread sees every earlier one, so a run answering message n
// replays exactly what came before it, and so does its retry. On SQLite the lock is the
// database's write lock, taken by the INSERT itself. On MySQL the lock is a statement of its own
// in a transaction (BEGIN; SELECT ... FOR UPDATE on the first row's primary key; INSERT;
// COMMIT): a record lock without a gap, since a next-key lock through the nullable unique
// thread_start index covers the gap every append's row goes into and deadlocks the appends
// queued behind it. Every message with a lower seq has committed before a later one takes the
// lock. InnoDB takes a read view without stopping commits, so a single statement reading a
// whole thread while appends commit can still see a later message without the one before it;
// a reader that first reads the newest seq (View) and then the thread up to it (UpToSeq), as a
// reply run does, always sees every earlier message. The price is throughput per thread: each append to a thread waits for the previous
// one's commit, one log flush (fsync) each, while appends to different threads commit side by
// side and share flushes (group commit); BenchmarkAppendMessage measures both. A thread
// receiving mail gets a message every few seconds at most, far below the limit. On SQLite every
// write holds the database's write lock, so all appends serialise, one WAL flush each.
//
// # Scale-out
//
// Every statement is keyed by a thread id, a round's owner or a run key: messages and tool uses
// are read and deleted by thread_id, rounds are written and compared by (owner_type, owner_id,
// run_id, turn_index, position), runs by run_key. The store therefore runs unchanged on a
// MySQL-compatible sharded database (Vitess, TiDB) sharded by thread id, with these points
// needing care:
//
//   - Auto-increment keys (messages.seq, tool_uses.seq, runs.id) must stay increasing in
//     insertion order within a thread, because replay orders by them. A Vitess
//     sequence gives that; TiDB needs AUTO_ID_CACHE 1 on these tables (its default per-server id
//     batches interleave out of order). Seqs are only ever compared within one thread.
//   - (mailbox, message_id) is unique across all threads: on a sharded database that is a global
//     unique index (a Vitess lookup vindex) or must be relaxed to unique per thread. The same
//     holds for runs.run_key; the one-running-run unique keys are per persona and thread (or
//     responsibility), so shard reply runs by thread id and scheduled runs by persona.
//   - A round of a message owner copies thread_id from the message in the same INSERT (a
//     subquery), so the message and its tool uses must live on the same shard: shard tool_uses by
//     thread_id as well. Scheduled-run rounds have no thread; shard them by owner_id or keep
//     them unsharded.
//   - A transaction never spans two threads, so no cross-shard transaction is needed; DeleteThread
//     and AppendMessage touch one thread each. An append reads its thread's first row inside its
//     INSERT (a subquery on messages by thread_start, unique per thread), which stays on the
//     thread's shard.
//   - Migrations are plain DDL; apply them with the sharding system's schema tool (vtctl
//     ApplySchema, TiDB online DDL) rather than goose when the system requires it.
package store
