// Package service runs a host's personas as one long-lived process of which any number of
// replicas share one store: it answers pending mail, fires responsibilities, sends replies,
// and takes mail from its receivers, until its context ends.
//
// Start from New and Config: a host hands it its personas (the generated package's Personas
// function returns them), a store, its models (Models: a persona whose spec names a provider is
// served by that provider's adapter, every other one by Models.Default), its receivers and its
// sender; Run runs it, Handler serves its health, readiness and metrics endpoints.
//
// # Work is rows
//
// All work lives in the store, so a process keeps nothing that a crash could lose:
//
//   - reply work: a stored inbound message that is to be answered makes its thread pending in
//     the same statement (runtime/store: pending work). A worker claims the longest-waiting
//     thread with one statement and runs the runner's Reply on it;
//   - fires: the scheduler claims each due fire with one insert (runtime/schedule);
//   - send work: every reply enters the outbox with the transaction that stores it, and a worker
//     claims it with one statement and hands it to the Sender.
//
// # The rules
//
//   - One run per thread at a time: a thread is claimed whole, and a message that arrives while
//     its thread's run works is answered after it (the thread stays pending), never lost.
//   - Coalescing: when several messages of a thread are pending, one run answers the newest,
//     with the others in its view; they count as answered by it. A persona in
//     Config.EachMessage instead gets one run per message, oldest first.
//   - Retries: a run that stopped transiently (a model outage, a lost connection, a 429) keeps
//     its state, and its thread is claimed again after RetryPolicy's backoff (2 s doubling to 5
//     minutes, with jitter) or the provider's retry time, whichever is later; after
//     RetryPolicy.Attempts attempts the run is abandoned with the reason "retries exhausted".
//     A run that failed permanently ends its work at once, and the thread's later messages are
//     answered as usual. A claim that finds an earlier message's run of the thread cut off
//     resumes that run first; when it stops again, its attempts and retry time decide when the
//     thread is tried next, and the later messages stay pending behind it. Sends retry the same way; a permanent refusal (Permanent, a 5xx) is
//     recorded on the reply (store.ReplyState) and not retried.
//   - Fairness: claims take the longest-waiting work first, and Config.PersonaWorkers bounds one
//     persona's runs in a process, so a burst for one persona leaves room for the others;
//     Models.Limits bounds the calls per model (concurrent and per minute). Every limit is per
//     process: N replicas allow N times as much.
//   - Crashes: a claim lasts the run's lease plus 5 s. A replica that dies leaves its runs'
//     leases to expire (30 s by default, see runtime/agent) and its claims with them; another
//     replica then claims the thread and resumes the run where it stopped (recorded rounds are
//     replayed; a non-idempotent tool that was cut off is never run twice). A replica restarted
//     under its Config.Holder does not wait: it gives back its earlier process's claims as it
//     starts (store.ReleaseHolder) and resumes that process's runs at once. A claim to send a
//     reply lasts 3 minutes (the 2-minute bound of one Send, plus one), so a reply whose sender
//     died under a new name waits that long. A redelivered message stores nothing and so makes
//     no second run.
//
// # Lifecycle
//
// Run stops claiming when its context ends (a claim whose statement was under way then is given
// back at once), lets the runs and sends in flight finish within Config.ShutdownGrace (30 s),
// then cancels the rest: the runner releases their leases and the service gives their claims
// back, so another replica resumes them at once. NotifyContext turns
// SIGINT/SIGTERM into that context; a second signal calls Kill, which stops at once.
//
// Handler serves GET /healthz (200 while the process runs), GET /readyz (200 when the store
// answers and every migration is applied and the service is not stopping, else 503 with a JSON
// reason) and GET /metrics (Prometheus text format, when Config.MeterProvider is nil).
//
// # Metrics
//
// OpenTelemetry instruments, named here as OpenTelemetry names them (the Prometheus exporter
// writes personagen_runs_total, gen_ai_client_operation_duration_seconds, …):
//
//	personagen.work.pending            gauge      kind = reply | send
//	personagen.runs                    counter    persona, kind, outcome, failure_class
//	personagen.messages.delivered      counter    persona, outcome = pending | not_answered | duplicate
//	gen_ai.client.operation.duration   histogram  gen_ai.provider.name, gen_ai.request.model, error.type (s)
//	personagen.model.tokens            counter    gen_ai.provider.name, gen_ai.request.model, type = input | output | cache_read | cache_write
//	personagen.tool.calls              counter    persona, tool, outcome = ok | error
//	personagen.outbox.sends            counter    persona, outcome = sent | transient | permanent
//	personagen.claim.duration          histogram  kind = reply | send, outcome (s)
//
// Logs: every state change of a piece of work is one slog record with the persona, the thread,
// the message's seq, and the run key (which is also the correlation id); DSN passwords never
// appear in them.
package service
