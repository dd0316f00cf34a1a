package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
)

// Chat is the Chat Completions adapter (provider "openai"). It is safe for concurrent use.
type Chat struct {
	// MaxRetryWait is the longest wait an answer may ask for (retry-after-ms, Retry-After) that
	// Generate sleeps before the SDK retries; 0 means provider.DefaultMaxRetryWait (60 s), a
	// negative value lets no wait be slept. A longer wait, or one that would outlast ctx's
	// deadline, ends the call at once with a transient *chat.CallError carrying the wait. The
	// adapter passes it to the SDK as option.WithMaxRetryDelay on every call, so that option given
	// to NewChat has no effect. Set it before the first call.
	MaxRetryWait time.Duration

	client sdk.Client
}

// NewChat returns a Chat over a client built by sdk.NewClient(opts...): the SDK's environment
// defaults apply first and any SDK option may be passed.
func NewChat(opts ...option.RequestOption) *Chat {
	return &Chat{client: sdk.NewClient(opts...)}
}

// Generate checks req.Model, converts req (ChatParams), sends it with Chat.Completions.New and
// maps the answer back (ChatResponse).
//
// A refusal before sending is a plain error: the settings' *provider.SettingError, the
// conversion's error (a message list that breaks chat.Validate wraps the *chat.PairingError).
// Every failure of the call itself is a *chat.CallError with Provider "openai", classified as
// the package documentation says: an error status (wrapping the SDK's *sdk.Error with the
// API's code and message, and chat.ErrContextWindow too for code context_length_exceeded), no
// answer (a network error, a timeout; a done ctx keeps matching ctx.Err() with errors.Is), and
// a 2xx answer that is not a chat completion (wrapping provider.ErrMalformedResponse; the error
// shows the start of the body).
func (c *Chat) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := provider.CheckFor(provider.OpenAI, req.Model); err != nil {
		return nil, err
	}
	params, err := ChatParams(req)
	if err != nil {
		return nil, err
	}
	var httpResp *http.Response
	rec, opts := start(ctx, provider.OpenAI, chatWhat, c.MaxRetryWait, &httpResp)
	completion, err := c.client.Chat.Completions.New(ctx, params, opts...)
	if err != nil {
		return nil, rec.Fail(cause(err))
	}
	if completion == nil {
		return nil, rec.Malformed("it decodes to no completion")
	}
	resp, err := chatResponse(completion)
	if err != nil {
		return nil, rec.Answered(err, false)
	}
	if httpResp != nil {
		resp.RequestID = httpResp.Header.Get("x-request-id")
	}
	return resp, nil
}

// ChatParams converts req to Chat Completions parameters by the rules of the package
// documentation, without checking req.Model against the provider's settings table (Generate
// does). It returns an error for an empty model name, a message list that breaks
// chat.Validate (wrapping the *chat.PairingError), and a tool whose input schema is not a
// JSON object of "type": "object".
func ChatParams(req *chat.Request) (sdk.ChatCompletionNewParams, error) {
	var p sdk.ChatCompletionNewParams
	if req.Model.Name == "" {
		return p, errors.New("openai chat: no model name: set model.name in the persona's spec")
	}
	p.Model = req.Model.Name
	if req.Model.MaxTokens > 0 {
		p.MaxCompletionTokens = param.NewOpt(int64(req.Model.MaxTokens))
	}
	if req.Model.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Model.Temperature)
	}
	if req.Model.TopP != nil {
		p.TopP = param.NewOpt(*req.Model.TopP)
	}
	if len(req.Model.Stop) > 0 {
		p.Stop = sdk.ChatCompletionNewParamsStopUnion{OfStringArray: req.Model.Stop}
	}
	if len(req.Model.Extra) > 0 {
		p.SetExtraFields(req.Model.Extra)
	}
	if err := req.Cache.Check(len(req.Messages)); err != nil {
		return p, fmt.Errorf("openai chat: %w", err)
	}
	explicit := provider.ExplicitCacheBreakpoints(req.Model.Name)
	if key, extended := cacheFields(req.Cache); key != "" || extended {
		if key != "" {
			p.PromptCacheKey = param.NewOpt(key)
		}
		if extended && !explicit {
			p.PromptCacheRetention = sdk.ChatCompletionNewParamsPromptCacheRetention24h
		}
	}
	for _, t := range req.Tools {
		def, err := toolJSON(t, false)
		if err != nil {
			return p, fmt.Errorf("openai chat: %w", err)
		}
		p.Tools = append(p.Tools, sdk.ChatCompletionToolUnionParam{OfFunction: &sdk.ChatCompletionFunctionToolParam{
			Function: param.Override[shared.FunctionDefinitionParam](def),
		}})
	}
	marks, ends := explicitMarks(req, explicit)
	ts, at, err := turns.NormalizeMarked(make([]turns.Turn, 0, len(req.Messages)), req.Messages, ends)
	if err != nil {
		return p, fmt.Errorf("openai chat: messages: %w", err)
	}
	c := countTurns(ts)
	first := make([]int, len(ts)) // the index in p.Messages of each turn's first message
	systems := make([]sdk.ChatCompletionSystemMessageParam, 0, c.system)
	users := make([]sdk.ChatCompletionUserMessageParam, 0, c.user)
	assistants := make([]sdk.ChatCompletionAssistantMessageParam, 0, c.assistant)
	tools := make([]sdk.ChatCompletionToolMessageParam, 0, c.results)
	calls := make([]sdk.ChatCompletionMessageFunctionToolCallParam, 0, c.calls)
	callUnions := make([]sdk.ChatCompletionMessageToolCallUnionParam, c.calls)
	p.Messages = make([]sdk.ChatCompletionMessageParamUnion, 0, len(ts)+c.results)
	ids := turns.CallIDs(ts, turns.MaxChatCallID)
	for ti, t := range ts {
		first[ti] = len(p.Messages)
		switch t.Kind {
		case turns.System:
			m := take(&systems)
			m.Content.OfString = param.NewOpt(textOnly(t.Parts))
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfSystem: m})
		case turns.User:
			m := take(&users)
			m.Content = chatUserContent(t.Parts)
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfUser: m})
		case turns.Assistant:
			a := take(&assistants)
			if len(t.Parts) > 0 {
				a.Content.OfString = param.NewOpt(textOnly(t.Parts))
			}
			if len(t.Calls) > 0 {
				a.ToolCalls, callUnions = callUnions[:len(t.Calls):len(t.Calls)], callUnions[len(t.Calls):]
				for i, tc := range t.Calls {
					f := take(&calls)
					f.ID, f.Function.Name, f.Function.Arguments = ids.Of(ti, i, tc.ID), tc.Name, turns.Arguments(tc)
					a.ToolCalls[i] = sdk.ChatCompletionMessageToolCallUnionParam{OfFunction: f}
				}
			}
			p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfAssistant: a})
		case turns.Results:
			for k, r := range t.Results {
				m := take(&tools)
				m.ToolCallID, m.Content.OfString = ids.Of(ti, k, r.CallID), param.NewOpt(resultText(r))
				p.Messages = append(p.Messages, sdk.ChatCompletionMessageParamUnion{OfTool: m})
			}
		}
	}
	for k, m := range marks {
		chatBreakpoint(&p, ts, first, at[k], m.TTL)
	}
	return p, nil
}

// chatBreakpoint puts an explicit prompt_cache_breakpoint on the content part where the prefix
// m ends: the message's text becomes one text part carrying it (the same text), a parts
// content gets it on its last part. A prefix that ends on tool calls or before any content
// (the tools) has no part to carry it and is left to the implicit breakpoint.
func chatBreakpoint(p *sdk.ChatCompletionNewParams, ts []turns.Turn, first []int, m turns.Mark, ttl time.Duration) {
	if m.Turn < 0 {
		return
	}
	bp := sdk.NewChatCompletionContentPartTextPromptCacheBreakpointParam()
	if ttl > 30*time.Minute {
		bp.Ttl = "12h"
	}
	t, msg := ts[m.Turn], p.Messages[first[m.Turn]]
	switch {
	case t.Kind == turns.Results:
		tm := p.Messages[first[m.Turn]+m.Results-1].OfTool
		tm.Content = sdk.ChatCompletionToolMessageParamContentUnion{OfArrayOfContentParts: []sdk.ChatCompletionContentPartTextParam{{Text: tm.Content.OfString.Value, PromptCacheBreakpoint: bp}}}
	case msg.OfSystem != nil:
		sm := msg.OfSystem
		sm.Content = sdk.ChatCompletionSystemMessageParamContentUnion{OfArrayOfContentParts: []sdk.ChatCompletionContentPartTextParam{{Text: sm.Content.OfString.Value, PromptCacheBreakpoint: bp}}}
	case msg.OfAssistant != nil:
		am := msg.OfAssistant
		if m.Calls > 0 || !am.Content.OfString.Valid() {
			return
		}
		am.Content = sdk.ChatCompletionAssistantMessageParamContentUnion{OfArrayOfContentParts: []sdk.ChatCompletionAssistantMessageParamContentArrayOfContentPartUnion{
			{OfText: &sdk.ChatCompletionContentPartTextParam{Text: am.Content.OfString.Value, PromptCacheBreakpoint: bp}}}}
	case msg.OfUser != nil:
		um := msg.OfUser
		if um.Content.OfString.Valid() {
			um.Content = sdk.ChatCompletionUserMessageParamContentUnion{OfArrayOfContentParts: []sdk.ChatCompletionContentPartUnionParam{
				{OfText: &sdk.ChatCompletionContentPartTextParam{Text: um.Content.OfString.Value, PromptCacheBreakpoint: bp}}}}
			return
		}
		parts := um.Content.OfArrayOfContentParts
		if len(parts) == 0 {
			return
		}
		last := parts[len(parts)-1]
		switch {
		case last.OfText != nil:
			last.OfText.PromptCacheBreakpoint = bp
		case last.OfImageURL != nil:
			ib := sdk.NewChatCompletionContentPartImagePromptCacheBreakpointParam()
			ib.Ttl = bp.Ttl
			last.OfImageURL.PromptCacheBreakpoint = ib
		case last.OfFile != nil:
			fb := sdk.NewChatCompletionContentPartFilePromptCacheBreakpointParam()
			fb.Ttl = bp.Ttl
			last.OfFile.PromptCacheBreakpoint = fb
		}
	}
}

// chatUserContent is a user turn's content: one string when it is all text, otherwise parts
// (text, image_url, file) with notes for parts that are not sent.
func chatUserContent(parts []chat.Part) sdk.ChatCompletionUserMessageParamContentUnion {
	allText := true
	for _, part := range parts {
		if part.Type != chat.PartText && sendable(part) {
			allText = false
			break
		}
	}
	if allText {
		return sdk.ChatCompletionUserMessageParamContentUnion{OfString: param.NewOpt(turns.JoinText(parts, note))}
	}
	out := make([]sdk.ChatCompletionContentPartUnionParam, len(parts))
	for i, part := range parts {
		switch {
		case part.Type == chat.PartText:
			out[i] = sdk.ChatCompletionContentPartUnionParam{OfText: &sdk.ChatCompletionContentPartTextParam{Text: part.Text}}
		case !sendable(part):
			out[i] = sdk.ChatCompletionContentPartUnionParam{OfText: &sdk.ChatCompletionContentPartTextParam{Text: note(part)}}
		case part.Type == chat.PartImage:
			out[i] = sdk.ChatCompletionContentPartUnionParam{OfImageURL: &sdk.ChatCompletionContentPartImageParam{
				ImageURL: sdk.ChatCompletionContentPartImageImageURLParam{URL: dataURL(part)}}}
		default:
			f := &sdk.ChatCompletionContentPartFileParam{File: sdk.ChatCompletionContentPartFileFileParam{FileData: param.NewOpt(dataURL(part))}}
			f.File.Filename = param.NewOpt(filename(part))
			out[i] = sdk.ChatCompletionContentPartUnionParam{OfFile: f}
		}
	}
	return sdk.ChatCompletionUserMessageParamContentUnion{OfArrayOfContentParts: out}
}

// filename is a document's file name for the wire ("document.pdf" when it has none).
func filename(part chat.Part) string {
	if part.Filename != "" {
		return part.Filename
	}
	return "document.pdf"
}

// ChatResponse maps a chat completion to a chat.Response from its first choice: content into
// Message.Text, function tool calls into ToolCalls (chat.ToolCallFromArguments: arguments
// that are not a JSON object are kept and flagged), the refusal into Refusal, finish_reason
// stop → StopEndTurn, tool_calls and function_call → StopToolUse, length → StopMaxTokens,
// content_filter → StopRefusal (also whenever the message carries a refusal; other values
// unchanged), and usage with InputTokens = prompt_tokens (cached ones included).
//
// A c that is not a chat completion is an error wrapping provider.ErrMalformedResponse: nil,
// not a JSON object, without a "choices" array of at least one choice, a first choice without
// a "message" object of "role": "assistant" (absent, null and ill-typed fields alike, as the
// SDK's respjson metadata reports them), a tool call whose type is missing or not "function"
// (a "custom" call answers a tool this adapter never offers), a function tool call without an
// id or a name, or a finish_reason of tool_calls or function_call with no tool call. A null or
// absent finish_reason is accepted (OpenAI itself has sent one in a non-streaming answer) and
// maps to an empty StopReason.
func ChatResponse(c *sdk.ChatCompletion) (*chat.Response, error) {
	resp, err := chatResponse(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", chatAPI, err)
	}
	return resp, nil
}

// chatResponse is ChatResponse with errors that do not name the API (Generate's CallError
// does).
func chatResponse(c *sdk.ChatCompletion) (*chat.Response, error) {
	if err := checkCompletion(c); err != nil {
		return nil, err
	}
	ch := c.Choices[0]
	out := &chat.Response{
		Message:    chat.Message{Role: chat.RoleAssistant, Text: ch.Message.Content},
		Model:      c.Model,
		ResponseID: c.ID,
		Refusal:    ch.Message.Refusal,
	}
	for _, tc := range ch.Message.ToolCalls { // all of type function (checkCompletion)
		out.Message.ToolCalls = append(out.Message.ToolCalls, chat.ToolCallFromArguments(tc.ID, tc.Function.Name, tc.Function.Arguments))
	}
	switch ch.FinishReason {
	case "stop":
		out.StopReason = chat.StopEndTurn
	case "tool_calls", "function_call":
		out.StopReason = chat.StopToolUse
	case "length":
		out.StopReason = chat.StopMaxTokens
	case "content_filter":
		out.StopReason = chat.StopRefusal
	default:
		out.StopReason = chat.StopReason(ch.FinishReason)
	}
	if out.Refusal != "" {
		out.StopReason = chat.StopRefusal
	}
	u := c.Usage
	out.Usage = chat.Usage{
		InputTokens:      u.PromptTokens,
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  u.PromptTokensDetails.CachedTokens,
		CacheWriteTokens: u.PromptTokensDetails.CacheWriteTokens,
	}
	return out, nil
}

// chatAPI prefixes the Chat adapter's errors; chatWhat names the answer it expects.
const (
	chatAPI  = "openai chat"
	chatWhat = "a chat completion"
)

// checkCompletion returns the provider.ErrMalformedResponse error of a c that lacks what every
// chat completion has, or nil.
func checkCompletion(c *sdk.ChatCompletion) error {
	if c == nil {
		return turns.Malformed(chatWhat, "", "no completion")
	}
	bad := func(format string, args ...any) error {
		return turns.Malformed(chatWhat, c.RawJSON(), fmt.Sprintf(format, args...))
	}
	switch {
	case !turns.IsObject(c.RawJSON()):
		return bad("it is not a JSON object")
	case !c.JSON.Choices.Valid():
		return bad(`"choices" is %s, not an array of choices`, turns.Field(c.JSON.Choices.Raw()))
	case len(c.Choices) == 0:
		return bad(`"choices" is empty`)
	case !c.Choices[0].JSON.Message.Valid():
		return bad(`choice 0 has no "message" object`)
	}
	ch := c.Choices[0]
	if role := ch.Message.JSON.Role.Raw(); role != `"assistant"` {
		return bad(`choice 0's message "role" is %s, not "assistant"`, turns.Field(role))
	}
	for i, tc := range ch.Message.ToolCalls {
		switch tc.Type {
		case "function":
			if tc.ID == "" || tc.Function.Name == "" {
				return bad("tool call %d is a function call without an id or a name", i)
			}
		case "custom":
			return bad("tool call %d is a custom tool call: this adapter offers function tools only and cannot return it", i)
		default:
			return bad(`tool call %d has %s, not "function"`, i, turns.TypeOf(tc.JSON.Type.Raw()))
		}
	}
	if (ch.FinishReason == "tool_calls" || ch.FinishReason == "function_call") && len(ch.Message.ToolCalls) == 0 {
		return bad(`"finish_reason" is %q but the message holds no tool call`, ch.FinishReason)
	}
	return nil
}
