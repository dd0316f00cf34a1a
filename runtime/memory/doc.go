// Package memory holds Source, an in-memory runtime.HistorySource: threads of messages, their
// recorded tool uses and their compactions, kept in process memory. Tests, examples and
// benchmarks use it where a database would only add noise; a host can use it for a persona that
// needs no durable history. It follows the ordering contract of the SQL store in runtime/store
// exactly (messages in the order they were stored, tool rounds by recording order), so a
// replay from either gives the same messages for the same rows.
package memory
