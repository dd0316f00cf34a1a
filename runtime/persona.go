package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/personagen/personagen/runtime/history"
)

// Version is the runtime API version that generated code is compiled against. Generated files
// reference RuntimeVersion1 (a constant that exists only while the runtime speaks version 1), so
// generated code and an incompatible runtime fail to compile together instead of misbehaving.
const Version = 1

// RuntimeVersion1 exists while this runtime is compatible with code generated for runtime API
// version 1; generated files assert it at compile time.
const RuntimeVersion1 = true

// Tool is a tool the model may call: its Name (snake_case by convention, unique within a
// persona), a Description the model reads, and InputSchema, the JSON Schema of its input object
// as raw JSON bytes. A spec names tools as package-level values implementing Tool.
type Tool interface {
	Name() string
	Description() string
	InputSchema() json.RawMessage
}

// ModelSettings holds the model settings a persona passes through to the Request: the model
// Name, Provider (the API the settings are written for: "anthropic", "openai" or
// "openai-responses", see package runtime/provider; "" when the persona does not say), MaxTokens
// (the reply's token budget; 0 means the adapter's default), Temperature and TopP (nil when
// unset), Stop sequences, and Extra, free-form provider options (nil when unset) that an adapter
// sends as top-level fields of the request body. encoding/json writes Extra's keys sorted, so a
// Request encodes deterministically. Which settings each provider accepts is the table of
// package runtime/provider; an adapter refuses the others before its first call.
type ModelSettings struct {
	Name        string         `json:"name,omitempty"`
	Provider    string         `json:"provider,omitempty"`
	MaxTokens   int            `json:"max_tokens,omitempty"`
	Temperature *float64       `json:"temperature,omitempty"`
	TopP        *float64       `json:"top_p,omitempty"`
	Stop        []string       `json:"stop,omitempty"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// Persona is a compiled persona: its identity, model settings, tools, its two chains and its
// responsibilities. Generated constructors return one; hosts may also build one by hand.
// MessageChain runs for reply runs (an Invocation with Inbound), ResponsibilityChain for
// scheduled runs (an Invocation with Responsibility). A Persona is read-only once built and safe
// for concurrent use when its resolvers are.
type Persona struct {
	Name                string
	Description         string
	Model               ModelSettings
	Tools               []Tool
	MessageChain        *Chain
	ResponsibilityChain *Chain
	Responsibilities    []Responsibility
	// Mailbox is the persona's email identity; the zero Mailbox means it receives no email.
	Mailbox Mailbox
}

// Mailbox is a persona's email identity: Address, the address it receives mail at and sends its
// replies from (an addr-spec such as "support@acme.example", no display name), Aliases, other
// addresses that also reach it, and Name, the display name of its replies' From ("" for none).
// runtime/mail routes a message to every persona whose Address or one of whose Aliases is among
// the message's recipients (compared case-insensitively).
type Mailbox struct {
	Address string
	Aliases []string
	Name    string
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

// Request is what goes to the model: the settings, the messages in order, and the tools the
// model may call (protege's Provider::Request, seed 000). Messages and Tools are owned by the
// caller once BuildRequest returns; a provider adapter translates them to its wire format.
type Request struct {
	Model    ModelSettings `json:"model"`
	Messages []Message     `json:"messages"`
	Tools    []Tool        `json:"-"`
}

// MarshalJSON writes the request for review and logging:
//
//	{"model":{…},"messages":[…],"tools":[{"name":…,"description":…,"input_schema":{…}}]}
//
// with messages in Message's canonical form and tools in order ("tools" omitted when there are
// none). An input schema that is empty is written as {}; one that is not valid JSON is an error.
// The encoding is one-way: a Request does not decode back, since Tool is an interface.
func (r Request) MarshalJSON() ([]byte, error) {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	out := struct {
		Model    ModelSettings `json:"model"`
		Messages []Message     `json:"messages"`
		Tools    []tool        `json:"tools,omitempty"`
	}{Model: r.Model, Messages: r.Messages}
	if out.Messages == nil {
		out.Messages = []Message{}
	}
	for _, t := range r.Tools {
		schema := t.InputSchema()
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage("{}")
		}
		out.Tools = append(out.Tools, tool{Name: t.Name(), Description: t.Description(), InputSchema: schema})
	}
	return json.Marshal(out)
}

// ErrInvocation is returned (wrapped) by BuildRequest when an Invocation sets both or neither of
// Inbound and Responsibility, or lacks its Persona.
var ErrInvocation = errors.New("invalid invocation")

// BuildRequest assembles the request for one run of inv.Persona (protege's
// Inference.build_request, seed 000): the output of the persona's MessageChain for a reply run
// or ResponsibilityChain for a scheduled run, then — for a reply run only — a trailing user
// message with the inbound content (see InboundMessage), with the persona's tools and model
// settings. It returns an error wrapping ErrInvocation for a malformed Invocation, and the
// chain's *StepError when a resolver fails.
func BuildRequest(ctx context.Context, inv *Invocation) (*Request, error) {
	return BuildRequestInto(ctx, inv, nil)
}

// BuildRequestInto is BuildRequest appending the messages to dst[:0], so a caller that builds
// many requests can reuse one buffer. The returned Request's Messages share dst's array.
func BuildRequestInto(ctx context.Context, inv *Invocation, dst []Message) (*Request, error) {
	if inv == nil || inv.Persona == nil {
		return nil, fmt.Errorf("%w: no persona", ErrInvocation)
	}
	if (inv.Inbound == nil) == (inv.Responsibility == nil) {
		return nil, fmt.Errorf("%w: set exactly one of Inbound (a reply run) and Responsibility (a scheduled run)", ErrInvocation)
	}
	p := inv.Persona
	chain := p.MessageChain
	if inv.Responsibility != nil {
		chain = p.ResponsibilityChain
	}
	// One allocation for the whole request: the chain's last size plus the trailing message.
	msgs, err := chain.Resolve(ctx, inv, slices.Grow(dst[:0], chain.sizeHint()+1))
	if err != nil {
		return nil, err
	}
	if inv.Inbound != nil {
		msgs = append(msgs, InboundMessage(inv.Inbound))
	}
	return &Request{Model: p.Model, Messages: msgs, Tools: p.Tools}, nil
}

// InboundMessage returns the trailing user message of a reply run. Without attachments it is
// a text message holding the inbound plain-text body (or, when that is empty, the text
// extracted from its HTML body by HTMLText). With attachments it is a parts message: one text
// part with that body (omitted when empty), then per attachment an image part (content type
// "image/...") or a document part, in order; an attachment whose Data is nil becomes a text
// part noting its filename, content type, size in bytes and id, since its bytes are unknown.
//
// A body that is blank (empty or white space only) counts as absent. A message with neither a
// body nor attachments would make an empty user turn, which model APIs reject, so its text is
// then "Subject: <subject>" — an email whose whole message is its subject line is common — or
// EmptyInboundText when the subject is blank too.
func InboundMessage(in *history.Message) Message {
	body := in.Text
	if strings.TrimSpace(body) == "" {
		body = ""
		if in.HTML != "" {
			body = HTMLText(in.HTML)
		}
	}
	if len(in.Attachments) == 0 {
		if body == "" {
			body = EmptyInboundText
			if subject := strings.TrimSpace(in.Subject); subject != "" {
				body = "Subject: " + subject
			}
		}
		return UserMessage(body)
	}
	parts := make([]Part, 0, len(in.Attachments)+1)
	if body != "" {
		parts = append(parts, TextPart(body))
	}
	for _, a := range in.Attachments {
		switch {
		case a.Data == nil:
			parts = append(parts, TextPart(AttachmentNote(a)))
		case strings.HasPrefix(a.ContentType, "image/"):
			parts = append(parts, ImagePart(a.ContentType, a.Data))
		default:
			parts = append(parts, DocumentPart(a.Filename, a.ContentType, a.Data))
		}
	}
	return PartsMessage(RoleUser, parts...)
}

// EmptyInboundText is the text of the trailing user message for an inbound message that has no
// body, no attachments and no subject.
const EmptyInboundText = "[The message has no text.]"

// AttachmentNote renders one attachment's metadata as one line:
// `[attachment: report.pdf (application/pdf, 1234 bytes, id att-1)]`.
func AttachmentNote(a history.Attachment) string {
	return fmt.Sprintf("[attachment: %s (%s, %d bytes, id %s)]", a.Filename, a.ContentType, a.Size, a.ID)
}

// Options are the run-time dependencies a generated persona constructor takes besides the
// host's env: Files, where relative prompt and transcript paths resolve (nil reads from the
// working directory), and History, the source that thread_history and thread_summary read (a
// constructor whose spec uses either returns an error when it is nil).
type Options struct {
	Files   *Files
	History history.Source
}
