package chat

import (
	"context"
	"errors"
)

// Model is a language model that answers a Request: the contract every provider adapter
// (runtime/provider/anthropic, runtime/provider/openai) and the scripted test model
// (runtime/provider/scripted) implement, and the one call a runner makes per model turn.
//
// Generate sends req and returns the model's answer. It does not modify req or anything req
// points to, and it may be called concurrently. An adapter refuses settings its provider cannot
// take (see package runtime/provider) before sending anything, and converts req.Messages to its
// wire format by the rules of its package. Errors: a refusal before sending (a refused setting, a
// message list that breaks Validate) is a plain error; every failure of a call that was sent is
// a *CallError saying whether it is transient and how long the provider asked to wait. Through
// it, a request the provider refused because it does not fit the model's context window
// matches ErrContextWindow (errors.Is), a cancelled or expired ctx matches ctx.Err(), and a
// success answer that is not a message of the API matches provider.ErrMalformedResponse. A
// Response is returned only with a nil error. Package runtime/provider/providertest checks an
// adapter against this contract.
type Model interface {
	Generate(ctx context.Context, req *Request) (*Response, error)
}

// ModelFunc adapts an ordinary function to the Model interface, as http.HandlerFunc does for
// handlers.
type ModelFunc func(ctx context.Context, req *Request) (*Response, error)

// Generate calls f(ctx, req).
func (f ModelFunc) Generate(ctx context.Context, req *Request) (*Response, error) { return f(ctx, req) }

// Response is a model's answer to one Request.
//
// Message is the assistant message (Role RoleAssistant): its Text, its ToolCalls (a call whose
// arguments were not a JSON object is kept, see ToolCall.InvalidArguments) and the provider State
// that must go back with it. StopReason says why generation stopped; Refusal holds the
// provider's refusal text when StopReason is StopRefusal and the provider gave one. Model is the
// model that answered, as the provider names it. RequestID is the provider's id for the HTTP
// request (its request-id header) and ResponseID the id of the response object (msg_…,
// chatcmpl-…, resp_…), both kept for logs and support tickets; either is "" when the provider
// sent none.
type Response struct {
	Message    Message    `json:"message"`
	StopReason StopReason `json:"stop_reason"`
	Usage      Usage      `json:"usage"`
	Refusal    string     `json:"refusal,omitempty"`
	Model      string     `json:"model,omitempty"`
	RequestID  string     `json:"request_id,omitempty"`
	ResponseID string     `json:"response_id,omitempty"`
}

// StopReason says why a model stopped generating. Adapters map their provider's values to the
// constants below; a value a provider adds later passes through unchanged.
type StopReason string

// The stop reasons a Response can carry.
const (
	// StopEndTurn: the model finished its answer.
	StopEndTurn StopReason = "end_turn"
	// StopToolUse: the model asks for the tool calls in Message.ToolCalls.
	StopToolUse StopReason = "tool_use"
	// StopMaxTokens: the answer reached the MaxTokens budget and is cut off.
	StopMaxTokens StopReason = "max_tokens"
	// StopSequence: the model produced one of the Stop sequences. The Chat Completions API
	// does not tell a stop sequence from a natural end; its adapter reports StopEndTurn.
	StopSequence StopReason = "stop_sequence"
	// StopRefusal: the provider refused to answer (a safety refusal or a content filter);
	// Response.Refusal holds its text when there is one.
	StopRefusal StopReason = "refusal"
	// StopPause: the provider paused a long turn (Anthropic pause_turn); sending the
	// conversation again, with this message appended, lets it continue.
	StopPause StopReason = "pause_turn"
	// StopContextWindow: generation stopped because the context window filled up. A request
	// that does not fit at all is refused with ErrContextWindow instead.
	StopContextWindow StopReason = "context_window_exceeded"
)

// Usage counts the tokens of one model call. InputTokens is every input token the call
// processed, cached or not; CacheReadTokens and CacheWriteTokens are the parts of InputTokens
// read from and written to the provider's prompt cache. OutputTokens is every generated token,
// reasoning included.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// Add returns the field-by-field sum of u and o, for the totals of a run.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// ErrContextWindow is returned (wrapped, together with the provider's own error) by a Model
// when the provider refused the request because its input does not fit the model's context
// window: Anthropic's "prompt is too long", OpenAI's context_length_exceeded. A runner that
// sees it can compact the thread and try once more.
var ErrContextWindow = errors.New("request exceeds the model's context window")
