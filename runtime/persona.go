package runtime

import (
	"context"
	"encoding/json"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/history"
)

// Tool is a tool the model may call: what the model reads about it and how it runs.
//
// Name is the tool's name (snake_case by convention, unique within a persona), Description what
// the model reads about it, and InputSchema the JSON Schema of its input object as raw JSON
// bytes. Idempotent reports whether running the tool twice for one call does no harm (a lookup,
// a search): a runner that resumes a run after a crash runs an idempotent call again when its
// outcome was not recorded, but never runs a call of a tool that is not idempotent twice — that
// call is then reported to the model as having an unknown outcome.
//
// Call runs the tool for one call of a run: inv is the run's read-only Invocation and input
// the call's arguments, a JSON object. It returns the result the model reads — text, or a value
// encoded as JSON — or an error, which the model reads as a failed result (the error's text).
// Call must honour ctx; it may be called concurrently for the calls of one round. A panic in
// Call is recovered by the runner and becomes a failed result as well.
//
// Package runtime/tool builds a Tool from a Go function with a typed input struct (arguments
// validated against the schema, then decoded strictly); a spec names a tool as a package-level
// value implementing Tool.
type Tool interface {
	Name() string
	Description() string
	InputSchema() json.RawMessage
	Idempotent() bool
	Call(ctx context.Context, inv *Invocation, input json.RawMessage) (string, error)
}

// Persona is a compiled persona: its identity, model settings, tools, its two chains and its
// responsibilities. Generated constructors return one; hosts may also build one by hand.
// MessageChain runs for reply runs (an Invocation with Inbound), ResponsibilityChain for
// scheduled runs (an Invocation with Responsibility). Cache holds its prompt-cache settings
// (BuildRequest plans the cache from its chain's steps). A Persona is read-only once built and
// safe for concurrent use when its resolvers are.
type Persona struct {
	Name                string
	Description         string
	Model               chat.ModelSettings
	Cache               CacheSettings
	Tools               []Tool
	MessageChain        *Chain
	ResponsibilityChain *Chain
	Responsibilities    []Responsibility
	// ToolRules holds the rules of the persona's tools by tool name (see ToolRule): which chains
	// offer a tool and whether its calls wait for approval. A tool without an entry is offered to
	// both chains and runs at once; an entry naming no tool of Tools is ignored.
	ToolRules map[string]ToolRule
	// Mailbox is the persona's email identity: Address, the address it receives mail at and
	// sends its replies from (an addr-spec such as "support@acme.example", no display name),
	// Aliases, other addresses that also reach it, and Name, the display name of its replies'
	// From ("" for none). runtime/mail routes a message to every persona whose Address or one of
	// whose Aliases is among the message's recipients (compared case-insensitively). An empty
	// Address means the persona receives no email.
	//
	// AcceptFrom names (by Name) the other personas whose mail this one answers: mail whose
	// From is another persona's address or alias is stored but not answered unless that
	// persona is listed (runtime/mail's ReasonPersona), so a persona never answers another's
	// mail by accident, or a forged From, and a host can still let one persona write to
	// another. DisableSubjectThreading turns off runtime/mail's subject rule for this mailbox
	// (a reply without reference headers joining the sender's latest thread of the same
	// subject; see mail.SubjectKey): every such reply then starts a thread.
	Mailbox struct {
		Address                 string
		Aliases                 []string
		Name                    string
		AcceptFrom              []string
		DisableSubjectThreading bool
	}
}

// Responsibility returns the persona's responsibility named name, and whether it exists.
func (p *Persona) Responsibility(name string) (Responsibility, bool) {
	for _, r := range p.Responsibilities {
		if r.Name == name {
			return r, true
		}
	}
	return Responsibility{}, false
}

// Options are the run-time dependencies a generated persona constructor takes besides the
// host's env: Files, where relative prompt and transcript paths resolve (nil reads from the
// working directory), and History, the source that thread_history and thread_summary read (a
// constructor whose spec uses either returns an error when it is nil).
type Options struct {
	Files   *Files
	History history.Source
}

// ToolDefinitions returns what the model reads about tools, in order: each tool's name,
// description and input schema as a chat.ToolDefinition. It returns nil for no tools.
func ToolDefinitions(tools []Tool) []chat.ToolDefinition {
	if len(tools) == 0 {
		return nil
	}
	defs := make([]chat.ToolDefinition, len(tools))
	for i, t := range tools {
		defs[i] = chat.ToolDefinition{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()}
	}
	return defs
}
