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
// # Where messages come from
//
// Package runtime assembles a Request from a persona's chain of resolvers
// (runtime.BuildRequest); runtime/history holds the stored view of a thread's messages
// (history.Message, an email with its tool rounds), which the thread_history resolver turns into
// chat Messages; runtime/mail parses raw email into mail.Message; runtime/store keeps
// store.Message rows. Only chat.Message is what a model reads.
package chat
