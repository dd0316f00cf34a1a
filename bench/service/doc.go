// Package service benchmarks the service (runtime/service) against calling the runner
// (agent.Runner.Reply) directly, on SQLite and MariaDB.
//
// BenchmarkService answers b.N stored messages, each starting a thread, with a zero-latency
// scripted model (one final answer per run; the persona replays the thread's history): directly
// in a loop (direct: one goroutine; direct_8: eight goroutines sharing the messages), and through
// the service (service_1x1: one process, one worker; service_1x8: one process, eight workers;
// service_4x8: four processes of this test binary, eight workers each). The timed part starts
// with the messages stored and their work pending, and ends when no reply work is left. Each
// reports the database round trips per message (roundtrips/op, storetest.CountTrips; the four
// processes' added up) and the messages answered per second (msgs/s).
//
// BenchmarkServiceRatio interleaves the direct loop and the one-worker service on batches of
// 100 messages (10 unless PERSONAGEN_BENCH_SCALE=full), alternating which goes first, so that a
// shared machine's load falls on both alike, and reports the service's time over the loop's
// (service/direct), the same for CPU time (cpu-service/direct) and the round trips it adds per
// message (extra-roundtrips/op).
//
// BenchmarkServiceInFlight answers a batch of messages in one process whose worker limit is
// the batch size, with a model that takes 1 s per call, and reports how many runs were in
// flight (inside the model call) at once at the peak (in-flight), the memory of the process at
// that moment beyond what it held before the batch — live heap after a collection plus goroutine
// stacks — per run in flight (bytes/run), and the whole of it (peak-MiB). The batch is 1,000 runs
// with PERSONAGEN_BENCH_SCALE=full (bench/run sets it) and 20 otherwise, so that CI's one run
// (-benchtime 1x) takes a few seconds. Its sub-benchmark model_1s gives each model call 1 s;
// held keeps every call until the whole batch is in flight and measures then. On MariaDB the
// store's pool has its default bound, store.DefaultMaxOpenConns connections
// (PERSONAGEN_BENCH_UNCAPPED_POOL=1 lifts it, and a thousand runs finishing at once then exceed
// the server's 151 connections).
package service
