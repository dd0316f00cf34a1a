package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/personagen/personagen/runtime/chat"
)

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
// Cache is the request's prompt-cache plan (nil when the persona's Cache.Off is set), made from
// the chain's steps by how often each one's output changes (Step.Changes): a breakpoint after
// the longest leading run of PerPersona steps (after the tools alone when the chain does not
// start with one and the persona has tools), one after the longest leading run of steps that
// are PerThread or stabler, and, inside it, one where the thread history's replay of the
// thread's previous turn begins (the end of the previous request's thread prefix: the last
// inbound message before the history's last outbound one), each with the persona's Cache.TTL;
// Tail when the persona has tools; and a Key derived from the persona's name and the thread id
// or responsibility name (hashed, see chat.CachePlan). A scheduled run's chain is planned the
// same way.
//
// It returns an error wrapping ErrInvocation for a malformed Invocation, and the chain's
// *StepError when a resolver fails.
func BuildRequest(ctx context.Context, inv *Invocation) (*chat.Request, error) {
	return buildRequestInto(ctx, inv, nil)
}

// buildRequestInto is BuildRequest appending the messages to dst[:0], so a caller that builds
// many requests can reuse one buffer. The returned Request's Messages share dst's array.
func buildRequestInto(ctx context.Context, inv *Invocation, dst []chat.Message) (*chat.Request, error) {
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
	var ends []int
	var endsp *[]int
	if !p.Cache.Off {
		endsp = &ends
	}
	msgs, err := chain.resolve(ctx, inv, slices.Grow(dst[:0], chain.sizeHint()+1), endsp)
	if err != nil {
		return nil, err
	}
	if inv.Inbound != nil {
		msgs = append(msgs, inboundMessage(inv.Inbound))
	}
	req := &chat.Request{Model: p.Model, Messages: msgs, Tools: ToolDefinitions(p.Tools)}
	if endsp != nil {
		req.Cache = planCache(p, inv, chain.Steps(), ends, len(req.Tools), inv.snap.turn())
	}
	return req, nil
}
