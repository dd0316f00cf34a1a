package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
)

// Request is what goes to the model: the settings, the messages in order, and the tools the
// model may call. Messages and Tools are owned by the
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

// BuildRequest assembles the request for one run of inv.Persona: the output of the persona's
// MessageChain for a reply run or ResponsibilityChain for a scheduled run, then — for a reply
// run only — a trailing user message with the inbound content, with the persona's tools and
// model settings.
//
// The trailing user message holds inv.Inbound's plain-text body, or, when that is blank, the
// text of its HTML body (HTMLText). With attachments it is a parts message: the body as a text
// part (omitted when blank), then per attachment an image part (content type "image/…") or a
// document part, in order; an attachment whose Data is nil becomes a text part noting its
// filename, content type, size in bytes and id. It is never empty, since model APIs reject an
// empty turn: with neither a body nor attachments its text is "Subject: <subject>", or
// "[The message has no text.]" when the subject is blank too.
//
// It returns an error wrapping ErrInvocation for a malformed Invocation, and the chain's
// *StepError when a resolver fails.
func BuildRequest(ctx context.Context, inv *Invocation) (*Request, error) {
	return buildRequestInto(ctx, inv, nil)
}

// buildRequestInto is BuildRequest appending the messages to dst[:0], so a caller that builds
// many requests can reuse one buffer. The returned Request's Messages share dst's array.
func buildRequestInto(ctx context.Context, inv *Invocation, dst []Message) (*Request, error) {
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
		msgs = append(msgs, inboundMessage(inv.Inbound))
	}
	return &Request{Model: p.Model, Messages: msgs, Tools: p.Tools}, nil
}
