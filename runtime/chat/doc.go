// Package chat is the model contract: the messages a model reads and writes, the request a
// runner sends, the answer a model returns, and the interface every model adapter implements.
// It depends on nothing else of personagen, so an adapter (runtime/provider/anthropic,
// runtime/provider/openai, the scripted test model, or a third party's) imports this package and
// no persona machinery, the way a database driver imports database/sql/driver.
//
// Start from Model: one method, Generate, takes a *Request (ModelSettings, Messages and the
// ToolDefinitions the model may call) and returns a *Response (the assistant Message, a
// StopReason, Usage). A failed call that reached the provider is a *CallError, which says
// whether the failure is transient and how long to wait.
//
// # Messages
//
// A Message has a Role (system, user, assistant, tool), content as Text or as Parts (text,
// image, document), and the tool fields: ToolCalls on an assistant message, ToolCallID on a
// tool message. Equal defines when two messages are the same (Text "x" equals one text part
// "x"; nil and empty slices are equal; tool inputs compare as compacted JSON). Validate checks
// the pairing invariant every adapter relies on: every tool result follows the assistant
// message that called it, within one complete round; no round is partial; no tool message
// stands first.
//
// # Prompt caching
//
// A persona's request is a long stable prefix (tools, system prompts, the older history) and a
// short new tail; providers bill a cached prefix at a fraction of the input price. A Request
// carries a *CachePlan that says where its stable prefixes end, so an adapter can mark them
// without knowing anything of personas:
//
//   - Breakpoints: each CacheBreakpoint ends a prefix (the Tools, then Messages[:End]) that later
//     requests repeat, with its CacheScope (CachePersona: every request of the persona;
//     CacheThread: every later request of the thread; CacheRun: the next call of the run) and a
//     TTL (0: the provider's default). They are in ascending End order with TTLs that never
//     grow, at most MaxCacheBreakpoints with the tail.
//   - Tail: the whole request is the prefix of the run's next call (a tool loop), so its end is
//     marked too; CachePlan.Marks(len(Messages)) is the list an adapter places, tail included.
//   - Key: a stable name for the persona and thread (OpenAI's prompt_cache_key).
//
// The contract for an adapter: place the provider's cache markers at Marks(len(Messages)) —
// on the last content element (text block, tool call, tool result) that the prefix holds, the
// tools' end for End 0 — or as close below as its provider allows, never past; send Key where
// the provider takes one; never let a plan change the content sent or fail a request (a
// provider without prompt caching ignores the plan; CachePlan.Check says whether a plan is
// well formed, and an adapter may refuse a malformed one before sending). The providertest
// suite checks where an adapter put its markers when its Adapter.CacheMarks reads them back
// from the wire. Package runtime/provider documents what the Anthropic and OpenAI adapters send.
//
// # Where messages come from
//
// Package runtime assembles a Request from a persona's chain of resolvers
// (runtime.BuildRequest); runtime/history holds the stored view of a thread's messages
// (history.Message, an email with its tool rounds), which the thread_history resolver turns into
// chat Messages; runtime/mail parses raw email into mail.Message; runtime/store keeps
// store.Message rows. Only chat.Message is what a model reads.
package chat
