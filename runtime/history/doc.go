// Package history is the contract between the thread-history resolvers of package runtime
// (ThreadHistory and ThreadSummary) and the store they read a thread's past from, in the way
// database/sql/driver is the contract under database/sql: a host that keeps its threads in its
// own tables implements [Source] and nothing else of personagen. Start from [Source] and
// [Query].
//
// A [Source] answers two questions: the thread's latest completed [Compaction], and a [Window]
// of the thread's messages selected by a [Query], each [Message] with its attachment metadata
// and, when asked, the [ToolUse] rows recorded for the run that answered it. The SQL store
// (runtime/store) and the in-memory source (runtime/memory) implement it; the conformance suite
// in runtime/historytest checks any implementation with one call.
//
// # The rules a Source follows
//
//   - Order: messages are ordered by Seq, the order in which the source received the thread's
//     messages (an insertion key, unique and increasing). Date, the sender's Date header,
//     never orders anything: a sender's clock can run hours off, and a reply must still follow
//     the question it answers.
//   - Window: the most recent messages the Query selects, at most Query.Limit of them (one
//     convention everywhere: 0 means [DefaultLimit], [NoLimit] means all), oldest first, and,
//     when the Query sets CountOmitted, how many selected messages lie before the window
//     (Window.Omitted; a source may leave it 0 otherwise, as counting reads past the window).
//   - Tool uses: a message's tool uses may come in any order; their Seqs must increase in the
//     order they were recorded. The replay orders them (rounds by recording order, calls by
//     Position), so a source never sorts them.
//   - Determinism: the same stored rows give the same values on every call (a message's tool
//     uses possibly in another order), and a returned Window belongs to its caller.
//   - Attachments: metadata only; Attachment.Data is nil in everything a Source returns.
//
// A [Summarizer] is the other direction: a store's compaction hands it the data of the
// messages it summarises ([SummaryInput]); package runtime's SummarizerFunc renders them as the
// replay does before calling the host's model.
package history
