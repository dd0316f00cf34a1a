package anthropic

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/personagen/personagen/runtime/chat"
	"github.com/personagen/personagen/runtime/provider"
	"github.com/personagen/personagen/runtime/provider/internal/turns"
	"github.com/personagen/personagen/runtime/provider/internal/watch"
)

// DefaultMaxTokens is the max_tokens sent when the persona's settings leave MaxTokens at 0:
// the Messages API requires the field.
const DefaultMaxTokens = 4096

// Model is the Anthropic adapter. It is safe for concurrent use.
type Model struct {
	// MaxRetryWait is the longest wait an answer may ask for (retry-after-ms, Retry-After) that
	// Generate sleeps before the SDK retries; 0 means provider.DefaultMaxRetryWait (60 s), a
	// negative value lets no wait be slept. A longer wait, or one that would outlast ctx's
	// deadline, ends the call at once with a transient *chat.CallError carrying the wait. Set it
	// before the first call.
	MaxRetryWait time.Duration

	client sdk.Client
}

// New returns a Model over a client built by sdk.NewClient(opts...): the SDK's environment
// defaults apply unless opts include option.WithoutEnvironmentDefaults(), and any SDK option
// (a base URL, an HTTP client, retries, timeouts, headers) may be passed.
//
// The SDK's own OpenTelemetry span of each call ("anthropic.messages.create") is off, since the
// runner (runtime/agent) emits the GenAI convention's chat span of every model call, of every
// provider, and a call must not have two. A host that prefers the SDK's span passes
// option.WithOpenTelemetryTraces(true) and sets agent.Runner.NoChatSpans.
func New(opts ...option.RequestOption) *Model {
	return &Model{client: sdk.NewClient(append([]option.RequestOption{option.WithoutOpenTelemetry()}, opts...)...)}
}

// Generate checks req.Model, converts req (Params), sends it with Messages.New and maps the
// answer back (see Response).
//
// A refusal before sending is a plain error: the settings' *provider.SettingError, the
// conversion's error (a message list that breaks chat.Validate wraps the *chat.PairingError).
// Every failure of the call itself is a *chat.CallError with Provider "anthropic", classified
// as the package documentation says: an error status (wrapping the SDK's *sdk.Error, and
// chat.ErrContextWindow too when the API refused the prompt as too long), no answer (a network
// error, a timeout; a done ctx keeps matching ctx.Err() with errors.Is), and a 2xx answer that
// is not a message (wrapping provider.ErrMalformedResponse; the error shows the start of the
// body).
func (m *Model) Generate(ctx context.Context, req *chat.Request) (*chat.Response, error) {
	if err := provider.CheckFor(provider.Anthropic, req.Model); err != nil {
		return nil, err
	}
	params, err := Params(req)
	if err != nil {
		return nil, err
	}
	var httpResp *http.Response
	rec := watch.Start(ctx, provider.Anthropic, messageWhat, watch.MaxWait(m.MaxRetryWait))
	msg, err := m.client.Messages.New(ctx, params, option.WithResponseInto(&httpResp), option.WithMiddleware(rec.Middleware))
	if err != nil {
		return nil, rec.Fail(cause(err))
	}
	if msg == nil {
		return nil, rec.Malformed("it decodes to no message")
	}
	resp, err := response(msg)
	if err != nil {
		return nil, rec.Answered(err, false)
	}
	if httpResp != nil {
		resp.RequestID = httpResp.Header.Get("request-id")
	}
	return resp, nil
}

// cause marks a prompt the API refused as too long with chat.ErrContextWindow, keeping the SDK
// error for errors.As.
func cause(err error) error {
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusBadRequest {
		msg := strings.ToLower(apiErr.Message)
		if strings.Contains(msg, "prompt is too long") || strings.Contains(msg, "context limit") ||
			strings.Contains(msg, "context window") {
			return fmt.Errorf("%w: %w", chat.ErrContextWindow, err)
		}
	}
	return err
}

// Params converts req to the SDK's request parameters by the rules of the package
// documentation, without checking req.Model against the provider's settings table (Generate
// does). It returns an error for an empty model name, a message list that breaks
// chat.Validate (wrapping the *chat.PairingError), and a tool whose input schema is not a
// JSON object of "type": "object".
func Params(req *chat.Request) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	if req.Model.Name == "" {
		return p, errors.New("anthropic: no model name: set model.name in the persona's spec")
	}
	p.Model = sdk.Model(req.Model.Name)
	p.MaxTokens = int64(req.Model.MaxTokens)
	if p.MaxTokens == 0 {
		p.MaxTokens = DefaultMaxTokens
	}
	p.StopSequences = req.Model.Stop
	if len(req.Model.Extra) > 0 {
		p.SetExtraFields(req.Model.Extra)
	}
	for _, t := range req.Tools {
		schema, err := turns.Schema(t)
		if err != nil {
			return p, fmt.Errorf("anthropic: %w", err)
		}
		tp := &sdk.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[sdk.ToolInputSchemaParam](schema),
		}
		if d := t.Description; d != "" {
			tp.Description = param.NewOpt(d)
		}
		p.Tools = append(p.Tools, sdk.ToolUnionParam{OfTool: tp})
	}
	if err := req.Cache.Check(len(req.Messages)); err != nil {
		return p, fmt.Errorf("anthropic: %w", err)
	}
	marks := req.Cache.Marks(len(req.Messages))
	ends := make([]int, len(marks))
	for k, m := range marks {
		ends[k] = m.End
	}
	ts, at, err := turns.NormalizeMarked(make([]turns.Turn, 0, len(req.Messages)), req.Messages, ends)
	if err != nil {
		return p, fmt.Errorf("anthropic: messages: %w", err)
	}
	a := newArena(ts)
	a.ids = turns.CallIDs(ts, turns.MaxAnthropicCallID)
	// where[ti] is where turn ti went on the wire: a block offset in p.System (msg -1) or a
	// message of p.Messages and the offset of the turn's first block in it.
	where := make([]wirePlace, len(ts))
	i := 0
	for ; i < len(ts) && ts[i].Kind == turns.System; i++ {
		where[i] = wirePlace{msg: -1, offset: len(p.System)}
		p.System = appendSystem(p.System, ts[i].Parts)
	}
	p.Messages = make([]sdk.MessageParam, 0, len(ts)-i)
	var resultsMsg *sdk.UserMessageParam // the user message holding the last round's results
	for ti := i; ti < len(ts); ti++ {
		t := ts[ti]
		where[ti] = wirePlace{msg: len(p.Messages)}
		switch t.Kind {
		case turns.System:
			p.Messages = append(p.Messages, sdk.MessageParam{OfSystem: &sdk.SystemMessageParam{Content: appendSystem(nil, t.Parts)}})
			resultsMsg = nil
		case turns.User:
			if resultsMsg != nil {
				where[ti] = wirePlace{msg: len(p.Messages) - 1, offset: len(resultsMsg.Content)}
				for _, part := range t.Parts {
					resultsMsg.Content = append(resultsMsg.Content, a.contentBlock(part))
				}
				resultsMsg = nil
				continue
			}
			u := take(&a.users)
			u.Content = a.blocksFor(len(t.Parts))
			for _, part := range t.Parts {
				u.Content = append(u.Content, a.contentBlock(part))
			}
			p.Messages = append(p.Messages, sdk.MessageParam{OfUser: u})
		case turns.Assistant:
			m := take(&a.assistants)
			m.Content = a.assistantContent(ti, t)
			where[ti].offset = len(m.Content) - len(t.Parts) - len(t.Calls) // the state blocks sent
			p.Messages = append(p.Messages, sdk.MessageParam{OfAssistant: m})
			resultsMsg = nil
		case turns.Results:
			u := take(&a.users)
			u.Content = a.resultBlocks(ti, t.Results)
			p.Messages = append(p.Messages, sdk.MessageParam{OfUser: u})
			resultsMsg = u
		}
	}
	for k, m := range marks {
		cc := sdk.NewCacheControlEphemeralParam()
		if m.TTL > 5*time.Minute {
			cc.TTL = sdk.CacheControlEphemeralTTLTTL1h
		}
		if m.Scope == chat.CacheRun && m.End == len(req.Messages) {
			p.CacheControl = cc // the top-level marker: the last cacheable block
			continue
		}
		if target := markTarget(&p, ts, where, at[k]); target != nil {
			*target = cc
		}
	}
	return p, nil
}

// wirePlace is where a normalised turn went in the request parameters: msg -1 for the
// top-level system blocks (offset: the turn's first block there), else the index of its
// message in MessageNewParams.Messages and the offset of its first content block there.
type wirePlace struct{ msg, offset int }

// markTarget returns the cache_control field of the block at which the prefix m ends: the last
// tool for a prefix without content (nil without tools), else the block of the turn's last
// element (a call, a result, a part).
func markTarget(p *sdk.MessageNewParams, ts []turns.Turn, where []wirePlace, m turns.Mark) *sdk.CacheControlEphemeralParam {
	if m.Turn < 0 {
		if len(p.Tools) == 0 {
			return nil
		}
		return p.Tools[len(p.Tools)-1].GetCacheControl()
	}
	t, w := ts[m.Turn], where[m.Turn]
	if w.msg < 0 {
		return &p.System[w.offset+m.Parts-1].CacheControl
	}
	msg := p.Messages[w.msg]
	switch {
	case msg.OfSystem != nil:
		return &msg.OfSystem.Content[w.offset+m.Parts-1].CacheControl
	case msg.OfAssistant != nil:
		k := w.offset + m.Parts - 1
		if m.Calls > 0 {
			k = w.offset + len(t.Parts) + m.Calls - 1
		}
		return msg.OfAssistant.Content[k].GetCacheControl()
	case t.Kind == turns.Results:
		return msg.OfUser.Content[w.offset+m.Results-1].GetCacheControl()
	}
	return msg.OfUser.Content[w.offset+m.Parts-1].GetCacheControl()
}

// arena holds the parameter structs of one request in a few arrays, sized from the turns, so
// that a request of hundreds of blocks costs a handful of allocations instead of one per block.
// Every slice handed out is a capped window of its array: no append can reach a neighbour.
type arena struct {
	blocks     []sdk.ContentBlockParamUnion
	texts      []sdk.TextBlockParam
	uses       []sdk.ToolUseBlockParam
	inputs     []json.RawMessage
	results    []sdk.ToolResultBlockParam
	resultPart []sdk.ToolResultBlockParamContentUnion
	users      []sdk.UserMessageParam
	assistants []sdk.AssistantMessageParam
	ids        turns.IDs // the tool_use ids sent (turns.CallIDs)
}

func newArena(ts []turns.Turn) *arena {
	var parts, calls, state, results, resultParts, users, assistants int
	for _, t := range ts {
		parts += len(t.Parts)
		calls += len(t.Calls)
		state += len(t.State)
		results += len(t.Results)
		for _, r := range t.Results {
			resultParts += len(r.Parts)
		}
		switch t.Kind {
		case turns.User, turns.Results:
			users++
		case turns.Assistant:
			assistants++
		}
	}
	return &arena{
		blocks:     make([]sdk.ContentBlockParamUnion, 0, parts+calls+state+results),
		texts:      make([]sdk.TextBlockParam, 0, parts+resultParts),
		uses:       make([]sdk.ToolUseBlockParam, 0, calls),
		inputs:     make([]json.RawMessage, 0, calls),
		results:    make([]sdk.ToolResultBlockParam, 0, results),
		resultPart: make([]sdk.ToolResultBlockParamContentUnion, 0, resultParts),
		users:      make([]sdk.UserMessageParam, 0, users),
		assistants: make([]sdk.AssistantMessageParam, 0, assistants),
	}
}

// take returns a pointer to the next free element of *a, or a new one when it is full.
func take[T any](a *[]T) *T {
	if len(*a) == cap(*a) {
		return new(T)
	}
	*a = (*a)[:len(*a)+1]
	return &(*a)[len(*a)-1]
}

// window returns an empty slice of capacity n taken from *a (a new one when *a has no room).
func window[T any](a *[]T, n int) []T {
	if cap(*a)-len(*a) < n {
		return make([]T, 0, n)
	}
	start := len(*a)
	*a = (*a)[:start+n]
	return (*a)[start : start : start+n]
}

func (a *arena) blocksFor(n int) []sdk.ContentBlockParamUnion { return window(&a.blocks, n) }

func (a *arena) text(s string) *sdk.TextBlockParam {
	t := take(&a.texts)
	t.Text = s
	return t
}

// appendSystem appends a system turn's parts as text blocks; a non-text part becomes a note.
func appendSystem(dst []sdk.TextBlockParam, parts []chat.Part) []sdk.TextBlockParam {
	for _, part := range parts {
		text := part.Text
		if part.Type != chat.PartText {
			text = turns.PartNote(part, "a system prompt carries text only")
		}
		dst = append(dst, sdk.TextBlockParam{Text: text})
	}
	return dst
}

// contentBlock maps one part of a user turn: text, images and documents the API accepts, notes
// for the rest.
func (a *arena) contentBlock(part chat.Part) sdk.ContentBlockParamUnion {
	switch part.Type {
	case chat.PartText:
		return sdk.ContentBlockParamUnion{OfText: a.text(part.Text)}
	case chat.PartImage:
		if imageTypes[part.MediaType] && len(part.Data) > 0 {
			return sdk.NewImageBlockBase64(part.MediaType, base64.StdEncoding.EncodeToString(part.Data))
		}
		return sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: turns.PartNote(part, imageWhy)}}
	default:
		if d, ok := document(part); ok {
			return sdk.ContentBlockParamUnion{OfDocument: d}
		}
		return sdk.ContentBlockParamUnion{OfText: &sdk.TextBlockParam{Text: turns.PartNote(part, documentWhy)}}
	}
}

// imageTypes are the image media types the Messages API accepts.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

const (
	imageWhy    = "the Anthropic Messages API takes JPEG, PNG, GIF and WebP images with data"
	documentWhy = "the Anthropic Messages API takes PDF and plain-text documents with data"
)

// document returns the document block of a PDF or plain-text part (a plain-text document whose
// bytes are not valid UTF-8 is not one).
func document(part chat.Part) (*sdk.DocumentBlockParam, bool) {
	if len(part.Data) == 0 {
		return nil, false
	}
	d := &sdk.DocumentBlockParam{}
	switch mediaType(part.MediaType) {
	case "application/pdf":
		d.Source.OfBase64 = &sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(part.Data)}
	case "text/plain":
		text := string(part.Data)
		if !utf8.ValidString(text) || turns.Blank(text) {
			return nil, false
		}
		d.Source.OfText = &sdk.PlainTextSourceParam{Data: text}
	default:
		return nil, false
	}
	if part.Filename != "" {
		d.Title = param.NewOpt(part.Filename)
	}
	return d, true
}

// mediaType returns the media type without parameters ("text/plain; charset=utf-8" →
// "text/plain"), lower-cased.
func mediaType(mt string) string {
	if i := strings.IndexByte(mt, ';'); i >= 0 {
		mt = mt[:i]
	}
	return strings.ToLower(strings.TrimSpace(mt))
}

// assistantContent is the content of assistant turn ti: its anthropic state blocks, then its
// text (a non-text part becomes a note), then its tool_use blocks.
func (a *arena) assistantContent(ti int, t turns.Turn) []sdk.ContentBlockParamUnion {
	out := a.blocksFor(len(t.State) + len(t.Parts) + len(t.Calls))
	for _, st := range t.State {
		if st.Provider == provider.Anthropic && isThinking(st.Data) {
			out = append(out, param.Override[sdk.ContentBlockParamUnion](st.Data))
		}
	}
	for _, part := range t.Parts {
		text := part.Text
		if part.Type != chat.PartText {
			text = turns.PartNote(part, "an assistant turn carries text only")
		}
		out = append(out, sdk.ContentBlockParamUnion{OfText: a.text(text)})
	}
	for k, c := range t.Calls {
		in := take(&a.inputs)
		*in = turns.Input(c)
		u := take(&a.uses)
		u.ID, u.Name, u.Input = a.ids.Of(ti, k, c.ID), c.Name, in // a pointer in the interface: no allocation
		out = append(out, sdk.ContentBlockParamUnion{OfToolUse: u})
	}
	return out
}

// isThinking reports whether data is a thinking or redacted_thinking block (a JSON object of
// that "type"): the only state this adapter produces and sends back.
func isThinking(data json.RawMessage) bool {
	var head struct {
		Type string `json:"type"`
	}
	if len(data) == 0 || data[0] != '{' || json.Unmarshal(data, &head) != nil {
		return false
	}
	return head.Type == "thinking" || head.Type == "redacted_thinking"
}

// resultBlocks maps the results of turn ti to tool_result blocks, in order.
func (a *arena) resultBlocks(ti int, rs []turns.Result) []sdk.ContentBlockParamUnion {
	out := a.blocksFor(len(rs))
	for k, r := range rs {
		b := take(&a.results)
		b.ToolUseID = a.ids.Of(ti, k, r.CallID)
		b.Content = window(&a.resultPart, len(r.Parts))
		if r.IsError {
			b.IsError = param.NewOpt(true)
		}
		for _, part := range r.Parts {
			b.Content = append(b.Content, a.resultContent(part))
		}
		out = append(out, sdk.ContentBlockParamUnion{OfToolResult: b})
	}
	return out
}

// resultContent maps one part of a tool result: text, images and documents the API accepts,
// notes for the rest.
func (a *arena) resultContent(part chat.Part) sdk.ToolResultBlockParamContentUnion {
	switch part.Type {
	case chat.PartText:
		return sdk.ToolResultBlockParamContentUnion{OfText: a.text(part.Text)}
	case chat.PartImage:
		if imageTypes[part.MediaType] && len(part.Data) > 0 {
			return sdk.ToolResultBlockParamContentUnion{OfImage: &sdk.ImageBlockParam{Source: sdk.ImageBlockParamSourceUnion{
				OfBase64: &sdk.Base64ImageSourceParam{Data: base64.StdEncoding.EncodeToString(part.Data), MediaType: sdk.Base64ImageSourceMediaType(part.MediaType)}}}}
		}
		return sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: turns.PartNote(part, imageWhy)}}
	default:
		if d, ok := document(part); ok {
			return sdk.ToolResultBlockParamContentUnion{OfDocument: d}
		}
		return sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: turns.PartNote(part, documentWhy)}}
	}
}

// Response maps an SDK message to a chat.Response: text blocks joined into Message.Text,
// tool_use blocks into ToolCalls (an input that is not a JSON object kept under
// "_invalid_arguments", see chat.ToolCall.InvalidArguments), thinking and redacted_thinking blocks into State (Provider
// "anthropic", Data the block's JSON as received), the stop reason mapped to runtime's
// constants (model_context_window_exceeded → StopContextWindow; unknown values unchanged), the
// refusal explanation into Refusal, and usage with InputTokens counting cached tokens too
// (input_tokens + cache_read_input_tokens + cache_creation_input_tokens). Blocks of server
// tools and container uploads (which the API acts on itself, and this adapter never asks for)
// are left out. RequestID is left empty (Generate fills it from the HTTP response).
//
// A msg that is not a Messages API message is an error wrapping provider.ErrMalformedResponse:
// nil, or without what the API always sends — "type": "message", "role": "assistant", a
// "content" array and a non-null "stop_reason" (absent, null and ill-typed fields alike, as
// the SDK's respjson metadata reports them) — or with a content block whose type is missing or
// not one of the SDK's ContentBlockUnion, a tool_use block without an id or a name, or a
// "stop_reason" of "tool_use" with no tool_use block.
func Response(msg *sdk.Message) (*chat.Response, error) {
	resp, err := response(msg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", provider.Anthropic, err)
	}
	return resp, nil
}

// response is Response with errors that do not name the API (Generate's CallError does).
func response(msg *sdk.Message) (*chat.Response, error) {
	if err := checkMessage(msg); err != nil {
		return nil, err
	}
	out := &chat.Response{
		Message:    chat.Message{Role: chat.RoleAssistant},
		Model:      string(msg.Model),
		ResponseID: msg.ID,
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			out.Message.ToolCalls = append(out.Message.ToolCalls, chat.ToolCallFromArguments(b.ID, b.Name, string(b.Input)))
		case "thinking", "redacted_thinking":
			out.Message.State = append(out.Message.State, chat.ProviderState{Provider: provider.Anthropic, Data: compact(b.RawJSON())})
		}
	}
	out.Message.Text = text.String()
	switch msg.StopReason {
	case sdk.StopReasonEndTurn:
		out.StopReason = chat.StopEndTurn
	case sdk.StopReasonToolUse:
		out.StopReason = chat.StopToolUse
	case sdk.StopReasonMaxTokens:
		out.StopReason = chat.StopMaxTokens
	case sdk.StopReasonStopSequence:
		out.StopReason = chat.StopSequence
	case sdk.StopReasonPauseTurn:
		out.StopReason = chat.StopPause
	case sdk.StopReasonRefusal:
		out.StopReason = chat.StopRefusal
		out.Refusal = msg.StopDetails.Explanation
	case sdk.StopReasonModelContextWindowExceeded:
		out.StopReason = chat.StopContextWindow
	default:
		out.StopReason = chat.StopReason(msg.StopReason)
	}
	u := msg.Usage
	out.Usage = chat.Usage{
		InputTokens:      u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  u.CacheReadInputTokens,
		CacheWriteTokens: u.CacheCreationInputTokens,
	}
	return out, nil
}

// messageWhat names the answer this adapter expects.
const messageWhat = "a Messages API message"

// checkMessage returns the provider.ErrMalformedResponse error of a msg that lacks what every
// Messages API message has, or nil.
func checkMessage(msg *sdk.Message) error {
	if msg == nil {
		return turns.Malformed(messageWhat, "", "no message")
	}
	bad := func(format string, args ...any) error {
		return turns.Malformed(messageWhat, msg.RawJSON(), fmt.Sprintf(format, args...))
	}
	j := msg.JSON
	switch {
	case !turns.IsObject(msg.RawJSON()):
		return bad("it is not a JSON object")
	case j.Type.Raw() != `"message"`:
		return bad(`"type" is %s, not "message"`, turns.Field(j.Type.Raw()))
	case j.Role.Raw() != `"assistant"`:
		return bad(`"role" is %s, not "assistant"`, turns.Field(j.Role.Raw()))
	case !j.Content.Valid():
		return bad(`"content" is %s, not an array of content blocks`, turns.Field(j.Content.Raw()))
	case !j.StopReason.Valid():
		return bad(`"stop_reason" is %s, not a stop reason`, turns.Field(j.StopReason.Raw()))
	}
	calls, texts, unknown := 0, 0, ""
	for i, b := range msg.Content {
		switch {
		case b.Type == "tool_use":
			if b.ID == "" || b.Name == "" {
				return bad("content block %d is a tool_use block without an id or a name", i)
			}
			calls++
		case b.Type == "text":
			texts++
		case b.Type == "thinking" || b.Type == "redacted_thinking" || serverBlocks[b.Type]:
		case b.Type == "" || !strings.HasPrefix(b.JSON.Type.Raw(), `"`):
			return bad("content block %d has %s, not a content block type of the Messages API", i, turns.TypeOf(b.JSON.Type.Raw()))
		default:
			// A type newer than this SDK: left out, like a server block, as long as the answer
			// holds something else to return.
			if unknown == "" {
				unknown = b.Type
			}
		}
	}
	if msg.StopReason == sdk.StopReasonToolUse && calls == 0 {
		return bad(`"stop_reason" is "tool_use" but the content holds no tool_use block`)
	}
	if unknown != "" && calls == 0 && texts == 0 {
		return bad("the content holds no text and no tool call, only blocks of types this adapter does not know (first %q)", unknown)
	}
	return nil
}

// serverBlocks are the content block types of the SDK's ContentBlockUnion that the API itself
// produces and acts on (server tools and their results, container uploads): the client has
// nothing to run or send back for them, so Response leaves them out. A block of any other type
// than these, text, thinking, redacted_thinking and tool_use is of a type newer than this SDK:
// it is left out too, unless it leaves the answer with no text and no tool call (then the
// answer is malformed).
var serverBlocks = map[string]bool{
	"server_tool_use":                        true,
	"web_search_tool_result":                 true,
	"web_fetch_tool_result":                  true,
	"code_execution_tool_result":             true,
	"bash_code_execution_tool_result":        true,
	"text_editor_code_execution_tool_result": true,
	"tool_search_tool_result":                true,
	"container_upload":                       true,
}

// compact returns raw compacted (raw itself when it is not valid JSON, which the SDK never
// hands out for a decoded block).
func compact(raw string) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(raw)); err != nil {
		return json.RawMessage(raw)
	}
	return b.Bytes()
}
