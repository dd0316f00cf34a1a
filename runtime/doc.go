// Package runtime is what generated persona code and host programs run on: the messages a model
// sees, the resolvers that produce them, the chain that runs the resolvers, and the request that
// goes to the model. It re-creates protege's resolver engine (seed 000) in Go.
//
// # How the pieces fit
//
// One run of a persona flows one way:
//
//	Invocation  →  Chain  →  []Message  →  Request
//
// Each stage:
//
//   - An Invocation is the read-only input of the run: the Persona, host Config, a Logger, a
//     correlation id, and exactly one of Inbound (a reply run: the email being answered) or
//     Responsibility (a scheduled run).
//   - A Chain holds the persona's resolvers in declaration order. Each Resolver appends zero,
//     one or many Messages to the slice it is given (Resolve(ctx, inv, dst) returns dst
//     extended, as append does), so a whole request grows in one slice. A failing step stops
//     the chain with a *StepError naming the step's index, kind and spec position.
//   - BuildRequest runs the persona's MessageChain (reply run) or ResponsibilityChain
//     (scheduled run), appends for a reply run a trailing user message with the inbound
//     content (InboundMessage), and returns a Request with the persona's Model settings and
//     Tools.
//
// # Messages
//
// A Message has a Role (system, user, assistant, tool), content as Text or as Parts (text,
// image, document), and the tool fields: ToolCalls on an assistant message, ToolCallID on a tool
// message. Equal defines when two messages are the same (Text "x" equals one text part "x"; nil
// and empty slices are equal; tool inputs compare as compacted JSON). Validate checks the
// pairing invariant: every tool result follows the assistant message that called it, within
// one complete round.
//
// # Built-in resolvers
//
// LoadFile (a prompt file from a Files root: a directory read through os.Root, or an fs.FS such
// as an embed.FS), LoadText (a static or computed text) and LoadRecord (host records rendered to
// text) are the load_file, load_text and load_record entries of a spec. ThreadHistory and
// ThreadSummary replay a thread from a history.Source (the SQL store in runtime/store
// implements it); the transcript package's Load reads few-shot chat files. Host code adds its
// own resolvers by implementing Resolver, or with ResolverFunc.
//
// Computed paths and texts are Go funcs of the Invocation (what the generator compiles a
// spec's templates to), so the runtime has no template engine.
//
// # Determinism and concurrency
//
// Resolvers read no clock and no map order: the same inputs produce byte-identical messages.
// A Persona and its Chains are safe for concurrent use when their resolvers are; an Invocation
// serves one run at a time.
package runtime
