// Package historytest checks that a [history.Source] follows the contract of package
// runtime/history, as testing/fstest checks an fs.FS and testing/slogtest an slog.Handler.
// The SQL store (runtime/store, on SQLite and MySQL/MariaDB) and the in-memory source
// (runtime/memory) run it; a host that keeps threads in its own tables runs it on its own
// implementation with one call. Start from [Run]:
//
//	func TestMySource(t *testing.T) {
//		src := mysource.Open(t)              // a history.Source that holds none of the suite's ids
//		historytest.Run(t, src, writer{src}) // writer: the src's own write API as a Writer
//	}
//
// The suite writes its fixtures through a [Writer] — the few writes a history needs: append a
// message, record tool uses for it, store a completed compaction — and then reads them back
// through the Source. What it checks, each in a subtest named for the rule:
//
//   - fields: every field of a message and of a tool use comes back as written (Date in UTC);
//   - order: messages in the order they were appended, whatever their Date (a sender's clock
//     three hours fast does not put a reply before the question it answers), and ties cannot
//     exist;
//   - windows: Limit (0 = history.DefaultLimit, history.NoLimit = all), ExcludeMessageID,
//     AfterSeq, UpToSeq and the Omitted count (exact with CountOmitted, exact or 0 without),
//     alone and combined, and threads never mixed;
//   - tool uses: only when the Query asks, attached to their message, their Seqs increasing in
//     recording order (their order in the Window is free: the replay orders them);
//   - compactions: none, the latest of several, and windows after and up to a boundary;
//   - bad queries: each rule of history.Query.Check refused with history.ErrInvalidQuery;
//   - determinism and ownership: two reads give the same Window, and changing a returned
//     Window does not change the next one.
//
// Every thread id the suite writes starts with "historytest-" and every message id with
// "historytest/", so the source may hold other data; but each run writes the same ids, so give
// every Run a source that does not hold them yet (a fresh database, a new in-memory source).
package historytest
