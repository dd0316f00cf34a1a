package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
)

// Responses is the Responses API adapter (provider "openai-responses"). It is safe for
// concurrent use.
type Responses struct {
	// MaxRetryWait is the longest wait an answer may ask for (retry-after-ms, Retry-After) that
	// Generate sleeps before the SDK retries; 0 means provider.DefaultMaxRetryWait (60 s), a
	// negative value lets no wait be slept. A longer wait, or one that would outlast ctx's
	// deadline, ends the call at once with a transient *chat.CallError carrying the wait. The
	// adapter passes it to the SDK as option.WithMaxRetryDelay on every call, so that option given
	// to NewResponses has no effect. Set it before the first call.
	MaxRetryWait time.Duration

	client sdk.Client
}

// NewResponses returns a Responses over a client built by sdk.NewClient(opts...): the SDK's
// environment defaults apply first and any SDK option may be passed.
func NewResponses(opts ...option.RequestOption) *Responses {
	return &Responses{client: sdk.NewClient(opts...)}
}

// Generate checks req.Model, converts req (ResponsesParams), sends it with Responses.New and
// maps the answer back (ResponsesResponse).
//
// A refusal before sending is a plain error: the settings' *provider.SettingError, the
// conversion's error (a message list that breaks chat.Validate wraps the *chat.PairingError).
// Every failure of the call itself is a *chat.CallError with Provider "openai-responses",
// classified as the package documentation says: an error status (wrapping the SDK's
// *sdk.Error with the API's code and message, and chat.ErrContextWindow too for code
// context_length_exceeded), no answer (a network error, a timeout; a done ctx keeps matching
// ctx.Err() with errors.Is), a response of status "failed" (its code and message; transient
// for the codes server_error, rate_limit_exceeded and vector_store_timeout), and a 2xx answer
// that is not a response (wrapping provider.ErrMalformedResponse; the error shows the start of
// the body).
func (m *Responses) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := provider.CheckFor(provider.OpenAIResponses, req.Model); err != nil {
		return nil, err
	}
	params, err := ResponsesParams(req)
	if err != nil {
		return nil, err
	}
	var httpResp *http.Response
	rec, opts := start(ctx, provider.OpenAIResponses, responsesWhat, m.MaxRetryWait, &httpResp)
	r, err := m.client.Responses.New(ctx, params, opts...)
	if err != nil {
		return nil, rec.Fail(cause(err))
	}
	if r == nil {
		return nil, rec.Malformed("it decodes to no response")
	}
	resp, err := responsesResponse(r)
	if err != nil {
		return nil, rec.Answered(err, r.Status == responses.ResponseStatusFailed && transientCodes[r.Error.Code])
	}
	if httpResp != nil {
		resp.RequestID = httpResp.Header.Get("x-request-id")
	}
	return resp, nil
}

// transientCodes are the error codes of a failed response that say nothing about the request:
// the same request may succeed later.
var transientCodes = map[responses.ResponseErrorCode]bool{
	responses.ResponseErrorCodeServerError:        true,
	responses.ResponseErrorCodeRateLimitExceeded:  true,
	responses.ResponseErrorCodeVectorStoreTimeout: true,
}

// ResponsesParams converts req to Responses API parameters by the rules of the package
// documentation (store: false, include reasoning.encrypted_content), without checking
// req.Model against the provider's settings table (Generate does). It returns an error for an
// empty model name, a message list that breaks chat.Validate (wrapping the
// *chat.PairingError), and a tool whose input schema is not a JSON object of
// "type": "object".
func ResponsesParams(req *chat.Request) (responses.ResponseNewParams, error) {
	var p responses.ResponseNewParams
	if req.Model.Name == "" {
		return p, errors.New("openai responses: no model name: set model.name in the persona's spec")
	}
	p.Model = req.Model.Name
	p.Store = param.NewOpt(false)
	p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
	if req.Model.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(req.Model.MaxTokens))
	}
	if req.Model.Temperature != nil {
		p.Temperature = param.NewOpt(*req.Model.Temperature)
	}
	if req.Model.TopP != nil {
		p.TopP = param.NewOpt(*req.Model.TopP)
	}
	if len(req.Model.Extra) > 0 {
		p.SetExtraFields(req.Model.Extra)
	}
	if err := req.Cache.Check(len(req.Messages)); err != nil {
		return p, fmt.Errorf("openai responses: %w", err)
	}
	explicit := provider.ExplicitCacheBreakpoints(req.Model.Name)
	if key, extended := cacheFields(req.Cache); key != "" || extended {
		if key != "" {
			p.PromptCacheKey = param.NewOpt(key)
		}
		switch {
		case extended && explicit:
			p.PromptCacheOptions.Ttl = "12h"
		case extended:
			p.PromptCacheRetention = responses.ResponseNewParamsPromptCacheRetention24h
		}
	}
	for _, t := range req.Tools {
		def, err := toolJSON(t, true)
		if err != nil {
			return p, fmt.Errorf("openai responses: %w", err)
		}
		p.Tools = append(p.Tools, responses.ToolUnionParam{OfFunction: ptr(param.Override[responses.FunctionToolParam](def))})
	}
	marks, ends := explicitMarks(req, explicit)
	ts, at, err := turns.NormalizeMarked(make([]turns.Turn, 0, len(req.Messages)), req.Messages, ends)
	if err != nil {
		return p, fmt.Errorf("openai responses: messages: %w", err)
	}
	c := countTurns(ts)
	first := make([]int, len(ts)) // the index in items of each turn's message or first output
	messages := make([]responses.EasyInputMessageParam, 0, c.system+c.user+c.assistant)
	calls := make([]responses.ResponseFunctionToolCallParam, 0, c.calls)
	outputs := make([]responses.ResponseInputItemFunctionCallOutputParam, 0, c.results)
	items := make(responses.ResponseInputParam, 0, len(ts)+c.calls+c.results+c.state)
	message := func(role responses.EasyInputMessageRole, content responses.EasyInputMessageContentUnionParam) {
		m := take(&messages)
		m.Type, m.Role, m.Content = responses.EasyInputMessageTypeMessage, role, content
		items = append(items, responses.ResponseInputItemUnionParam{OfMessage: m})
	}
	ids := turns.CallIDs(ts, turns.MaxResponsesCallID)
	for ti, t := range ts {
		first[ti] = len(items)
		switch t.Kind {
		case turns.System:
			message(responses.EasyInputMessageRoleSystem, responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(textOnly(t.Parts))})
		case turns.User:
			message(responses.EasyInputMessageRoleUser, responsesUserContent(t.Parts))
		case turns.Assistant:
			for _, st := range t.State {
				if data, ok := reasoningItem(st); ok {
					items = append(items, param.Override[responses.ResponseInputItemUnionParam](data))
				}
			}
			if len(t.Parts) > 0 {
				message(responses.EasyInputMessageRoleAssistant, responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(textOnly(t.Parts))})
			}
			for k, tc := range t.Calls {
				f := take(&calls)
				f.CallID, f.Name, f.Arguments = ids.Of(ti, k, tc.ID), tc.Name, turns.Arguments(tc)
				items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCall: f})
			}
		case turns.Results:
			for k, r := range t.Results {
				o := take(&outputs)
				o.CallID, o.Output = param.NewOpt(ids.Of(ti, k, r.CallID)), resultOutput(r)
				items = append(items, responses.ResponseInputItemUnionParam{OfFunctionCallOutput: o})
			}
		}
	}
	for k := range marks {
		responsesBreakpoint(items, ts, first, at[k])
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	return p, nil
}

// responsesBreakpoint puts an explicit prompt_cache_breakpoint on the input part where the
// prefix m ends: a system or user message's text becomes one input_text part carrying it (the
// same text), a parts content gets it on its last text part, a tool result's text output one
// input_text item carrying it. The request's prompt_cache_options set its lifetime. A prefix
// that ends on an assistant turn or before any content is left to the implicit breakpoint.
func responsesBreakpoint(items responses.ResponseInputParam, ts []turns.Turn, first []int, m turns.Mark) {
	if m.Turn < 0 {
		return
	}
	switch t := ts[m.Turn]; t.Kind {
	case turns.System, turns.User:
		msg := items[first[m.Turn]].OfMessage
		if msg == nil {
			return
		}
		if msg.Content.OfString.Valid() {
			text := responses.ResponseInputTextParam{Text: msg.Content.OfString.Value, PromptCacheBreakpoint: responses.NewResponseInputTextPromptCacheBreakpointParam()}
			msg.Content = responses.EasyInputMessageContentUnionParam{OfInputItemContentList: responses.ResponseInputMessageContentListParam{{OfInputText: &text}}}
			return
		}
		list := msg.Content.OfInputItemContentList
		if n := len(list); n > 0 && list[n-1].OfInputText != nil {
			list[n-1].OfInputText.PromptCacheBreakpoint = responses.NewResponseInputTextPromptCacheBreakpointParam()
		}
	case turns.Results:
		o := items[first[m.Turn]+m.Results-1].OfFunctionCallOutput
		if o == nil {
			return
		}
		if o.Output.OfString.Valid() {
			o.Output = responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: responses.ResponseFunctionCallOutputItemListParam{
				{OfInputText: &responses.ResponseInputTextContentParam{Text: o.Output.OfString.Value, PromptCacheBreakpoint: responses.NewResponseInputTextContentPromptCacheBreakpointParam()}}}}
			return
		}
		list := o.Output.OfResponseFunctionCallOutputItemArray
		if n := len(list); n > 0 && list[n-1].OfInputText != nil {
			list[n-1].OfInputText.PromptCacheBreakpoint = responses.NewResponseInputTextContentPromptCacheBreakpointParam()
		}
	}
}

func ptr[T any](v T) *T { return &v }

// reasoningItem returns the state's reasoning item when st is one this adapter produced (a JSON
// object of "type": "reasoning" from provider openai-responses).
func reasoningItem(st chat.ProviderState) (json.RawMessage, bool) {
	if st.Provider != provider.OpenAIResponses || len(st.Data) == 0 || st.Data[0] != '{' {
		return nil, false
	}
	var head struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(st.Data, &head) != nil || head.Type != "reasoning" {
		return nil, false
	}
	return st.Data, true
}

// responsesUserContent is a user turn's content: one string when it is all text, otherwise
// input_text, input_image and input_file parts with notes for parts that are not sent.
func responsesUserContent(parts []chat.Part) responses.EasyInputMessageContentUnionParam {
	allText := true
	for _, part := range parts {
		if part.Type != chat.PartText && sendable(part) {
			allText = false
			break
		}
	}
	if allText {
		return responses.EasyInputMessageContentUnionParam{OfString: param.NewOpt(turns.JoinText(parts, note))}
	}
	out := make(responses.ResponseInputMessageContentListParam, len(parts))
	for i, part := range parts {
		switch {
		case part.Type == chat.PartText:
			out[i] = responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: part.Text}}
		case !sendable(part):
			out[i] = responses.ResponseInputContentUnionParam{OfInputText: &responses.ResponseInputTextParam{Text: note(part)}}
		case part.Type == chat.PartImage:
			out[i] = responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
				Detail: responses.ResponseInputImageDetailAuto, ImageURL: param.NewOpt(dataURL(part))}}
		default:
			out[i] = responses.ResponseInputContentUnionParam{OfInputFile: &responses.ResponseInputFileParam{
				FileData: param.NewOpt(dataURL(part)), Filename: param.NewOpt(filename(part))}}
		}
	}
	return responses.EasyInputMessageContentUnionParam{OfInputItemContentList: out}
}

// resultOutput is a function_call_output's output: one string when the result is all text (or
// holds nothing that is sent), otherwise input_text, input_image and input_file items, the
// first text starting with turns.ErrorResultPrefix when the tool failed.
func resultOutput(r turns.Result) responses.ResponseInputItemFunctionCallOutputOutputUnionParam {
	allText := true
	for _, part := range r.Parts {
		if part.Type != chat.PartText && sendable(part) {
			allText = false
			break
		}
	}
	if allText {
		return responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(resultText(r))}
	}
	out := make(responses.ResponseFunctionCallOutputItemListParam, 0, len(r.Parts)+1)
	if r.IsError {
		out = append(out, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{
			Text: strings.TrimSpace(turns.ErrorResultPrefix)}})
	}
	for _, part := range r.Parts {
		switch {
		case part.Type == chat.PartText:
			out = append(out, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: part.Text}})
		case !sendable(part):
			out = append(out, responses.ResponseFunctionCallOutputItemUnionParam{OfInputText: &responses.ResponseInputTextContentParam{Text: note(part)}})
		case part.Type == chat.PartImage:
			out = append(out, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
				ImageURL: param.NewOpt(dataURL(part)), Detail: responses.ResponseInputImageContentDetailAuto}})
		default:
			out = append(out, responses.ResponseFunctionCallOutputItemUnionParam{OfInputFile: &responses.ResponseInputFileContentParam{
				FileData: param.NewOpt(dataURL(part)), Filename: param.NewOpt(filename(part))}})
		}
	}
	return responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfResponseFunctionCallOutputItemArray: out}
}

// ResponsesResponse maps a Responses API response to a chat.Response: output_text parts of
// message items joined into Message.Text, refusal parts into Refusal (StopRefusal),
// function_call items into ToolCalls (keyed by call_id; arguments that are not a JSON object
// kept and flagged), reasoning items into State (Provider "openai-responses", Data the item
// without its id and status: type, summary, encrypted_content), and the stop reason from the
// status: completed → StopToolUse when there are calls, else StopEndTurn; incomplete with
// reason max_output_tokens → StopMaxTokens, content_filter → StopRefusal (other reasons
// unchanged). Usage has InputTokens = input_tokens (cached ones included). A failed response is
// an error carrying its code and message (wrapping chat.ErrContextWindow for
// context_length_exceeded).
//
// An r that is not a Responses API response is an error wrapping provider.ErrMalformedResponse:
// nil, not a JSON object, or without what the API always sends — "object": "response", an
// "output" array and a "status" (absent, null and ill-typed fields alike, as the SDK's respjson
// metadata reports them) — or with an output item whose type is missing or not one of the
// SDK's ResponseOutputItemUnion, a message content part that is not output_text or refusal, a
// function_call item without a call_id or a name, or an item that asks the client to run a
// tool other than a function (custom_tool_call, computer_call, local_shell_call, shell_call,
// apply_patch_call, mcp_approval_request: this adapter offers none). Items of tools the API
// runs itself (web_search_call, file_search_call, …) are left out.
func ResponsesResponse(r *responses.Response) (*chat.Response, error) {
	resp, err := responsesResponse(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", responsesAPI, err)
	}
	return resp, nil
}

// responsesResponse is ResponsesResponse with errors that do not name the API (Generate's
// CallError does).
func responsesResponse(r *responses.Response) (*chat.Response, error) {
	if err := checkResponse(r); err != nil {
		return nil, err
	}
	if r.Status == responses.ResponseStatusFailed {
		name, detail := failedDetail(r)
		if isContextWindow(string(r.Error.Code), r.Error.Message) {
			return nil, fmt.Errorf("%s failed: %w (%s)", name, chat.ErrContextWindow, detail)
		}
		return nil, fmt.Errorf("%s failed (%s)", name, detail)
	}
	out := &chat.Response{
		Message:    chat.Message{Role: chat.RoleAssistant},
		Model:      r.Model,
		ResponseID: r.ID,
	}
	var text, refusal strings.Builder
	for _, item := range r.Output {
		switch item.Type {
		case "message":
			for _, c := range item.Content {
				switch c.Type {
				case "output_text":
					text.WriteString(c.Text)
				case "refusal":
					refusal.WriteString(c.Refusal)
				}
			}
		case "function_call":
			fc := item.AsFunctionCall()
			out.Message.ToolCalls = append(out.Message.ToolCalls, chat.ToolCallFromArguments(fc.CallID, fc.Name, fc.Arguments))
		case "reasoning":
			out.Message.State = append(out.Message.State, chat.ProviderState{Provider: provider.OpenAIResponses, Data: stripReasoning(item.RawJSON())})
		}
	}
	out.Message.Text, out.Refusal = text.String(), refusal.String()
	switch {
	case out.Refusal != "":
		out.StopReason = chat.StopRefusal
	case r.Status == responses.ResponseStatusIncomplete:
		switch reason := r.IncompleteDetails.Reason; reason {
		case "max_output_tokens":
			out.StopReason = chat.StopMaxTokens
		case "content_filter":
			out.StopReason = chat.StopRefusal
		default:
			out.StopReason = chat.StopReason(reason)
		}
	case len(out.Message.ToolCalls) > 0:
		out.StopReason = chat.StopToolUse
	default:
		out.StopReason = chat.StopEndTurn
	}
	u := r.Usage
	out.Usage = chat.Usage{
		InputTokens:      u.InputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.InputTokensDetails.CachedTokens,
		CacheWriteTokens: u.InputTokensDetails.CacheWriteTokens,
	}
	return out, nil
}

// failedDetail names a failed response ("response <id>", or "response" without an id) and
// says why it failed: "<code>: <message>", either alone when the other is empty, or "no error
// detail".
func failedDetail(r *responses.Response) (name, detail string) {
	name = "response"
	if r.ID != "" {
		name += " " + r.ID
	}
	code, msg := string(r.Error.Code), r.Error.Message
	switch {
	case code == "" && msg == "":
		detail = "no error detail"
	case code == "":
		detail = msg
	case msg == "":
		detail = code
	default:
		detail = code + ": " + msg
	}
	return name, detail
}

// stripReasoning returns a reasoning output item as the input item sent back: type, summary
// and encrypted_content, in that order, without the id (with store: false the API keeps no item
// an id could name), status or plain reasoning content.
func stripReasoning(raw string) json.RawMessage {
	var item struct {
		Summary          json.RawMessage `json:"summary"`
		EncryptedContent *string         `json:"encrypted_content"`
	}
	_ = json.Unmarshal([]byte(raw), &item)
	var b bytes.Buffer
	b.WriteString(`{"type":"reasoning","summary":`)
	if s := bytes.TrimSpace(item.Summary); len(s) == 0 || s[0] != '[' || json.Compact(&b, s) != nil {
		b.WriteString("[]")
	}
	if item.EncryptedContent != nil {
		enc, _ := json.Marshal(*item.EncryptedContent)
		b.WriteString(`,"encrypted_content":`)
		b.Write(enc)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// responsesAPI prefixes the Responses adapter's errors; responsesWhat names the answer it
// expects.
const (
	responsesAPI  = "openai responses"
	responsesWhat = "a Responses API response"
)

// checkResponse returns the provider.ErrMalformedResponse error of an r that lacks what every
// Responses API response has, or nil.
func checkResponse(r *responses.Response) error {
	if r == nil {
		return turns.Malformed(responsesWhat, "", "no response")
	}
	bad := func(format string, args ...any) error {
		return turns.Malformed(responsesWhat, r.RawJSON(), fmt.Sprintf(format, args...))
	}
	j := r.JSON
	switch {
	case !turns.IsObject(r.RawJSON()):
		return bad("it is not a JSON object")
	case j.Object.Raw() != `"response"`:
		return bad(`"object" is %s, not "response"`, turns.Field(j.Object.Raw()))
	case !j.Output.Valid():
		return bad(`"output" is %s, not an array of output items`, turns.Field(j.Output.Raw()))
	case !j.Status.Valid():
		return bad(`"status" is %s, not a status`, turns.Field(j.Status.Raw()))
	}
	usable, unknown := false, ""
	for i, item := range r.Output {
		switch t := item.Type; {
		case t == "function_call":
			if item.CallID == "" || item.Name == "" {
				return bad("output item %d is a function_call without a call_id or a name", i)
			}
			usable = true
		case t == "message":
			usable = true
			for k, c := range item.Content {
				if c.Type != "output_text" && c.Type != "refusal" {
					return bad(`output item %d (a message) has content part %d of %s, not "output_text" or "refusal"`, i, k, turns.TypeOf(c.JSON.Type.Raw()))
				}
			}
		case t == "reasoning" || serverItems[t]:
		case clientItems[t]:
			return bad("output item %d is a %s item: a call of a tool this adapter never offers, which it cannot return as a tool call", i, t)
		case t == "" || !strings.HasPrefix(item.JSON.Type.Raw(), `"`):
			return bad("output item %d has %s, not an output item type of the Responses API", i, turns.TypeOf(item.JSON.Type.Raw()))
		default:
			// A type newer than this SDK: left out, like a server item, as long as the answer
			// holds a message or a call.
			if unknown == "" {
				unknown = t
			}
		}
	}
	if unknown != "" && !usable {
		return bad("the output holds no message and no function call, only items of types this adapter does not know (first %q)", unknown)
	}
	return nil
}

// serverItems are the output item types of the SDK's ResponseOutputItemUnion that need nothing
// of the client: tools the API runs itself, their outputs, and items that echo input.
// ResponsesResponse leaves them out.
var serverItems = map[string]bool{
	"file_search_call":        true,
	"web_search_call":         true,
	"image_generation_call":   true,
	"code_interpreter_call":   true,
	"mcp_call":                true,
	"mcp_list_tools":          true,
	"tool_search_call":        true,
	"tool_search_output":      true,
	"additional_tools":        true,
	"compaction":              true,
	"program":                 true,
	"program_output":          true,
	"function_call_output":    true,
	"computer_call_output":    true,
	"local_shell_call_output": true,
	"shell_call_output":       true,
	"apply_patch_call_output": true,
	"custom_tool_call_output": true,
	"mcp_approval_response":   true,
}

// clientItems are the output item types of the SDK's ResponseOutputItemUnion that ask the
// client to act — run a tool other than a function, or approve an MCP call. This adapter offers
// function tools only, so such an item answers a request it never made, and dropping it would
// turn a call into an empty answer.
var clientItems = map[string]bool{
	"custom_tool_call":     true,
	"computer_call":        true,
	"local_shell_call":     true,
	"shell_call":           true,
	"apply_patch_call":     true,
	"mcp_approval_request": true,
}
