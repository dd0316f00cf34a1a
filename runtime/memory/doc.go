// Package memory holds Source, an in-memory [history.Source]: threads of messages, their
// recorded tool uses and their compactions, kept in process memory. Tests, examples and
// benchmarks use it where a database would only add noise; a host can use it for a persona that
// needs no durable history. It passes the conformance suite of runtime/historytest, as the SQL
// store in runtime/store does, so a replay from either gives the same messages for the same
// rows; its write methods are the suite's historytest.Writer. Start from New.
package memory
