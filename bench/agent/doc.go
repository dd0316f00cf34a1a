// Package agent benchmarks a whole reply run — 3 tool rounds of 3 parallel calls (two idempotent
// tools, one that is not), then the final answer, the reply stored in the thread — on SQLite and
// MariaDB: personagen's runner (runtime/agent), the same run resumed after its model failed in
// the third round, eino's ReAct agent and langchaingo's agent executor.
//
// Every side reads the thread from the same store, runs the same tools over the same fake
// answers and stores the same reply. The peers record the run in one of two ways: the same
// rounds with the same store calls as personagen (RecordRound per round), which isolates what
// personagen's durability costs — the run row and its lease, each model answer recorded before
// its tools run, the outcome of each call of a tool that is not idempotent, the finish — or each
// message one INSERT as the peer produces it, the way langchaingo's ChatMessageHistory and a
// hand-written eino message log persist a conversation. Neither peer can resume a run from what
// it persisted, nor tell which calls of a tool that is not idempotent started: after a crash
// they start over. Each benchmark reports its database round trips per run (roundtrips/op) and
// the process's CPU time per run (cpu-ns/op); TestRoundTripBudget pins personagen's round trips
// phase by phase.
package agent
