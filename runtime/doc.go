// Package runtime is what generated persona code and host programs run on: a persona, the
// resolvers that produce the messages its model sees, the chain that runs the resolvers, and
// BuildRequest, which assembles the request that goes to the model. The model contract itself
// (chat.Message, chat.Request, chat.Model) is package runtime/chat.
//
// Start from Persona, what a generated constructor returns, and BuildRequest. A host runs
// personas with agent.Runner (package runtime/agent), which builds each request itself. What
// the model reads of a replayed thread is docs/history.md in the repository.
//
// # How the pieces fit
//
// One run of a persona flows one way:
//
//	Invocation  →  Chain  →  []chat.Message  →  chat.Request
//
// Each stage:
//
//   - An Invocation is the read-only input of the run: the Persona, host Config, a Logger, a
//     correlation id, and exactly one of Inbound (a reply run: the message being answered, a
//     history.Message) or Responsibility (a scheduled run).
//   - A Chain holds the persona's resolvers in declaration order. Each Resolver appends zero,
//     one or many Messages to the slice it is given (Resolve(ctx, inv, dst) returns dst
//     extended, as append does), so a whole request grows in one slice. A failing step stops
//     the chain with a *StepError naming the step's index, kind and spec position.
//   - BuildRequest runs the persona's MessageChain (reply run) or ResponsibilityChain
//     (scheduled run), appends for a reply run a trailing user message with the inbound
//     content, and returns a Request with the persona's Model settings and Tools.
//
// # Tools
//
// A Tool is what the model may call: its name, description and input schema (which reach the
// model as a chat.ToolDefinition, see ToolDefinitions), whether it is idempotent, and Call,
// which runs it for one call of a run. Package runtime/tool builds tools
// from typed Go functions; package runtime/agent runs them for the model, in parallel, at most
// once when they are not idempotent. A persona's ToolRules govern its tools beyond that (a spec
// entry's chains and approval keys): a ToolRule limits a tool to the reply or the scheduled
// chain, and its ApprovalRule makes every call wait for a person's decision (see runtime/agent
// and docs/approval.md); InputDecoder lets a tool show the input a call would run with.
//
// # Built-in resolvers
//
// LoadFile (a prompt file from a Files root: a directory read through os.Root, or an fs.FS such
// as an embed.FS), LoadText (a static or computed text) and LoadRecord (host records rendered to
// text) are the load_file, load_text and load_record entries of a spec. ThreadSummary and
// ThreadHistory replay a thread from a history.Source (package runtime/history holds that
// contract; the SQL store in runtime/store and runtime/memory implement it); the transcript
// package's Load reads few-shot chat files. Host code adds its own resolvers by implementing
// Resolver, or with ResolverFunc.
//
// Computed paths and texts are Go funcs of the Invocation (what the generator compiles a
// spec's templates to), so the runtime has no template engine.
//
// # Where each job lives
//
//	request.go        BuildRequest; persona.go: Persona, Tool, ToolDefinitions
//	toolrule.go       ToolRule, ApprovalRule, ChainKind, InputDecoder, DecodeInput
//	inbound.go        the trailing user message of a reply run
//	resolver.go       Resolver, ResolverFunc, Chain, Step, StepError
//	load.go           LoadFile, LoadText, LoadRecord; files.go: Files, the prompt root
//	thread_history.go ThreadHistory: the history window and its query
//	thread_summary.go ThreadSummary; snapshot.go: the compaction row shared by both in one run
//	replay.go         AppendReplay: stored messages and tool rounds to turns
//	turn_text.go      a stored message's turn text (header block, body, attachment notes)
//	round_order.go    the order of tool rounds; call_ids.go: renaming broken call ids
//	replay_input.go   stored arguments to a call input ({"_clipped_arguments": …})
//	compaction.go     CompactionPolicy; summarizer.go: SummarizerFunc
//	clip.go, html.go  Clip and HTMLText; date.go: FormatDate
//
// # Determinism and concurrency
//
// Resolvers read no clock and no map order: the same inputs produce byte-identical messages.
// A Persona and its Chains are safe for concurrent use when their resolvers are; an Invocation
// serves one run at a time.
package runtime
